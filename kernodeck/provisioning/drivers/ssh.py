"""The `ssh` driver: provisions rentals by running the host agent on nodes over SSH.

Every step opens one SSH connection to each node of the rental (paramiko), checks the
node's host key against the pinned one before authenticating, makes sure the node runs
this release's agent (compared by SHA-256, copied when it differs), and runs one agent
subcommand with a JSON request on standard input. The agent's steps are idempotent, so the
task queue may retry any step: a repeated `create` converges on one account and one key set,
a repeated `prepare` answers the same token.

The driver never touches the database; it is called outside transactions and row locks.
Network trouble raises a retryable `DriverError`; an agent's refusal, a host key that is not
accepted yet or that changed raise a final one with the agent's (or the pin's) message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
import socket
from datetime import datetime

import paramiko
from django.conf import settings
from django.db import transaction

from kernodeck.provisioning import agent as agent_package
from kernodeck.provisioning.drivers.answers import MalformedAnswer, check_answer
from kernodeck.provisioning.drivers.base import (
    Access,
    DriverError,
    NodeHealth,
    NodeRef,
    RentalSpec,
    StepResult,
)

logger = logging.getLogger(__name__)

AGENT_NAME = agent_package.ARCHIVE_NAME  # the agent package as one zipapp file
DEFAULT_AGENT_DIR = "/var/lib/kernodeck"
MAX_ANSWER_BYTES = 1_000_000


class HostKeyNotAccepted(DriverError):
    """The node offered a host key that no operator has accepted yet."""

    def __init__(self, node: str, offered: str):
        super().__init__(
            f"The SSH host key of {node} has not been accepted yet: accept its fingerprint "
            f"{fingerprint(offered)} in the back-office.",
            retryable=False,
        )
        self.node = node
        self.offered = offered


class HostKeyChanged(DriverError):
    """The node's host key differs from the pinned one: nothing is sent to it."""

    def __init__(self, node: str, pinned: str, offered: str):
        super().__init__(
            f"The SSH host key of {node} changed (pinned {fingerprint(pinned)}, offered "
            f"{fingerprint(offered)}); every operation on it is stopped until an operator "
            "checks the machine and accepts the new key.",
            retryable=False,
        )
        self.node = node
        self.pinned = pinned
        self.offered = offered


def fingerprint(public_key: str) -> str:
    """The `SHA256:…` fingerprint `ssh-keygen -l` prints for an `ssh-… AAAA…` key line."""
    import base64

    try:
        blob = base64.b64decode(public_key.split()[1], validate=True)
    except (IndexError, ValueError):
        return "(malformed key)"
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def agent_source() -> bytes:
    """The agent zipapp, built deterministically from the package (same source, same hash)."""
    return agent_package.zipapp_bytes()


def agent_sha256() -> str:
    return hashlib.sha256(agent_source()).hexdigest()


def load_operator_key() -> paramiko.PKey:
    """The operator's private key, from the file named by KERNODECK_SSH_KEY_FILE."""
    path = settings.KERNODECK_SSH_KEY_FILE
    if not path:
        raise DriverError(
            "KERNODECK_SSH_KEY_FILE is not set: the ssh driver has no key to log in with.",
            retryable=False,
        )
    try:
        return paramiko.PKey.from_path(path)
    except (OSError, paramiko.SSHException, ValueError) as exc:
        raise DriverError(
            f"The SSH key in KERNODECK_SSH_KEY_FILE cannot be read: {exc}", retryable=False
        ) from None


# Agent refusals that are the machine's fault, not the rental's: a GPU tool missing, failing,
# hanging or printing what cannot be parsed, device files missing.
NODE_FAULT_RE = re.compile(
    r"^(ValueError|OSError|FileNotFoundError|PermissionError|UnicodeDecodeError|KeyError"
    r"|IndexError|TypeError): |is not installed on this host|did not finish within"
    r"|-smi\S* \S+ failed|unexpected (nvidia|amd|rocm)-smi|device file|no such device"
)


def blames_node(message: str) -> bool:
    """Whether an agent's refusal says the node is broken (so it leaves the catalog)."""
    return bool(NODE_FAULT_RE.search(message or ""))


