"""The ssh driver's connection to one node: host key pin, operator key, agent copy and calls.

A `NodeSession` opens one SSH connection to a node (paramiko), checks the node's host key
against the pinned one before authenticating, makes sure the node runs this release's agent
(compared by SHA-256, copied when it differs), and runs one agent subcommand with a JSON
request on standard input. Apart from `ssh.SshDriver` (the rental steps) because this is the
transport every step shares and the back-office's host-key pages use (`fingerprint`).

It never touches the database and refuses to run inside a transaction (a node may take
minutes to answer). Network trouble raises a retryable `DriverError`; an agent's refusal, a
host key that is not accepted yet or that changed raise a final one with the agent's (or the
pin's) message.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import shlex
import socket

import paramiko
from django.conf import settings
from django.db import transaction

from kernodeck.provisioning import agent as agent_package
from kernodeck.provisioning.drivers.answers import check_answer
from kernodeck.provisioning.drivers.base import DriverError, NodeRef

# The log lines keep the driver's logger name, the one operators filter on.
logger = logging.getLogger("kernodeck.provisioning.drivers.ssh")

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
    r"|is not present on this host"
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
