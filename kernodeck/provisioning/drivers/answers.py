"""The one checked boundary between the host agent's answers and the rest of Kernodeck.

Every answer of the agent crosses `check_answer(command, answer, reference=…)` before any
field of it is used (as the chain adapters' answers do): a schema per command with types,
lengths and ranges; account names of the `kd…-…` form, derived from the rental's reference,
never `root`; booleans that are JSON booleans (`"false"` is not false, it is malformed);
logs and other free text with NUL and control characters removed (PostgreSQL's jsonb
refuses NUL; pip and tar output can hold one). Anything else raises `MalformedAnswer` (a
DriverError) that says which field is wrong, so the step records it and the loop goes on.
"""

from __future__ import annotations

import re
from typing import Any

from kernodeck.provisioning.drivers.base import DriverError

ACCOUNT_RE = re.compile(r"kd[a-z0-9]{0,16}-[a-z0-9]{1,24}")
CONTROL_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
# The Unix socket a service listens on (the notebook's, in the rental's home).
SOCKET_RE = re.compile(r"/[A-Za-z0-9._/\-]{1,199}")
MAX_LOG = 4000
MAX_TEXT = 300
MAX_GPUS = 64


class MalformedAnswer(DriverError):
    """The agent answered something that does not fit its command's schema."""

    def __init__(self, node: str, command: str, problem: str):
        super().__init__(
            f"The agent on {node} gave a malformed answer to {command}: {problem}",
            retryable=False,
        )
        self.node = node
        self.command = command
        self.problem = problem
        self.blames_node = True  # an agent that answers nonsense runs on a broken node


def clean_text(value: str, limit: int = MAX_TEXT) -> str:
    """Text with NUL, control characters and ANSI escapes removed (newlines and tabs kept)."""
    cleaned = CONTROL_RE.sub("", value)
    return cleaned[-limit:] if limit == MAX_LOG else cleaned[:limit]


class _Checker:
    def __init__(self, node: str, command: str, answer: Any):
        self.node, self.command = node, command
        if not isinstance(answer, dict):
            self.fail("not a JSON object")
        self.answer = answer

    def fail(self, problem: str):
        raise MalformedAnswer(self.node, self.command, problem)

    def boolean(self, name: str, *, required: bool = True) -> bool | None:
        value = self.answer.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, bool):
            self.fail(f"{name} is not a boolean")
        return value

    def integer(self, name: str, *, low: int = 0, high: int = 2**62, required: bool = True):
        value = self.answer.get(name)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(f"{name} is not a whole number from {low} to {high}")
        return value

    def text(self, name: str, *, limit: int = MAX_TEXT, required: bool = True, choices=None):
        value = self.answer.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (limit != MAX_LOG and len(value) > limit * 4):
            self.fail(f"{name} is not a text of at most {limit} characters")
        value = clean_text(value, limit)
        if choices is not None and value not in choices:
            self.fail(f"{name} is not one of {', '.join(sorted(choices))}")
        return value

    def account(self, reference: str | None) -> str:
        value = self.answer.get("account")
        if not isinstance(value, str) or not ACCOUNT_RE.fullmatch(value) or value == "root":
            self.fail("account is not a Kernodeck account name (kd…-…)")
        if reference:
            suffix = reference.lower().replace("kd-", "").replace("-", "")
            if not value.endswith("-" + suffix):
                self.fail(f"account {value} is not the account of {reference}")
        return value

    def gpus(self, name: str = "gpus") -> list[int]:
        value = self.answer.get(name)
        if not isinstance(value, list) or len(value) > MAX_GPUS:
            self.fail(f"{name} is not a list of GPU indexes")
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < MAX_GPUS:
                self.fail(f"{name} holds something that is not a GPU index")
        return list(value)


