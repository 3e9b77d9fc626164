"""The provisioning driver interface: what every way of running a rental implements.

A driver turns the rental clock's decisions into actions on machines. It receives plain
frozen dataclasses (never model instances), so it cannot touch the database, and it is
always called outside any transaction and without a row lock, from the task queue, which
retries it. Every method must be idempotent: calling it twice with the same rental has
the effect of calling it once.

- `prepare(rental)`   set up the allocated GPUs with the preparation (python, pytorch,
                      notebook, inference) and the customer's SSH keys.
- `deliver(rental)`   return the access to hand to the customer, or None when a person
                      delivers it (the manual driver: an operator fills the desk's form).
- `extend(rental, until)` keep the rental running until `until` (a later ends_at).
- `release(rental)`   stop everything of the rental, remove its keys, wipe its data.
- `inspect(node)`     report a node's health.

A driver raises `DriverError` when a step failed; `retryable=False` means retrying will
not help (bad node configuration), so the rental goes to `provisioning_failed` at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class NodeRef:
    """A node as a driver sees it."""

    name: str
    host: str
    port: int
    admin_user: str
    driver: str
    gpu_count: int
    # For automated drivers (ssh): the pinned host key ("ssh-ed25519 AAAA…", empty until an
    # operator accepts one) and the node's options (agent_dir, retention_hours, recipes,
    # torch_index_url, inference_model).
    host_key: str = ""
    options: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class NodeAllocation:
    """The slots (GPU indexes) a rental holds on one node."""

    node: NodeRef
    slots: tuple[int, ...]


@dataclass(frozen=True)
class RentalSpec:
    """Everything a driver needs to know about one rental (an order once settled)."""

    reference: str
    offer: str
    gpu_model: str
    backend: str  # "cuda" | "rocm"
    units: int
    gpus: int
    gpus_per_unit: int
    preparation: str  # "python" | "pytorch" | "notebook" | "inference"
    days: int
    ssh_public_keys: tuple[str, ...]
    allocation: tuple[NodeAllocation, ...]
    starts_at: datetime | None = None
    ends_at: datetime | None = None

    @property
    def user(self) -> str:
        """The login created for this rental on its nodes: one per order, never shared."""
        return "kd-" + self.reference.lower().replace("kd-", "").replace("-", "")


@dataclass(frozen=True)
class Access:
    """What the customer receives: where to log in, and for notebook/inference, the URL.

    `token` is a secret (notebook token, inference API key): it is encrypted before it is
    stored and never written to logs, audit rows or e-mails.
    """

    host: str
    port: int
    user: str
    url: str = ""
    token: str = field(default="", repr=False)
    socket: str = ""  # the Unix socket on the node the service listens on (tunnel there)


@dataclass(frozen=True)
class StepResult:
    """The outcome of prepare/extend/release: done, or waiting for a person (manual)."""

    done: bool
    detail: str = ""


@dataclass(frozen=True)
class NodeHealth:
    """A node's health report, stored on the node as JSON."""

    ok: bool
    detail: str = ""
    gpus_seen: int | None = None
    data: dict = field(default_factory=dict)


class DriverError(Exception):
    """A driver step failed. `retryable` says whether the task queue should try again."""

    def __init__(self, message: str, *, retryable: bool = True):
        super().__init__(message)
        self.message = message
        self.retryable = retryable


@runtime_checkable
class ProvisioningDriver(Protocol):
    code: str

    def prepare(self, rental: RentalSpec) -> StepResult: ...

    def deliver(self, rental: RentalSpec) -> Access | None: ...

    def extend(self, rental: RentalSpec, until: datetime) -> StepResult: ...

    def release(self, rental: RentalSpec) -> StepResult: ...

    def inspect(self, node: NodeRef) -> NodeHealth: ...
