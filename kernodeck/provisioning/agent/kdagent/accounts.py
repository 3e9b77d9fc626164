"""Rental accounts: checked requests, the account, its home, keys and environment."""

from __future__ import annotations

import contextlib
import grp
import hashlib
import os
import pwd

from . import cgroups, fsafe
from .common import KEY_RE, AgentError, now, run
from .devices import env_lines, grant_devices, join_gpu_group
from .inventory import collect_inventory

HOOK = '[ -r "$HOME/.kernodeck/env" ] && . "$HOME/.kernodeck/env"\n'


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


@contextlib.contextmanager
def home_fd(host, account, uid):
    """The account's home, opened without following links and checked to be its own."""
    base = fsafe.open_base(host.settings["home_base"])
    try:
        fd = fsafe.open_dir(base, account, owners={0, uid}, where=f"the home of {account}")
    finally:
        os.close(base)
    try:
        yield fd
    finally:
        os.close(fd)


def make_home(host, account, uid, gid):
    """Creates (or checks) the home, 0700 and the account's own, under the home base."""
    base = fsafe.open_base(host.settings["home_base"])
    try:
        fd = fsafe.ensure_dir(
            base, account, mode=0o700, uid=uid, gid=gid, where=f"the home of {account}"
        )
    finally:
        os.close(base)
    os.close(fd)


def write_keys(host, account, uid, keys):
    """Root's `~/.ssh/authorized_keys` holding exactly `keys`; True when it changed.

    `.ssh` belongs to root: a link or a folder of the tenant's in its place is refused.
    """
    authorized = "".join(key + "\n" for key in keys)
    with home_fd(host, account, uid) as home:
        ssh = fsafe.ensure_dir(home, ".ssh", mode=0o755, uid=0, gid=0, where=f"~{account}/.ssh")
        try:
            where = f"~{account}/.ssh/authorized_keys"
            previous = fsafe.read_text(ssh, "authorized_keys", owners={0}, where=where)
            if previous != authorized:
                fsafe.write_text(ssh, "authorized_keys", authorized, mode=0o644)
        finally:
            os.close(ssh)
    return previous != authorized, hashlib.sha256(authorized.encode()).hexdigest()


def remove_keys(host, account, uid):
    """Removes `~/.ssh/authorized_keys`, only from root's own `.ssh` of that home."""
    with home_fd(host, account, uid) as home:
        try:
            ssh = fsafe.open_dir(home, ".ssh", owners={0}, where=f"~{account}/.ssh")
        except FileNotFoundError:
            return False
        try:
            return fsafe.unlink(ssh, "authorized_keys")
        finally:
            os.close(ssh)


def write_environment(host, account, uid, gid, variables):
    """`~/.kernodeck/env` (root's) and the hook in the account's `.bashrc` and `.profile`."""
    env_text = "".join(f"export {k}={v}\n" for k, v in variables.items())
    with home_fd(host, account, uid) as home:
        where = f"~{account}/.kernodeck"
        own = fsafe.ensure_dir(home, ".kernodeck", mode=0o755, uid=0, gid=0, where=where)
        try:
            fsafe.write_text(own, "env", env_text, mode=0o644)
        finally:
            os.close(own)
        for rc in (".bashrc", ".profile"):
            text = fsafe.read_text(home, rc, owners={uid}, where=f"~{account}/{rc}") or ""
            if HOOK not in text:
                fsafe.write_text(home, rc, HOOK + text, mode=0o644, uid=uid, gid=gid)


def make_account(host, account, reference, home):
    """A new account with a uid and gid never used on this node before (see Host.take_id)."""
    for _attempt in range(20):
        number = host.take_id()
        run(["groupadd", "--gid", str(number), account], check=False)
        group = grp.getgrnam(account) if _group_exists(account) else None
        if not group or group.gr_gid != number:
            if group:
                run(["groupdel", account], check=False)
            continue
        made = run(
            [
                "useradd",
                "--uid",
                str(number),
                "--gid",
                str(number),
                "--no-log-init",
                "--home-dir",
                home,
                "--no-create-home",
                "--shell",
                "/bin/bash",
                "--comment",
                f"Kernodeck rental {reference}",
                account,
            ],
            check=False,
        )
        if made.returncode == 0:
            return account_entry(account)
        run(["groupdel", account], check=False)
        if account_entry(account):
            break
    raise AgentError(f"no free uid could be found for {account} in the agent's range")


def _group_exists(name):
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


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
        entry = make_account(host, account, reference, home)
        state["uid"] = entry.pw_uid
        host.save(account, state)
        # "*": no password can ever match, yet the account is not "locked", which sshd
        # (without PAM) would refuse even for key logins. destroy locks it ("!*").
        run(["usermod", "--password", "*", account])
        changed = True
    uid, gid = entry.pw_uid, entry.pw_gid
    join_gpu_group(host, account)
    make_home(host, account, uid, gid)
    workspace = os.path.join(home, "workspace")
    with home_fd(host, account, uid) as home_dir:
        where = f"~{account}/workspace"
        os.close(
            fsafe.ensure_dir(home_dir, "workspace", mode=0o700, uid=uid, gid=gid, where=where)
        )
    # Root owns what decides access and the GPU environment; the customer owns the rest.
    keys_changed, keys_sha256 = write_keys(host, account, uid, keys)
    changed = changed or keys_changed
    variables = env_lines(backend, gpus)
    write_environment(host, account, uid, gid, variables)
    state["devices"] = grant_devices(host, backend, gpus, gid, inventory_gpus=inventory["gpus"])
    node_gpus = len(inventory["gpus"]) or len(gpus)
    state["cgroup"] = cgroups.ensure(host, account, len(gpus), node_gpus)
    state["keys_sha256"] = keys_sha256
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