def check_answer(node: str, command: str, answer: Any, *, reference: str | None = None) -> dict:
    """The agent's answer to `command`, checked and cleaned; MalformedAnswer otherwise.

    A refusal (`ok: false`) is returned as it came, with its `error` cleaned: the caller
    turns it into its own DriverError.
    """
    check = _Checker(node, command, answer)
    ok = check.boolean("ok")
    out: dict[str, Any] = {"ok": ok}
    if not ok:
        error = answer.get("error")
        out["error"] = clean_text(error, 250) if isinstance(error, str) else "unknown error"
        return out
    if command == "create":
        out.update(
            account=check.account(reference),
            gpus=check.gpus(),
            keys=check.integer("keys", high=1000),
            changed=check.boolean("changed"),
        )
        for name in ("home", "workspace"):
            value = check.text(name, limit=500, required=False)
            if value is not None:
                out[name] = value
    elif command == "prepare":
        out.update(
            status=check.text("status", limit=20, choices={"done", "failed", "running"}),
            log=check.text("log", limit=MAX_LOG, required=False) or "",
        )
        for name in ("url", "token", "preparation"):
            value = check.text(name, limit=500, required=False)
            if value is not None:
                out[name] = value
        port = check.integer("port", low=1, high=65535, required=False)
        if port is not None:
            out["port"] = port
        socket = check.text("socket", limit=200, required=False)
        if socket is not None:
            if not SOCKET_RE.fullmatch(socket) or "/../" in f"{socket}/":
                check.fail("socket is not an absolute path on the node")
            out["socket"] = socket
    elif command == "status":
        out.update(account=check.account(reference), known=check.boolean("known"))
        out["exists"] = check.boolean("exists")
        if out["known"]:
            out.update(
                status=check.text("status", limit=20, choices={"active", "ended", "wiped"}),
                gpus=check.gpus(),
                until=check.text("until", limit=64, required=False),
                processes=check.integer("processes", high=1_000_000),
                wipe_after=check.text("wipe_after", limit=64, required=False),
            )
            services = answer.get("services") or {}
            if not isinstance(services, dict) or not all(
                isinstance(k, str) and isinstance(v, bool) for k, v in services.items()
            ):
                check.fail("services is not a map of names to booleans")
            out["services"] = {clean_text(k, 40): v for k, v in services.items()}
    elif command == "extend":
        out.update(
            account=check.account(reference),
            until=check.text("until", limit=64),
            changed=check.boolean("changed"),
        )
    elif command == "destroy":
        out.update(
            account=check.account(reference),
            changed=check.boolean("changed"),
            status=check.text("status", limit=20, choices={"ended", "wiped", "unknown"}),
            wipe_after=check.text("wipe_after", limit=64, required=False),
        )
    elif command == "suspend":
        out.update(
            account=check.account(reference),
            suspended=check.boolean("suspended"),
            changed=check.boolean("changed"),
            processes=check.integer("processes", high=1_000_000),
        )
    elif command == "resume":
        out.update(
            account=check.account(reference),
            suspended=check.boolean("suspended"),
            changed=check.boolean("changed"),
        )
    elif command == "keys":
        out.update(
            account=check.account(reference),
            changed=check.boolean("changed"),
            keys=check.integer("keys", high=1000),
            suspended=check.boolean("suspended"),
        )
    elif command == "status_all":
        rentals = answer.get("rentals")
        if not isinstance(rentals, list) or len(rentals) > 10_000:
            check.fail("rentals is not a list")
        out["rentals"] = [_rental(node, item) for item in rentals]
        out["gpus"] = _gpu_use(check)
    elif command == "inventory":
        out.update(_inventory(check))
    else:
        check.fail("unknown command")
    return out


def _inventory(check: _Checker) -> dict:
    answer = check.answer
    gpus = answer.get("gpus")
    if not isinstance(gpus, list) or len(gpus) > MAX_GPUS:
        check.fail("gpus is not a list of GPUs")
    cleaned = []
    for gpu in gpus:
        if not isinstance(gpu, dict):
            check.fail("gpus holds something that is not a GPU")
        index = gpu.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < MAX_GPUS:
            check.fail("a GPU has no valid index")
        item = {"index": index}
        for name in ("uuid", "name", "device"):
            value = gpu.get(name)
            if value is not None and not isinstance(value, str):
                check.fail(f"a GPU's {name} is not a text")
            if value is not None:
                item[name] = clean_text(value, 200)
        memory = gpu.get("memory_mib")
        if memory is not None:
            if isinstance(memory, bool) or not isinstance(memory, int | float):
                check.fail("a GPU's memory is not a number")
            item["memory_mib"] = memory
        cleaned.append(item)
    disk = answer.get("disk") or {}
    if not isinstance(disk, dict):
        check.fail("disk is not an object")
    free = disk.get("free_bytes")
    if free is not None and (isinstance(free, bool) or not isinstance(free, int) or free < 0):
        check.fail("disk.free_bytes is not a whole number")
    rentals = answer.get("rentals") or []
    if not isinstance(rentals, list) or not all(isinstance(r, dict) for r in rentals):
        check.fail("rentals is not a list of objects")
    return {
        "gpus": cleaned,
        "backend": check.text("backend", limit=10, required=False, choices=None),
        "driver_version": check.text("driver_version", limit=64, required=False),
        "disk": {"free_bytes": free},
        "rentals": rentals,
    }


# Each figure of a GPU use sample and its range (an agent reporting more is broken).
GPU_USE_RANGES = {
    "utilization_pct": 100,
    "memory_used_mib": 16_777_216,
    "memory_total_mib": 16_777_216,
    "temperature_c": 200,
    "power_w": 10_000,
}


def _gpu_use(check: _Checker) -> list[dict]:
    """`status_all`'s `gpus`: per GPU its use now, figures numbers in range or null.

    Absent (an older agent) is no samples.
    """
    samples = check.answer.get("gpus", [])
    if not isinstance(samples, list) or len(samples) > MAX_GPUS:
        check.fail("gpus is not a list of GPU use samples")
    cleaned, seen = [], set()
    for sample in samples:
        if not isinstance(sample, dict):
            check.fail("gpus holds something that is not a GPU use sample")
        index = sample.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < MAX_GPUS:
            check.fail("a GPU use sample has no valid index")
        if index in seen:
            check.fail(f"GPU {index} is sampled twice")
        seen.add(index)
        item = {"index": index}
        for name, high in GPU_USE_RANGES.items():
            value = sample.get(name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= high
            ):
                check.fail(f"GPU {index}'s {name} is not a number from 0 to {high}")
            item[name] = value
        cleaned.append(item)
    return sorted(cleaned, key=lambda item: item["index"])


def _rental(node: str, item: Any) -> dict:
    """One entry of `status_all`: checked like a `status` answer of its own reference."""
    check = _Checker(node, "status_all", item)
    reference = check.text("reference", limit=16)
    return {
        "reference": reference,
        "account": check.account(reference),
        "status": check.text("status", limit=20, choices={"active", "ended", "wiped"}),
        "suspended": check.boolean("suspended"),
        "gpus": check.gpus(),
        "until": check.text("until", limit=64, required=False),
        "keys_sha256": check.text("keys_sha256", limit=64, required=False) or "",
        "locked": check.boolean("locked"),
        "processes": check.integer("processes", high=1_000_000),
    }
