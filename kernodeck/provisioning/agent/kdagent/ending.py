"""The end of a rental: extension, status, stopping, locking and wiping."""

from __future__ import annotations

import contextlib
import datetime as dt
import grp
import os
import shutil
import signal
import time

from .accounts import account_entry
from .common import (
    AgentError,
    now,
    run,
)
from .devices import revoke_devices
from .services import SERVICES, port_answers


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
        name: port_answers(record["port"])
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


def wipe(host, state):
    """Removes the account, its group and its home: the end of the retention period."""
    account = state["account"]
    if account_entry(account):
        entry = account_entry(account)
        stop_processes(host, entry.pw_uid)
        run(["userdel", account])
    with contextlib.suppress(KeyError):
        grp.getgrnam(account)
        run(["groupdel", account])
    home = state["home"]
    base = os.path.realpath(host.settings["home_base"])
    if os.path.dirname(os.path.realpath(home)) == base and os.path.basename(home) == account:
        shutil.rmtree(home, ignore_errors=True)
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
    if state["status"] == "active":
        if entry:
            # Lock first so nothing new logs in, then remove keys, then stop what runs.
            run(
                ["usermod", "--lock", "--expiredate", "1", "--shell", "/usr/sbin/nologin", account]
            )
            keys_path = os.path.join(state["home"], ".ssh", "authorized_keys")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(keys_path)
            stop_processes(host, entry.pw_uid)
            for group in ("render", "video"):
                with contextlib.suppress(KeyError):
                    if account in grp.getgrnam(group).gr_mem:
                        run(["gpasswd", "--delete", account, group])
        revoke_devices(host, state)
        state["status"] = "ended"
        state["ended_at"] = now().isoformat()
        state["wipe_after"] = (now() + dt.timedelta(hours=retention)).isoformat()
        host.save(account, state)
        changed = True
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
