"""Resource limits: each rental account in its own cgroup (v2) under a `kernodeck` parent.

Shares follow the rental's part of the node: a rental of g of the node's G GPUs gets
`cpu.weight` 100·g (so CPU time under contention splits like the GPUs) and `memory.max`
g/G of the memory left after a reserve for the node itself. Its recipes and services run
in it, its processes are counted through `cgroup.procs` and ended with `cgroup.kill`.
Where cgroup v2 with the cpu and memory controllers is not writable (a hybrid v1 host, a
container) the rental runs without limits and its state says why; nothing else changes.
"""

from __future__ import annotations

import contextlib
import os
import time

PARENT = "kernodeck"
RESERVE = 0.1  # of the node's memory, kept back for the system and the agent


def available(host):
    """None when rental cgroups can be made here, else the reason."""
    root = host.settings["cgroup_root"]
    try:
        with open(os.path.join(root, "cgroup.controllers")) as handle:
            controllers = handle.read().split()
    except OSError:
        return f"no cgroup v2 hierarchy at {root}"
    missing = [c for c in ("cpu", "memory") if c not in controllers]
    if missing:
        return f"the cgroup v2 controllers {', '.join(missing)} are not available at {root}"
    if not os.access(root, os.W_OK):
        return f"{root} is not writable"
    return None


def path_for(host, account):
    return os.path.join(host.settings["cgroup_root"], PARENT, account)


def _write(folder, name, value):
    with open(os.path.join(folder, name), "w") as handle:
        handle.write(f"{value}\n")


def _memory_total():
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise OSError("no MemTotal in /proc/meminfo")


def limits(rental_gpus, node_gpus):
    share = rental_gpus / max(node_gpus, rental_gpus, 1)
    memory = int(_memory_total() * (1 - RESERVE) * share)
    return {"cpu.weight": max(1, min(10000, 100 * rental_gpus)), "memory.max": memory}


def ensure(host, account, rental_gpus, node_gpus):
    """Makes the rental's cgroup with its limits; returns its record for the state file."""
    reason = available(host)
    if reason:
        return {"path": None, "reason": reason}
    parent = os.path.join(host.settings["cgroup_root"], PARENT)
    folder = path_for(host, account)
    try:
        os.makedirs(parent, exist_ok=True)
        with contextlib.suppress(OSError):  # controllers for the rentals below the parent
            _write(host.settings["cgroup_root"], "cgroup.subtree_control", "+cpu +memory")
        _write(parent, "cgroup.subtree_control", "+cpu +memory")
        os.makedirs(folder, exist_ok=True)
        values = limits(rental_gpus, node_gpus)
        for name, value in values.items():
            _write(folder, name, value)
    except OSError as exc:
        return {"path": None, "reason": f"the rental's cgroup could not be set up: {exc}"}
    return {"path": folder, **values}


def pids(folder):
    try:
        with open(os.path.join(folder, "cgroup.procs")) as handle:
            return [int(line) for line in handle if line.strip()]
    except FileNotFoundError:
        return []


def end(folder, wait=10.0):
    """Ends every process in the cgroup (cgroup.kill) and removes it; False if some stay."""
    if not folder or not os.path.isdir(folder):
        return True
    with contextlib.suppress(OSError):
        _write(folder, "cgroup.kill", 1)
    deadline = time.monotonic() + wait
    while pids(folder):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        os.rmdir(folder)
    return True


@contextlib.contextmanager
def inside(folder):
    """While the block runs, the agent sits in `folder`, so what it starts lands there."""
    if not folder or not os.path.isdir(folder):
        yield
        return
    with open("/proc/self/cgroup") as handle:
        own = [line.split(":", 2)[2].strip() for line in handle if line.startswith("0::")]
    try:
        _write(folder, "cgroup.procs", os.getpid())
    except OSError:
        own = []  # not moved: what it starts runs where the agent runs
    try:
        yield
    finally:
        if own:
            root = os.path.dirname(os.path.dirname(folder))
            with contextlib.suppress(OSError):
                _write(os.path.join(root, own[0].lstrip("/")), "cgroup.procs", os.getpid())
