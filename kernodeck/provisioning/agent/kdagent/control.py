"""What the reconcile asks of a node beyond a rental's own steps (issue 20): suspend and
resume an account, replace its keys, and report every rental of the node in one call.

All idempotent: asking twice has the effect of asking once, so a controller that lost an
answer simply asks again. A suspended rental stays `active` in its state file (its GPUs
stay its own; the clock keeps running) with `suspended: true`.
"""

from __future__ import annotations

import contextlib

from .accounts import account_entry, remove_keys, valid_keys, write_keys
from .common import AgentError, now, run
from .devices import grant_devices, join_gpu_group, leave_gpu_group, revoke_devices
from .ending import processes_of, stop_processes
from .inventory import collect_gpu_use, collect_inventory


def _active(host, request):
    account = host.account_for(request.get("reference"))
    state = host.load(account)
    if not state or state["status"] != "active":
        raise AgentError("the rental has no active account on this host")
    return account, state, account_entry(account)


def cmd_suspend(host, request):
    """Lock the account, remove its keys, stop its processes, take its devices back."""
    account, state, entry = _active(host, request)
    changed = not state.get("suspended")
    if entry:
        run(["usermod", "--lock", "--expiredate", "1", "--shell", "/usr/sbin/nologin", account])
        with contextlib.suppress(AgentError):  # locked: the keys cannot log in anyway
            remove_keys(host, account, entry.pw_uid)
        stop_processes(host, entry.pw_uid)
        leave_gpu_group(host, account)
    revoke_devices(host, state)
    if changed:
        state["suspended"] = True
        state["suspended_at"] = now().isoformat()
        state["keys_sha256"] = ""
        host.save(account, state)
    return {
        "account": account,
        "suspended": True,
        "changed": changed,
        "processes": len(processes_of(entry.pw_uid)) if entry else 0,
    }


def cmd_resume(host, request):
    """Give a suspended account back: unlocked, its keys (given), its devices again."""
    keys = valid_keys(request.get("keys"))
    account, state, entry = _active(host, request)
    if not entry:
        raise AgentError(f"the account {account} is missing on this host")
    changed = bool(state.get("suspended"))
    if changed:
        run(["usermod", "--expiredate", "", "--shell", "/bin/bash", account])
        run(["usermod", "--password", "*", account])
    join_gpu_group(host, account)
    inventory = collect_inventory(host)
    state["devices"] = grant_devices(
        host, state["backend"], state["gpus"], entry.pw_gid, inventory_gpus=inventory["gpus"]
    )
    keys_changed, keys_sha256 = write_keys(host, account, entry.pw_uid, keys)
    state["suspended"] = False
    state["keys_sha256"] = keys_sha256
    host.save(account, state)
    return {"account": account, "suspended": False, "changed": changed or keys_changed}


def cmd_keys(host, request):
    """Replace the account's authorized keys with the given list (not while suspended:
    resume brings the keys back)."""
    keys = valid_keys(request.get("keys"))
    account, state, entry = _active(host, request)
    if not entry:
        raise AgentError(f"the account {account} is missing on this host")
    if state.get("suspended"):
        return {"account": account, "changed": False, "keys": len(keys), "suspended": True}
    changed, keys_sha256 = write_keys(host, account, entry.pw_uid, keys)
    if state.get("keys_sha256") != keys_sha256:
        state["keys_sha256"] = keys_sha256
        host.save(account, state)
    return {"account": account, "changed": changed, "keys": len(keys), "suspended": False}


def cmd_status_all(host, request):
    """Every rental this node knows, in one answer: what the reconcile compares."""
    rentals = []
    for state in host.all_states():
        entry = account_entry(state["account"])
        rentals.append(
            {
                "reference": state.get("reference", ""),
                "account": state["account"],
                "status": state["status"],
                "suspended": bool(state.get("suspended")),
                "gpus": state.get("gpus", []),
                "until": state.get("until"),
                "keys_sha256": state.get("keys_sha256", ""),
                "locked": _locked(state["account"]) if entry else True,
                "processes": len(processes_of(entry.pw_uid)) if entry else 0,
            }
        )
    return {"rentals": rentals, "gpus": collect_gpu_use(host)}


def _locked(account):
    """Whether the account's password field carries the lock mark ("!") usermod sets."""
    try:
        with open("/etc/shadow") as handle:
            for line in handle:
                name, _, rest = line.partition(":")
                if name == account:
                    return rest.startswith("!")
    except OSError:
        return False
    return False
