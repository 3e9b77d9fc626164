"""The end of a rental: extension, status, stopping, locking and wiping."""

from __future__ import annotations

import contextlib
import datetime as dt
import grp
import os
import signal
import time

from . import cgroups, fsafe
from .accounts import account_entry, remove_keys
from .common import (
    AgentError,
    now,
    run,
)
from .devices import leave_gpu_group, revoke_devices
from .services import SERVICES, service_alive


def cmd_extend(host, request):
    account = host.account_for(request.get("reference"))
    state = host.load(account)
    if not state or state["status"] != "active":
        raise AgentError("the rental has no active account on this host")
    until = request.get("until")
    try:
        parsed = dt.datetime.fromisoformat(str(until))
    except ValueError as exc:
        raise AgentError("the new end is not a date") from exc
    if parsed.tzinfo is None:
        raise AgentError("the new end has no time zone")
    changed = state.get("until") != parsed.isoformat()
    state["until"] = parsed.isoformat()
    host.save(account, state)
    return {"account": account, "until": state["until"], "changed": changed}


def processes_of(uid):
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        if uid in {int(v) for v in line.split()[1:]}:
                            pids.append(int(name))
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return pids


def cmd_status(host, request):
    account = host.account_for(request.get("reference"))
    state = host.load(account)
    entry = account_entry(account)
    if not state:
        return {"account": account, "known": False, "exists": bool(entry)}
    services = {
        name: bool(entry) and service_alive(host, account, entry.pw_uid, name, record)
        for name, record in state["prepared"].items()
        if name in SERVICES and record.get("status") == "done"
    }
    return {
        "account": account,
        "known": True,
        "exists": bool(entry),
        "status": state["status"],
        "gpus": state["gpus"],
        "until": state.get("until"),
        "processes": len(processes_of(entry.pw_uid)) if entry else 0,
        "services": services,
        "wipe_after": state.get("wipe_after"),
    }


def stop_processes(host, uid):
    deadline = time.monotonic() + float(host.settings["kill_wait"])
    while True:
        pids = processes_of(uid)
        if not pids:
            return
        if time.monotonic() > deadline:
            raise AgentError(f"{len(pids)} processes of the account did not stop")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def release(host, uid, state=None):
    """Nothing of the uid outlives the rental: its processes (its cgroup ended first), its
    files in the shared temporary folders and its System V IPC objects are gone, checked."""
    record = (state or {}).get("cgroup") or {}
    if not cgroups.end(record, wait=float(host.settings["kill_wait"])):
        raise AgentError(f"processes in {record.get('path')} did not stop")
    stop_processes(host, uid)
    left = []
    for top in host.settings["shared_dirs"]:
        left += fsafe.remove_owned(top, uid)
    remove_ipc(uid)
    stop_processes(host, uid)
    if left:
        raise AgentError(f"files of uid {uid} could not be removed: {', '.join(left[:3])}")


def remove_ipc(uid):
    """Removes the uid's shared memory segments, message queues and semaphore sets."""
    for kind, flag in (("shm", "-m"), ("msg", "-q"), ("sem", "-s")):
        try:
            with open(f"/proc/sysvipc/{kind}") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # key, id, perms, ... then uid, gid, cuid, cgid at fixed places per kind.
            uid_at = {"shm": 7, "msg": 7, "sem": 4}[kind]
            if len(fields) > uid_at + 2 and uid in (int(fields[uid_at]), int(fields[uid_at + 2])):
                run(["ipcrm", flag, fields[1]], check=False)


def wipe(host, state):
    """Removes the account, its group and its home: the end of the retention period.

    The uid is not handed out again (Host.take_id), so nothing it left can pass to another
    rental even where a file escaped the cleanup.
    """
    account = state["account"]
    entry = account_entry(account)
    if entry:
        release(host, entry.pw_uid, state)
        run(["userdel", account])
    with contextlib.suppress(KeyError):
        grp.getgrnam(account)
        run(["groupdel", account])
    home = state["home"]
    base = os.path.realpath(host.settings["home_base"])
    if os.path.dirname(os.path.realpath(home)) == base and os.path.basename(home) == account:
        base_fd = fsafe.open_base(base)
        try:
            fsafe.remove_tree(base_fd, account)
        finally:
            os.close(base_fd)
    state["status"] = "wiped"
    state["wiped_at"] = now().isoformat()
    host.save(account, state)


def sweep(host):
    """Wipes ended rentals whose retention period is over."""
    for state in host.all_states():
        due = state.get("wipe_after") and dt.datetime.fromisoformat(state["wipe_after"]) <= now()
        if state["status"] == "ended" and due:
            wipe(host, state)


def cmd_destroy(host, request):
    account = host.account_for(request.get("reference"))
    state = host.load(account)
    if not state:
        return {"account": account, "changed": False, "status": "unknown"}
    retention = request.get("retention_hours", 0)
    if not isinstance(retention, int) or isinstance(retention, bool) or not 0 <= retention <= 8760:
        raise AgentError("retention_hours must be a whole number of hours up to a year")
    changed = False
    entry = account_entry(account)
    refusal = None
    if state["status"] == "active":
        if entry:
            # Lock first so nothing new logs in, then remove keys, then stop what runs.
            run(
                ["usermod", "--lock", "--expiredate", "1", "--shell", "/usr/sbin/nologin", account]
            )
            try:
                remove_keys(host, account, entry.pw_uid)
            except AgentError as exc:
                refusal = str(exc)  # the locked account cannot log in with them anyway
            release(host, entry.pw_uid, state)
            leave_gpu_group(host, account)
        revoke_devices(host, state)
        state["status"] = "ended"
        state["ended_at"] = now().isoformat()
        state["wipe_after"] = (now() + dt.timedelta(hours=retention)).isoformat()
        if refusal:
            state.setdefault("alerts", []).append({"at": now().isoformat(), "alert": refusal})
        host.save(account, state)
        changed = True
        if refusal:
            raise AgentError(
                f"the rental ended and its account is locked, but its keys were left alone: "
                f"{refusal}; the tenant replaced its own files, look at the account"
            )
    elif entry and state["status"] == "ended":
        stop_processes(host, entry.pw_uid)
    sweep(host)
    state = host.load(account)
    return {
        "account": account,
        "changed": changed,
        "status": state["status"],
        "wipe_after": state.get("wipe_after"),
    }