def _error(node: str, message: str, *, retryable: bool = True) -> DriverError:
    """A DriverError that names its node, so the caller can look at that node's health."""
    error = DriverError(message, retryable=retryable)
    error.node = node
    return error


class NodeSession:
    """One authenticated SSH connection to one node, closed on exit."""

    def __init__(self, node: NodeRef, *, key: paramiko.PKey | None = None):
        self.node = node
        self.key = key
        self.transport: paramiko.Transport | None = None
        self.offered_key = ""

    @property
    def options(self):
        return getattr(self.node, "options", None) or {}

    @property
    def user(self) -> str:
        return self.node.admin_user or "root"

    @property
    def sudo(self) -> str:
        return "" if self.user == "root" else "sudo -n "

    @property
    def agent_path(self) -> str:
        return f"{self.options.get('agent_dir') or DEFAULT_AGENT_DIR}/{AGENT_NAME}"

    def __enter__(self) -> NodeSession:
        if transaction.get_connection().in_atomic_block:
            # A node may take minutes to answer: never while rows are locked.
            raise RuntimeError("The ssh driver must not run inside a database transaction.")
        timeout = settings.KERNODECK_SSH_CONNECT_TIMEOUT
        pinned = (getattr(self.node, "host_key", "") or "").strip()
        try:
            sock = socket.create_connection((self.node.host, self.node.port), timeout=timeout)
        except OSError as exc:
            raise _error(
                self.node.name,
                f"The node {self.node.name} is unreachable ({self.node.host}:{self.node.port}): "
                f"{exc.strerror or exc}",
            ) from None
        try:
            transport = self.transport = paramiko.Transport(sock)
            transport.banner_timeout = timeout
            transport.auth_timeout = timeout
            if pinned:
                # Ask for the pinned key's type first, so a node with several host keys
                # shows the one we know.
                kind = pinned.split()[0]
                options = transport.get_security_options()
                types = list(options.key_types)
                if kind in types:
                    options.key_types = [kind] + [t for t in types if t != kind]
            transport.start_client(timeout=timeout)
            server_key = transport.get_remote_server_key()
            self.offered_key = f"{server_key.get_name()} {server_key.get_base64()}"
            if not pinned:
                raise HostKeyNotAccepted(self.node.name, self.offered_key)
            if pinned.split()[:2] != self.offered_key.split()[:2]:
                logger.error(
                    "host key of node %s changed: pinned %s, offered %s",
                    self.node.name,
                    fingerprint(pinned),
                    fingerprint(self.offered_key),
                )
                raise HostKeyChanged(self.node.name, pinned, self.offered_key)
            transport.auth_publickey(self.user, self.key or load_operator_key())
        except DriverError:
            self.close()
            raise
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self.close()
            sock.close()
            raise _error(
                self.node.name, f"SSH to the node {self.node.name} failed: {exc}"
            ) from None
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            self.transport = None

    def exec(self, command: str, *, stdin: bytes = b"", timeout: float) -> tuple[int, bytes]:
        """Runs one command; returns (exit status, standard output). Times out as a whole."""
        try:
            channel = self.transport.open_session(timeout=settings.KERNODECK_SSH_CONNECT_TIMEOUT)
            channel.settimeout(timeout)
            channel.exec_command(command)
            if stdin:
                channel.sendall(stdin)
            channel.shutdown_write()
            chunks, size = [], 0
            while True:
                chunk = channel.recv(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise _error(self.node.name, f"The node {self.node.name} answered too much.")
                chunks.append(chunk)
            status = channel.recv_exit_status()
            channel.close()
        except TimeoutError:
            raise _error(
                self.node.name, f"The node {self.node.name} did not answer within {timeout:.0f} s."
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise _error(
                self.node.name, f"SSH to the node {self.node.name} failed: {exc}"
            ) from None
        return status, b"".join(chunks)

    def ensure_agent(self) -> None:
        """Copies the agent when the node has none or another version (by SHA-256)."""
        path = shlex.quote(self.agent_path)
        status, out = self.exec(
            f"{self.sudo}sh -c {shlex.quote(f'sha256sum {path} 2>/dev/null || true')}",
            timeout=settings.KERNODECK_SSH_COMMAND_TIMEOUT,
        )
        if out.decode(errors="replace").split()[:1] == [agent_sha256()]:
            return
        folder = shlex.quote(self.agent_path.rsplit("/", 1)[0])
        script = (
            f"umask 077 && mkdir -p {folder} && cat > {path}.new && "
            f"chmod 0700 {path}.new && mv {path}.new {path}"
        )
        status, out = self.exec(
            f"{self.sudo}sh -c {shlex.quote(script)}",
            stdin=agent_source(),
            timeout=settings.KERNODECK_SSH_COMMAND_TIMEOUT,
        )
        if status != 0:
            raise _error(
                self.node.name,
                f"Copying the agent to {self.node.name} failed (exit {status}).",
                retryable=False,
            )
        logger.info("agent copied to node %s", self.node.name)

    def agent(self, command: str, request: dict, *, timeout: float | None = None) -> dict:
        """Runs one agent subcommand; a refusal raises a final DriverError with its words."""
        status, out = self.exec(
            f"{self.sudo}python3 {shlex.quote(self.agent_path)} {command}",
            stdin=json.dumps(request).encode(),
            timeout=timeout or settings.KERNODECK_SSH_COMMAND_TIMEOUT,
        )
        lines = [line for line in out.decode(errors="replace").splitlines() if line.strip()]
        try:
            answer = json.loads(lines[-1]) if lines else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise _error(
                self.node.name,
                f"The agent on {self.node.name} gave no answer to {command} (exit {status}).",
            )
        answer = check_answer(
            self.node.name, command, answer, reference=request.get("reference") or None
        )
        if not answer["ok"]:
            error = _error(self.node.name, f"{self.node.name}: {answer['error']}", retryable=False)
            error.blames_node = blames_node(answer["error"])
            raise error
        return answer


class SshDriver:
    """Runs rentals on nodes through the host agent over SSH."""

    code = "ssh"

    def session(self, node: NodeRef) -> NodeSession:
        return NodeSession(node)

    def _call(self, node: NodeRef, command: str, request: dict, *, timeout=None) -> dict:
        with self.session(node) as session:
            session.ensure_agent()
            return session.agent(command, request, timeout=timeout)

    @staticmethod
    def _node_options(node: NodeRef) -> dict:
        return dict(getattr(node, "options", None) or {})

    def prepare(self, rental: RentalSpec) -> StepResult:
        """Creates the account on each node of the rental, then runs its preparation."""
        details = []
        for allocation in rental.allocation:
            node = allocation.node
            options = self._node_options(node)
            with self.session(node) as session:
                session.ensure_agent()
                created = session.agent(
                    "create",
                    {
                        "reference": rental.reference,
                        "backend": rental.backend,
                        "gpus": sorted(allocation.slots),
                        "keys": list(rental.ssh_public_keys),
                    },
                )
                prepared = session.agent(
                    "prepare",
                    self._prepare_request(rental, options),
                    timeout=settings.KERNODECK_SSH_PREPARE_TIMEOUT,
                )
            details.append(
                f"{node.name}: account {created['account']}, GPUs "
                f"{','.join(str(i) for i in created['gpus'])}, {rental.preparation} "
                f"{prepared['status']}\n{(prepared.get('log') or '')[-1500:]}"
            )
        return StepResult(done=True, detail="\n".join(details))

    @staticmethod
    def _prepare_request(rental: RentalSpec, options: dict) -> dict:
        recipes = options.get("recipes") or {}
        request = {"reference": rental.reference, "preparation": rental.preparation}
        if recipes.get(rental.preparation):
            request["recipe"] = recipes[rental.preparation]
        if options.get("torch_index_url"):
            request["torch_index_url"] = options["torch_index_url"]
        if options.get("inference_model"):
            request["model"] = options["inference_model"]
        return request

    def deliver(self, rental: RentalSpec) -> Access:
        """The access of the rental's first node (prepare answers the same token again)."""
        if not rental.allocation:
            raise DriverError("The rental holds no slots.", retryable=False)
        node = rental.allocation[0].node
        with self.session(node) as session:
            session.ensure_agent()
            answer = session.agent(
                "prepare",
                self._prepare_request(rental, self._node_options(node)),
                timeout=settings.KERNODECK_SSH_PREPARE_TIMEOUT,
            )
            status = session.agent("status", {"reference": rental.reference})
        return Access(
            host=node.host,
            port=node.port,
            user=status["account"],
            url=answer.get("url", ""),
            token=answer.get("token", ""),
        )

    def extend(self, rental: RentalSpec, until: datetime) -> StepResult:
        for allocation in rental.allocation:
            self._call(
                allocation.node,
                "extend",
                {"reference": rental.reference, "until": until.isoformat()},
            )
        return StepResult(done=True, detail=f"Extended until {until.isoformat()} on the nodes.")

    def release(self, rental: RentalSpec) -> StepResult:
        """Locks the account, removes keys and device access, stops its processes."""
        details = []
        for allocation in rental.allocation:
            node = allocation.node
            retention = int(self._node_options(node).get("retention_hours") or 0)
            answer = self._call(
                node, "destroy", {"reference": rental.reference, "retention_hours": retention}
            )
            details.append(f"{node.name}: {answer['status']}")
        return StepResult(done=True, detail="; ".join(details))

    # -- what the reconcile uses (driving.node_reconcile) -----------------------------------

    def node_status(self, node: NodeRef) -> list[dict]:
        """Every rental the node's agent knows, checked (`status_all`)."""
        return self._call(node, "status_all", {})["rentals"]

    def suspend(self, rental: RentalSpec) -> StepResult:
        """Locks the account, stops its processes, takes its devices back; on each node."""
        details = []
        for allocation in rental.allocation:
            answer = self._call(allocation.node, "suspend", {"reference": rental.reference})
            details.append(f"{allocation.node.name}: suspended, {answer['processes']} processes")
        return StepResult(done=True, detail="; ".join(details))

    def resume(self, rental: RentalSpec) -> StepResult:
        for allocation in rental.allocation:
            self._call(
                allocation.node,
                "resume",
                {"reference": rental.reference, "keys": list(rental.ssh_public_keys)},
            )
        return StepResult(done=True, detail="Resumed on the nodes.")

    def keys(self, rental: RentalSpec) -> StepResult:
        """Replaces the account's authorized keys with the rental's keys, on each node."""
        details = []
        for allocation in rental.allocation:
            answer = self._call(
                allocation.node,
                "keys",
                {"reference": rental.reference, "keys": list(rental.ssh_public_keys)},
            )
            details.append(f"{allocation.node.name}: {answer['keys']} keys")
        return StepResult(done=True, detail="; ".join(details))

    def inspect(self, node: NodeRef) -> NodeHealth:
        """Inventory of the node; unreachable, a host key problem or a GPU mismatch is not ok."""
        try:
            inventory = self._call(node, "inventory", {})
        except HostKeyChanged as exc:
            return NodeHealth(
                ok=False,
                detail=exc.message,
                data={"problem": "host_key_changed", "offered_key": exc.offered},
            )
        except HostKeyNotAccepted as exc:
            return NodeHealth(
                ok=False,
                detail=exc.message,
                data={"problem": "host_key_not_accepted", "offered_key": exc.offered},
            )
        except MalformedAnswer as exc:
            return NodeHealth(ok=False, detail=exc.message, data={"problem": "bad_answer"})
        except DriverError as exc:
            return NodeHealth(ok=False, detail=exc.message, data={"problem": "unreachable"})
        seen = len(inventory.get("gpus") or [])
        data = {
            "problem": "",
            "backend": inventory.get("backend"),
            "driver_version": inventory.get("driver_version"),
            "gpus": inventory.get("gpus"),
            "disk_free_bytes": (inventory.get("disk") or {}).get("free_bytes"),
            "agent_sha256": agent_sha256(),
        }
        if seen != node.gpu_count:
            data["problem"] = "gpu_mismatch"
            return NodeHealth(
                ok=False,
                detail=f"The node reports {seen} GPUs; {node.gpu_count} slots are registered.",
                gpus_seen=seen,
                data=data,
            )
        return NodeHealth(ok=True, detail=f"{seen} GPUs seen.", gpus_seen=seen, data=data)
