"""Rental accounts: checked requests, the account, its home, keys and environment."""

from __future__ import annotations

import contextlib
import grp
import hashlib
import os
import pwd

from .common import (
    KEY_RE,
    AgentError,
    ensure_dir,
    now,
    run,
    write_file,
)
from .devices import env_lines, grant_devices
from .inventory import collect_inventory


def account_entry(account):
    try:
        return pwd.getpwnam(account)
    except KeyError:
        return None


def valid_keys(keys):
    if not isinstance(keys, list) or not keys:
        raise AgentError("the customer has no SSH public key")
    cleaned = []
    for key in keys:
        if not isinstance(key, str) or not KEY_RE.fullmatch(key.strip()):
            raise AgentError("an SSH public key is malformed")
        if key.strip() not in cleaned:
            cleaned.append(key.strip())
    return cleaned


def valid_gpus(gpus):
    if not isinstance(gpus, list) or not gpus:
        raise AgentError("no GPUs were allocated to this rental")
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 1024 for i in gpus):
        raise AgentError("a GPU index is malformed")
    if len(set(gpus)) != len(gpus):
        raise AgentError("a GPU is listed twice")
    return sorted(gpus)


def cmd_create(host, request):
    reference = request.get("reference")
    account = host.account_for(reference)
    backend = request.get("backend")
    if backend not in ("cuda", "rocm"):
        raise AgentError("the backend must be cuda or rocm")
    gpus = valid_gpus(request.get("gpus"))
    keys = valid_keys(request.get("keys"))
    state = host.load(account)
    entry = account_entry(account)
    if entry and not state:
        raise AgentError(
            f"the account {account} exists and was not made by Kernodeck; refusing to touch it"
        )
    if state and state["status"] != "active":
        raise AgentError(f"the rental {reference} has already ended on this host")
    if state and state["gpus"] != gpus:
        raise AgentError(f"the rental {reference} already holds GPUs {state['gpus']} on this host")
    for other in host.all_states():
        if other["account"] != account and other["status"] == "active":
            shared = sorted(set(other["gpus"]) & set(gpus))
            if shared:
                raise AgentError(f"GPU {shared[0]} is held by another rental on this host")

    inventory = collect_inventory(host)
    known = {g["index"] for g in inventory["gpus"]}
    missing = [i for i in gpus if i not in known]
    if inventory["backend"] and missing:
        raise AgentError(f"GPU {missing[0]} is not present on this host")
    changed = False
    home = host.home_for(account)
    if not state:
        state = {
            "account": account,
            "reference": reference,
            "backend": backend,
            "gpus": gpus,
            "status": "active",
            "created_at": now().isoformat(),
            "home": home,
            "prepared": {},
        }
        host.save(account, state)  # recorded first: a crash half-way is still ours to clean
        changed = True
    if not entry:
        run(
            [
                "useradd",
                "--home-dir",
                home,
                "--no-create-home",
                "--shell",
                "/bin/bash",
                "--user-group",
                "--comment",
                f"Kernodeck rental {reference}",
                account,
            ]
        )
        entry = account_entry(account)
        # "*": no password can ever match, yet the account is not "locked", which sshd
        # (without PAM) would refuse even for key logins. destroy locks it ("!*").
        run(["usermod", "--password", "*", account])
        changed = True
    uid, gid = entry.pw_uid, entry.pw_gid
    if backend == "rocm":
        for group in ("render", "video"):
            with contextlib.suppress(KeyError):
                if account not in grp.getgrnam(group).gr_mem:
                    run(["usermod", "--append", "--groups", group, account])
    ensure_dir(home, mode=0o700, uid=uid, gid=gid)
    workspace = os.path.join(home, "workspace")
    ensure_dir(workspace, mode=0o700, uid=uid, gid=gid)
    # Root owns what decides access and the GPU environment; the customer owns the rest.
    ensure_dir(os.path.join(home, ".ssh"), mode=0o755)
    authorized = "".join(key + "\n" for key in keys)
    keys_path = os.path.join(home, ".ssh", "authorized_keys")
    previous = open(keys_path).read() if os.path.isfile(keys_path) else None  # noqa: SIM115
    if previous != authorized:
        write_file(keys_path, authorized, mode=0o644)
        changed = True
    ensure_dir(os.path.join(home, ".kernodeck"), mode=0o755)
    variables = env_lines(backend, gpus)
    env_text = "".join(f"export {k}={v}\n" for k, v in variables.items())
    write_file(os.path.join(home, ".kernodeck", "env"), env_text, mode=0o644)
    hook = '[ -r "$HOME/.kernodeck/env" ] && . "$HOME/.kernodeck/env"\n'
    for rc in (".bashrc", ".profile"):
        path = os.path.join(home, rc)
        text = open(path).read() if os.path.isfile(path) and not os.path.islink(path) else ""  # noqa: SIM115
        if hook not in text:
            write_file(path, hook + text, mode=0o644, uid=uid, gid=gid)
    grant_devices(host, backend, gpus, gid, inventory_gpus=inventory["gpus"])
    by_index = {g["index"]: g for g in inventory["gpus"]}
    state["devices"] = [
        {"index": i, "path": host.device_path(backend, by_index.get(i, {"index": i}))}
        for i in gpus
    ]
    state["keys_sha256"] = hashlib.sha256(authorized.encode()).hexdigest()
    host.save(account, state)
    return {
        "account": account,
        "home": home,
        "workspace": workspace,
        "gpus": gpus,
        "environment": variables,
        "keys": len(keys),
        "changed": changed,
    }
