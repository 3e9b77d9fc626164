"""Preparations: recipes run as the rental account, and the services they start."""

from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import subprocess
import time

from . import cgroups, fsafe
from .accounts import account_entry, home_fd
from .common import (
    AgentError,
    now,
)
from .devices import env_lines

PREPARATIONS = ("python", "pytorch", "notebook", "inference")
SERVICES = ("notebook", "inference")

# Default recipes: shell run as the rental account in its home. The agent passes
# KD_WORKSPACE, KD_PORT, KD_BACKEND, KD_TORCH_INDEX_URL, KD_MODEL, and the service's secret
# as KD_TOKEN_FILE: a file of the account's alone (0600 in its 0700 ~/.kernodeck/secrets),
# with KD_NOTEBOOK_CONFIG, JupyterLab's config file holding the token. No secret is ever
# put on a command line, where `ps` shows it to every account of the node. (KD_TOKEN, in
# the recipe's own environment, stays for operators' recipes written before; /proc shows
# an environment only to its owner and root.) JupyterLab listens on KD_NOTEBOOK_SOCK, a
# Unix socket in the account's 0700 `~/.kernodeck/run`, which no other account can even
# reach (the customer tunnels to it: `ssh -L 8888:<socket>`); a loopback port could be
# connected to, or taken first, by any tenant of the node. The inference server, which
# has no socket mode, binds to 127.0.0.1 behind its key. Services are reached through an
# SSH tunnel and detach with setsid so the recipe can return.
VENV = '[ -x "$KD_WORKSPACE/venv/bin/python" ] || python3 -m venv "$KD_WORKSPACE/venv"\n'
PIP = '"$KD_WORKSPACE/venv/bin/pip" install'
RECIPES = {
    "python": "set -e\n" + VENV,
    "pytorch": (
        "set -e\n" + VENV + 'if [ -n "$KD_TORCH_INDEX_URL" ]; then\n'
        f'  {PIP} --index-url "$KD_TORCH_INDEX_URL" torch\n'
        f"else\n  {PIP} torch\nfi\n"
    ),
    "notebook": (
        "set -e\n" + VENV + f'[ -x "$KD_WORKSPACE/venv/bin/jupyter-lab" ] || {PIP} jupyterlab\n'
        'rm -f "$KD_NOTEBOOK_SOCK"\n'
        'setsid "$KD_WORKSPACE/venv/bin/jupyter-lab" --config="$KD_NOTEBOOK_CONFIG" '
        '--no-browser --ServerApp.sock="$KD_NOTEBOOK_SOCK" --ServerApp.sock_mode=0600 '
        '--ServerApp.root_dir="$KD_WORKSPACE" '
        '> "$HOME/.kernodeck-notebook.log" 2>&1 < /dev/null &\n'
    ),
    "inference": (
        'set -e\n[ -n "$KD_MODEL" ] || { echo "no model is configured for this node"; exit 2; }\n'
        + VENV
        + f'[ -x "$KD_WORKSPACE/venv/bin/vllm" ] || {PIP} vllm\n'
        # vLLM takes its key from VLLM_API_KEY as well as --api-key.
        'VLLM_API_KEY="$(cat "$KD_TOKEN_FILE")" setsid "$KD_WORKSPACE/venv/bin/vllm" serve '
        '"$KD_MODEL" --host 127.0.0.1 --port "$KD_PORT" '
        '> "$HOME/.kernodeck-inference.log" 2>&1 < /dev/null &\n'
    ),
}


NOTEBOOK_SOCKET = "notebook.sock"  # in ~/.kernodeck/run


def write_secrets(host, account, uid, gid, preparation, token):
    """The service's secret in files of the account's alone; returns the variables naming them.

    `~/.kernodeck` is root's (the tenant cannot swap what is inside); `secrets` in it is the
    account's, 0700, and each file 0600, written without following any link; so is `run`,
    where the notebook's socket goes.
    """
    with home_fd(host, account, uid) as home:
        where = f"~{account}/.kernodeck"
        own = fsafe.ensure_dir(home, ".kernodeck", mode=0o755, uid=0, gid=0, where=where)
        try:
            box = fsafe.ensure_dir(
                own, "secrets", mode=0o700, uid=uid, gid=gid, where=where + "/secrets"
            )
            if preparation == "notebook":
                run_dir = fsafe.ensure_dir(
                    own, "run", mode=0o700, uid=uid, gid=gid, where=where + "/run"
                )
                os.close(run_dir)
        finally:
            os.close(own)
        try:
            fsafe.write_text(box, f"{preparation}.token", token, mode=0o600, uid=uid, gid=gid)
            if preparation == "notebook":
                config = json.dumps({"IdentityProvider": {"token": token}})
                fsafe.write_text(box, "notebook_config.json", config, mode=0o600, uid=uid, gid=gid)
        finally:
            os.close(box)
    folder = os.path.join(host.home_for(account), ".kernodeck", "secrets")
    variables = {"KD_TOKEN_FILE": os.path.join(folder, f"{preparation}.token")}
    if preparation == "notebook":
        variables["KD_NOTEBOOK_CONFIG"] = os.path.join(folder, "notebook_config.json")
        variables["KD_NOTEBOOK_SOCK"] = socket_path(host, account)
    return variables


def socket_path(host, account):
    return os.path.join(host.home_for(account), ".kernodeck", "run", NOTEBOOK_SOCKET)


