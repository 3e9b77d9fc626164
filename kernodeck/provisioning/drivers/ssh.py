"""The `ssh` driver: provisions rentals by running the host agent on nodes over SSH.

Each rental step (prepare, deliver, extend, release, suspend, resume, keys) and each node
check (status, inspect) opens a `NodeSession` to every node concerned, makes sure the node
runs this release's agent and runs one agent subcommand; the session, the host-key pin and
the agent copy live in `ssh_session`, re-exported here. The agent's steps are idempotent, so
the task queue may retry any step: a repeated `create` converges on one account and one key
set, a repeated `prepare` answers the same token.

The driver never touches the database; it is called outside transactions and row locks.
Network trouble raises a retryable `DriverError`; an agent's refusal, a host key that is not
accepted yet or that changed raise a final one with the agent's (or the pin's) message.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from kernodeck.provisioning.drivers.answers import MalformedAnswer
from kernodeck.provisioning.drivers.base import (
    Access,
    DriverError,
    NodeHealth,
    NodeRef,
    RentalSpec,
    StepResult,
)
from kernodeck.provisioning.drivers.ssh_session import (
    AGENT_NAME,
    DEFAULT_AGENT_DIR,
    MAX_ANSWER_BYTES,
    NODE_FAULT_RE,
    HostKeyChanged,
    HostKeyNotAccepted,
    NodeSession,
    agent_sha256,
    agent_source,
    blames_node,
    fingerprint,
    load_operator_key,
)

__all__ = [
    "AGENT_NAME",
    "DEFAULT_AGENT_DIR",
    "MAX_ANSWER_BYTES",
    "NODE_FAULT_RE",
    "HostKeyChanged",
    "HostKeyNotAccepted",
    "NodeSession",
    "SshDriver",
    "agent_sha256",
    "agent_source",
    "blames_node",
    "fingerprint",
    "load_operator_key",
]


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
            socket=answer.get("socket", ""),
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
        return self.node_report(node)["rentals"]

    def node_report(self, node: NodeRef) -> dict:
        """`status_all` whole: the rentals, and each GPU's use now (`gpus`)."""
        return self._call(node, "status_all", {})

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
