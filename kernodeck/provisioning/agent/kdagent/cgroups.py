"""Resource limits: each rental account in its own cgroup under a `kernodeck` parent.

Shares follow the rental's part of the node: a rental of g of the node's G GPUs gets g
times the default CPU share (so CPU time under contention splits like the GPUs) and g/G of
the memory left after a reserve for the node itself. Its recipes and services run in it,
its processes are counted through `cgroup.procs` and ended through it.

Two layouts are found under `cgroup_root`:
- unified (cgroup v2 with the cpu and memory controllers, Debian 11+, Ubuntu 21.10+):
  one folder with `cpu.weight` 100·g and `memory.max`, ended with `cgroup.kill`;
- hybrid or legacy (the cpu and memory controllers on cgroup v1 hierarchies, as on
  Ubuntu 20.04): a folder in each, `cpu.shares` 1024·g and `memory.limit_in_bytes`, plus
  one in the controller-less v2 hierarchy at `unified/` where there is one, which counts
  and ends the processes (`cgroup.kill`); without it they are ended through the memory
  folder's `cgroup.procs`, signalled until it is empty.
Where neither is writable (a container) the rental runs without limits and its state says
why; nothing else changes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

PARENT = "kernodeck"
RESERVE = 0.1  # of the node's memory, kept back for the system and the agent
V1_CPU = ("cpu", "cpu,cpuacct", "cpuacct,cpu")


def _read(path):
    with open(path) as handle:
        return handle.read()


def layout(host):
    """(kind, {role: mount}) for the node's cgroups, or (None, reason).

    Roles: `cpu` and `memory` carry the limits, `procs` counts and ends the processes.
    """
    root = host.settings["cgroup_root"]
    try:
        controllers = _read(os.path.join(root, "cgroup.controllers")).split()
    except OSError:
        controllers = None
    if controllers is not None:
        missing = [c for c in ("cpu", "memory") if c not in controllers]
        if missing:
            missing = ", ".join(missing)
            return None, f"the cgroup v2 controllers {missing} are not available at {root}"
        if not os.access(root, os.W_OK):
            return None, f"{root} is not writable"
        return "unified", {"cpu": root, "memory": root, "procs": root}
    mounts = {}
    for name in V1_CPU:
        if os.path.exists(os.path.join(root, name, "cpu.shares")):
            mounts["cpu"] = os.path.join(root, name)
            break
    if os.path.exists(os.path.join(root, "memory", "memory.limit_in_bytes")):
        mounts["memory"] = os.path.join(root, "memory")
    if set(mounts) != {"cpu", "memory"}:
        return None, f"no cgroup v2 hierarchy at {root} and no cgroup v1 cpu and memory either"
    unwritable = [m for m in mounts.values() if not os.access(m, os.W_OK)]
    if unwritable:
        return None, f"{unwritable[0]} is not writable"
    unified = os.path.join(root, "unified")
    if os.path.exists(os.path.join(unified, "cgroup.procs")) and os.access(unified, os.W_OK):
        return "hybrid", {**mounts, "procs": unified}
    return "legacy", {**mounts, "procs": mounts["memory"]}


def available(host):
    """None when rental cgroups can be made here, else the reason."""
    kind, found = layout(host)
    return None if kind else found


def _write(folder, name, value):
    with open(os.path.join(folder, name), "w") as handle:
        handle.write(f"{value}\n")


def _memory_total():
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise OSError("no MemTotal in /proc/meminfo")


def limits(rental_gpus, node_gpus, kind="unified"):
    share = rental_gpus / max(node_gpus, rental_gpus, 1)
    page = os.sysconf("SC_PAGE_SIZE")  # the kernel keeps whole pages: record what it keeps
    memory = int(_memory_total() * (1 - RESERVE) * share) // page * page
    if kind == "unified":
        return {"cpu.weight": max(1, min(10000, 100 * rental_gpus)), "memory.max": memory}
    return {"cpu.shares": max(2, 1024 * rental_gpus), "memory.limit_in_bytes": memory}


def ensure(host, account, rental_gpus, node_gpus):
    """Makes the rental's cgroup(s) with its limits; returns its record for the state file.

    `path` is the folder that counts and ends the processes, `folders` every folder made.
    """
    kind, mounts = layout(host)
    if not kind:
        return {"path": None, "reason": mounts}
    values = limits(rental_gpus, node_gpus, kind)
    folders = {}
    try:
        for role, mount in mounts.items():
            parent = os.path.join(mount, PARENT)
            os.makedirs(parent, exist_ok=True)
            if kind == "unified":
                with contextlib.suppress(OSError):  # controllers for the rentals below
                    _write(mount, "cgroup.subtree_control", "+cpu +memory")
                _write(parent, "cgroup.subtree_control", "+cpu +memory")
            folders[role] = os.path.join(parent, account)
            os.makedirs(folders[role], exist_ok=True)
        for name, value in values.items():
            _write(folders["cpu" if name.startswith("cpu") else "memory"], name, value)
    except OSError as exc:
        return {"path": None, "reason": f"the rental's cgroup could not be set up: {exc}"}
    return {
        "path": folders["procs"],
        "folders": sorted(set(folders.values())),
        "layout": kind,
        **values,
    }


def _folders(record):
    """Every folder of a state's cgroup record (a bare path for states written before)."""
    if isinstance(record, str):
        return [record]
    record = record or {}
    return list(record.get("folders") or ([record["path"]] if record.get("path") else []))


def pids(folder):
    try:
        with open(os.path.join(folder, "cgroup.procs")) as handle:
            return [int(line) for line in handle if line.strip()]
    except FileNotFoundError:
        return []


def end(record, wait=10.0):
    """Ends every process in the rental's cgroup and removes it; False if some stay."""
    folders = [f for f in _folders(record) if os.path.isdir(f)]
    if not folders:
        return True
    main = record if isinstance(record, str) else record.get("path") or folders[0]
    killed = False
    with contextlib.suppress(OSError):
        _write(main, "cgroup.kill", 1)
        killed = True
    deadline = time.monotonic() + wait
    while any(pids(f) for f in folders):
        if time.monotonic() > deadline:
            return False
        if not killed:  # cgroup v1 only: signal what is in it until nothing is left
            for pid in {p for f in folders for p in pids(f)}:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for folder in folders:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return True


def join(record, pid=None):
    """Moves a process (the caller by default) into the rental's cgroup(s); returns how many
    folders took it. Run in a recipe's child, as root, before it becomes the account (so
    the agent itself never sits in a tenant's cgroup), and for a login by `session`.
    Where a folder cannot be joined the process stays where it was in that hierarchy."""
    joined = 0
    for folder in _folders(record):
        with contextlib.suppress(OSError):
            _write(folder, "cgroup.procs", pid or os.getpid())
            joined += 1
    return joined