def socket_answers(host, account, uid):
    """Whether the notebook's socket accepts a connection: root opens it one name at a time
    without following links (a link planted there is never connected to), checks it is a
    socket of the account's, and connects through that descriptor."""
    try:
        with home_fd(host, account, uid) as home:
            where = f"~{account}/.kernodeck"
            own = fsafe.open_dir(home, ".kernodeck", owners={0}, where=where)
            try:
                box = fsafe.open_dir(own, "run", owners={uid}, where=where + "/run")
            finally:
                os.close(own)
            try:
                fd = os.open(NOTEBOOK_SOCKET, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=box)
            finally:
                os.close(box)
    except (AgentError, OSError):
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != uid:
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1)
            return sock.connect_ex(f"/proc/self/fd/{fd}") == 0
    finally:
        os.close(fd)


def service_alive(host, account, uid, preparation, record):
    """Whether the service answers where it listens: the notebook of the default recipe on
    its socket only (a port there could be any tenant's), others on their port."""
    if record.get("socket"):
        return socket_answers(host, account, uid)
    return port_answers(record["port"])


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_answers(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def tail(path, size=4000):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - size))
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


LOCAL_NOTEBOOK_PORT = 8888  # the customer's end of the tunnel to the notebook's socket


def service_answer(preparation, record):
    answer = {"preparation": preparation, "status": record["status"], "log": record.get("log", "")}
    if preparation == "notebook" and record.get("socket"):
        answer.update(
            socket=record["socket"],
            token=record["token"],
            url=f"http://127.0.0.1:{LOCAL_NOTEBOOK_PORT}/lab?token={record['token']}",
        )
    elif preparation == "notebook":
        answer.update(
            port=record["port"],
            token=record["token"],
            url=f"http://127.0.0.1:{record['port']}/lab?token={record['token']}",
        )
    elif preparation == "inference":
        answer.update(
            port=record["port"], token=record["token"], url=f"http://127.0.0.1:{record['port']}/v1"
        )
    return answer


def cmd_prepare(host, request):
    reference = request.get("reference")
    account = host.account_for(reference)
    preparation = request.get("preparation")
    if preparation not in PREPARATIONS:
        raise AgentError("unknown preparation")
    state = host.load(account)
    entry = account_entry(account)
    if not state or state["status"] != "active" or not entry:
        raise AgentError(f"the rental {reference} has no active account on this host")
    record = state["prepared"].get(preparation)
    alive = record and (
        preparation not in SERVICES
        or service_alive(host, account, entry.pw_uid, preparation, record)
    )
    if record and record["status"] == "done" and alive:
        return service_answer(preparation, record)
    recipe = request.get("recipe") or RECIPES[preparation]
    if not isinstance(recipe, str) or "\x00" in recipe:
        raise AgentError("the recipe is malformed")
    record = record or {}
    record.setdefault("token", secrets.token_urlsafe(24))
    # The default notebook listens on its socket; an operator's own recipe on KD_PORT.
    record.pop("socket", None)
    if preparation == "notebook" and not request.get("recipe"):
        record["socket"] = socket_path(host, account)
    if not record.get("port") or port_answers(record["port"]):
        record["port"] = free_port()
    home = state["home"]
    log_path = os.path.join(host.logs_dir, f"{account}-{preparation}.log")
    env = {
        "HOME": home,
        "USER": account,
        "LOGNAME": account,
        "SHELL": "/bin/bash",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "KD_WORKSPACE": os.path.join(home, "workspace"),
        "KD_PORT": str(record["port"]),
        "KD_TOKEN": record["token"],
        "KD_BACKEND": state["backend"],
        "KD_TORCH_INDEX_URL": str(request.get("torch_index_url") or ""),
        "KD_MODEL": str(request.get("model") or ""),
    }
    env.update(env_lines(state["backend"], state["gpus"]))
    if preparation in SERVICES:
        env.update(
            write_secrets(host, account, entry.pw_uid, entry.pw_gid, preparation, record["token"])
        )
    rental_cgroup = state.get("cgroup") or {}
    groups = os.getgrouplist(account, entry.pw_gid)

    def become_account():
        # In the child, in this order: into the rental's cgroup while still root, then the
        # account's groups and uid (the agent runs one thread, so a preexec_fn is safe).
        cgroups.join(rental_cgroup)
        os.setgroups(groups)
        os.setresgid(entry.pw_gid, entry.pw_gid, entry.pw_gid)
        os.setresuid(entry.pw_uid, entry.pw_uid, entry.pw_uid)

    with open(log_path, "ab") as log:
        log.write(f"--- {now().isoformat()} {preparation}\n".encode())
        log.flush()
        try:
            done = subprocess.run(  # noqa: S603
                ["/bin/bash", "-c", recipe],
                preexec_fn=become_account,
                env=env,
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=int(host.settings["recipe_timeout"]),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AgentError(f"the {preparation} preparation did not finish in time") from exc
    record["log"] = tail(log_path)
    if done.returncode != 0:
        record["status"] = "failed"
        state["prepared"][preparation] = record
        host.save(account, state)
        last = [line for line in record["log"].splitlines() if line.strip()]
        raise AgentError(
            f"the {preparation} preparation failed (exit {done.returncode}): "
            f"{last[-1] if last else 'no output'}"
        )
    if preparation in SERVICES:
        deadline = time.monotonic() + float(host.settings["service_wait"])
        while not service_alive(host, account, entry.pw_uid, preparation, record):
            if time.monotonic() > deadline:
                record["status"] = "failed"
                state["prepared"][preparation] = record
                host.save(account, state)
                where = record.get("socket") or f"port {record['port']}"
                raise AgentError(f"the {preparation} service did not answer on {where}")
            time.sleep(0.2)
    record["status"] = "done"
    record["log"] = tail(log_path)
    state["prepared"][preparation] = record
    host.save(account, state)
    return service_answer(preparation, record)
