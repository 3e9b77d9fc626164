"""Preparations: recipes run as the rental account, and the services they start."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time

from .accounts import account_entry
from .common import (
    AgentError,
    now,
)
from .devices import env_lines

PREPARATIONS = ("python", "pytorch", "notebook", "inference")
SERVICES = ("notebook", "inference")

# Default recipes: shell run as the rental account in its home. The agent passes
# KD_WORKSPACE, KD_PORT, KD_TOKEN, KD_BACKEND, KD_TORCH_INDEX_URL, KD_MODEL. Services
# bind to 127.0.0.1 only and are reached through an SSH tunnel; they detach with setsid
# so the recipe can return while they run.
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
        'setsid "$KD_WORKSPACE/venv/bin/jupyter-lab" --no-browser --ip=127.0.0.1 '
        '--port="$KD_PORT" --IdentityProvider.token="$KD_TOKEN" '
        '--ServerApp.root_dir="$KD_WORKSPACE" '
        '> "$HOME/.kernodeck-notebook.log" 2>&1 < /dev/null &\n'
    ),
    "inference": (
        'set -e\n[ -n "$KD_MODEL" ] || { echo "no model is configured for this node"; exit 2; }\n'
        + VENV
        + f'[ -x "$KD_WORKSPACE/venv/bin/vllm" ] || {PIP} vllm\n'
        'setsid "$KD_WORKSPACE/venv/bin/vllm" serve "$KD_MODEL" --host 127.0.0.1 '
        '--port "$KD_PORT" --api-key "$KD_TOKEN" '
        '> "$HOME/.kernodeck-inference.log" 2>&1 < /dev/null &\n'
    ),
}


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


def service_answer(preparation, record):
    answer = {"preparation": preparation, "status": record["status"], "log": record.get("log", "")}
    if preparation == "notebook":
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
    alive = record and (preparation not in SERVICES or port_answers(record["port"]))
    if record and record["status"] == "done" and alive:
        return service_answer(preparation, record)
    recipe = request.get("recipe") or RECIPES[preparation]
    if not isinstance(recipe, str) or "\x00" in recipe:
        raise AgentError("the recipe is malformed")
    record = record or {}
    record.setdefault("token", secrets.token_urlsafe(24))
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
    with open(log_path, "ab") as log:
        log.write(f"--- {now().isoformat()} {preparation}\n".encode())
        log.flush()
        try:
            done = subprocess.run(  # noqa: S603
                ["/bin/bash", "-c", recipe],
                user=entry.pw_uid,
                group=entry.pw_gid,
                extra_groups=[],
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
        while not port_answers(record["port"]):
            if time.monotonic() > deadline:
                record["status"] = "failed"
                state["prepared"][preparation] = record
                host.save(account, state)
                raise AgentError(
                    f"the {preparation} service did not answer on port {record['port']}"
                )
            time.sleep(0.2)
    record["status"] = "done"
    record["log"] = tail(log_path)
    state["prepared"][preparation] = record
    host.save(account, state)
    return service_answer(preparation, record)
