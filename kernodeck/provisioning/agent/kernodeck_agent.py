#!/usr/bin/env python3
"""Kernodeck host agent: the machine work of a rental on one GPU host.

The control plane copies this one file to a node and runs it as root over SSH
(`python3 kernodeck_agent.py SUBCOMMAND < request.json`). It needs only the standard
library of the host's Python 3.9+. Every subcommand reads one JSON object on standard
input and prints one JSON object: `{"ok": true, ...}`, or `{"ok": false, "error": ...}`
with exit status 1. Every step is idempotent: running it again converges on the same
state (one account, one key set, one preparation token) instead of repeating it.

Settings come, in increasing priority, from built-in defaults, `agent.json` next to this
file, and command-line flags. `--root` is the folder that holds `dev/` (and `sys/` for
AMD render-node discovery), so tests can give the agent stand-in device files.

The agent only ever touches accounts it created itself: each has a state file under
`state_dir/rentals/`, and an existing account without one is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import grp
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time

AGENT_VERSION = "1"

DEFAULTS = {
    "root": "/",
    "home_base": "/home",
    "state_dir": "/var/lib/kernodeck/state",
    "prefix": "kd-",
    "tools_path": "",
    "recipe_timeout": 1800,
    "service_wait": 90,
    "kill_wait": 10,
}

REFERENCE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,23}$")
ACCOUNT_RE = re.compile(r"^[a-z][a-z0-9-]{1,31}$")
KEY_RE = re.compile(
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|"
    r"sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/=]{16,}"
    r"( [\x21-\x7e][\x20-\x7e]{0,200})?$"
)
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


class AgentError(Exception):
    """A refusal or failure explained in words an operator can act on."""


# --------------------------------------------------------------------------- parsers


def _mib(value, unit):
    """Converts a memory figure in `unit` to MiB (amd-smi's "MB" means MiB)."""
    number = float(value)
    unit = (unit or "MB").strip().upper()
    factors = {"B": 1 / 1048576, "KB": 1 / 1024, "MB": 1, "MIB": 1, "GB": 1024, "GIB": 1024}
    if unit not in factors:
        raise ValueError(f"unknown memory unit {unit!r}")
    return round(number * factors[unit])


def parse_nvidia_smi_csv(text):
    """Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits`.

    One line per GPU, fields separated by ", ", memory in MiB ("[N/A]" when unknown).
    """
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split(",")]
        if len(parts) < 4:
            raise ValueError(f"unexpected nvidia-smi line: {line!r}")
        index, uuid, memory = parts[0], parts[1], parts[-1]
        name = ", ".join(parts[2:-1])
        if not index.isdigit():
            raise ValueError(f"unexpected GPU index in nvidia-smi line: {line!r}")
        gpus.append(
            {
                "index": int(index),
                "uuid": uuid,
                "name": name,
                "memory_mib": int(float(memory)) if re.fullmatch(r"\d+(\.\d+)?", memory) else None,
            }
        )
    return sorted(gpus, key=lambda gpu: gpu["index"])


def _amd_rows(data):
    """amd-smi answers a list per GPU, or (newer releases) `{"gpu_data": [...]}`."""
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        return data["gpu_data"]
    if isinstance(data, list):
        return data
    raise ValueError("unexpected amd-smi JSON shape")


def _amd_memory(vram):
    if not isinstance(vram, dict):
        return None
    for key in ("size", "vram_size"):
        size = vram.get(key)
        if isinstance(size, dict) and "value" in size:
            return _mib(size["value"], size.get("unit"))
    if "vram_size_mb" in vram:
        return _mib(vram["vram_size_mb"], "MB")
    return None


def parse_amd_smi_json(static_text, list_text=None):
    """Parses `amd-smi static --json` (and optionally `amd-smi list --json` for UUIDs).

    Returns (gpus, driver_version).
    """
    listed = {}
    if list_text:
        for row in _amd_rows(json.loads(list_text)):
            listed[int(row["gpu"])] = row
    gpus, driver = [], None
    for row in _amd_rows(json.loads(static_text)):
        index = int(row["gpu"])
        asic = row.get("asic") or {}
        extra = listed.get(index, {})
        bus = row.get("bus") or {}
        drv = row.get("driver") or {}
        driver = driver or drv.get("version") or drv.get("driver_version")
        gpus.append(
            {
                "index": index,
                "uuid": extra.get("uuid") or asic.get("asic_serial") or "",
                "name": asic.get("market_name") or "",
                "memory_mib": _amd_memory(row.get("vram")),
                "bdf": extra.get("bdf") or bus.get("bdf") or "",
            }
        )
    return sorted(gpus, key=lambda gpu: gpu["index"]), driver


def parse_rocm_smi_json(text):
    """Parses `rocm-smi --showproductname --showmeminfo vram --showuniqueid --showbus --json`.

    Cards are keys `card0`, `card1`...; memory is in bytes. Returns (gpus, driver_version).
    """
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("unexpected rocm-smi JSON shape")
    system = data.get("system") if isinstance(data.get("system"), dict) else {}
    cards = {k: v for k, v in data.items() if re.fullmatch(r"card\d+", k)}
    cards.update({k: v for k, v in system.items() if re.fullmatch(r"card\d+", k)})
    gpus, driver = [], system.get("Driver version")
    for key, card in cards.items():
        driver = driver or card.get("Driver version")
        total = card.get("VRAM Total Memory (B)")
        gpus.append(
            {
                "index": int(key[4:]),
                "uuid": card.get("Unique ID", ""),
                "name": card.get("Card series") or card.get("Card model") or "",
                "memory_mib": _mib(total, "B") if total not in (None, "") else None,
                "bdf": card.get("PCI Bus", ""),
            }
        )
    return sorted(gpus, key=lambda gpu: gpu["index"]), driver


# --------------------------------------------------------------------------- helpers


def now():
    return dt.datetime.now(dt.timezone.utc)  # noqa: UP017 (the host may run Python 3.9)


def run(argv, *, check=True, timeout=60, env=None):
    """Runs a host command; a failure becomes an AgentError with its own message."""
    try:
        done = subprocess.run(  # noqa: S603 (fixed argument lists, never a shell)
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except FileNotFoundError as exc:
        raise AgentError(f"{argv[0]} is not installed on this host") from exc
    except subprocess.TimeoutExpired as exc:
        raise AgentError(f"{argv[0]} did not finish within {timeout} s") from exc
    if check and done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise AgentError(
            f"{' '.join(argv[:2])} failed: {message[-1] if message else done.returncode}"
        )
    return done


def write_file(path, text, *, mode, uid=0, gid=0):
    """Writes atomically with the given owner and mode (never follows a planted link)."""
    tmp = f"{path}.kd-tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chown(tmp, uid, gid)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def ensure_dir(path, *, mode, uid=0, gid=0):
    if os.path.islink(path):
        os.unlink(path)
    os.makedirs(path, exist_ok=True)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


class Host:
    """One agent run: settings, the state folder, and the host's accounts."""

    def __init__(self, settings):
        self.settings = settings
        self.root = settings["root"]
        self.state_dir = settings["state_dir"]
        self.rentals_dir = os.path.join(self.state_dir, "rentals")
        self.logs_dir = os.path.join(self.state_dir, "logs")
        for path in (self.state_dir, self.rentals_dir, self.logs_dir):
            os.makedirs(path, mode=0o700, exist_ok=True)

    # --- names and state

    def account_for(self, reference):
        if not isinstance(reference, str) or not REFERENCE_RE.fullmatch(reference):
            raise AgentError("the order reference is missing or malformed")
        # The same login as the control plane's RentalSpec.user: KD-7Q4M-X2PB -> kd-7q4mx2pb.
        account = self.settings["prefix"] + reference.lower().replace("kd-", "").replace("-", "")
        if not ACCOUNT_RE.fullmatch(account):
            raise AgentError(f"{account!r} is not a valid account name")
        return account

    def state_path(self, account):
        return os.path.join(self.rentals_dir, account + ".json")

    def load(self, account):
        try:
            with open(self.state_path(account)) as handle:
                return json.load(handle)
        except FileNotFoundError:
            return None

    def save(self, account, state):
        write_file(self.state_path(account), json.dumps(state, sort_keys=True), mode=0o600)

    def all_states(self):
        states = []
        for name in sorted(os.listdir(self.rentals_dir)):
            if name.endswith(".json"):
                state = self.load(name[:-5])
                if state:
                    states.append(state)
        return states

    def home_for(self, account):
        return os.path.join(self.settings["home_base"], account)

    # --- tools

    def tool_env(self):
        env = dict(os.environ)
        extra = self.settings.get("tools_path") or ""
        env["PATH"] = ":".join(p for p in (extra, env.get("PATH", "/usr/bin:/bin")) if p)
        return env

    def which(self, name):
        return shutil.which(name, path=self.tool_env()["PATH"])

    # --- devices

    def device_path(self, backend, gpu):
        """The device node that grants access to GPU `gpu["index"]`."""
        if backend == "cuda":
            return os.path.join(self.root, "dev", f"nvidia{int(gpu['index'])}")
        bdf = gpu.get("bdf") or ""
        drm = os.path.join(self.root, "sys", "bus", "pci", "devices", bdf, "drm")
        if bdf and os.path.isdir(drm):
            for name in sorted(os.listdir(drm)):
                if name.startswith("renderD"):
                    return os.path.join(self.root, "dev", "dri", name)
        return os.path.join(self.root, "dev", "dri", f"renderD{128 + int(gpu['index'])}")


# --------------------------------------------------------------------------- inventory


def collect_inventory(host):
    """GPUs, driver version and free disk of the workspace volume."""
    env = host.tool_env()
    gpus, driver, backend = [], None, None
    if host.which("nvidia-smi"):
        done = run(
            [
                host.which("nvidia-smi"),
                "--query-gpu=index,uuid,name,memory.total",
                "--format=csv,noheader,nounits",
            ],
            env=env,
        )
        gpus, backend = parse_nvidia_smi_csv(done.stdout), "cuda"
        version = run(
            [host.which("nvidia-smi"), "--query-gpu=driver_version", "--format=csv,noheader"],
            env=env,
            check=False,
        )
        driver = version.stdout.strip().splitlines()[0] if version.stdout.strip() else None
    elif host.which("amd-smi"):
        static = run([host.which("amd-smi"), "static", "--json"], env=env)
        listed = run([host.which("amd-smi"), "list", "--json"], env=env, check=False)
        gpus, driver = parse_amd_smi_json(static.stdout, listed.stdout or None)
        backend = "rocm"
    elif host.which("rocm-smi"):
        done = run(
            [
                host.which("rocm-smi"),
                "--showproductname",
                "--showmeminfo",
                "vram",
                "--showuniqueid",
                "--showbus",
                "--showdriverversion",
                "--json",
            ],
            env=env,
        )
        gpus, driver = parse_rocm_smi_json(done.stdout)
        backend = "rocm"
    for gpu in gpus:
        gpu["device"] = host.device_path(backend, gpu) if backend else None
    usage = shutil.disk_usage(host.settings["home_base"])
    return {
        "backend": backend,
        "gpus": gpus,
        "driver_version": driver,
        "disk": {
            "path": host.settings["home_base"],
            "free_bytes": usage.free,
            "total_bytes": usage.total,
        },
    }


def cmd_inventory(host, request):
    inventory = collect_inventory(host)
    inventory["hostname"] = socket.gethostname()
    inventory["agent_version"] = AGENT_VERSION
    inventory["rentals"] = [
        {
            "account": s["account"],
            "reference": s["reference"],
            "status": s["status"],
            "gpus": s["gpus"],
        }
        for s in host.all_states()
    ]
    return inventory


# --------------------------------------------------------------------------- accounts


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


def env_lines(backend, gpus):
    visible = ",".join(str(i) for i in gpus)
    if backend == "cuda":
        pairs = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": visible}
    else:
        pairs = {"HIP_VISIBLE_DEVICES": visible, "ROCR_VISIBLE_DEVICES": visible}
    return pairs


def grant_devices(host, backend, gpus, gid, *, inventory_gpus):
    by_index = {g["index"]: g for g in inventory_gpus}
    for index in gpus:
        path = host.device_path(backend, by_index.get(index, {"index": index}))
        if not os.path.exists(path):
            raise AgentError(f"GPU {index} has no device file {path}")
        os.chown(path, 0, gid, follow_symlinks=False)
        os.chmod(path, 0o660)


def revoke_devices(host, state):
    """Hands the rental's device nodes back to root alone."""
    for gpu in state.get("devices", []):
        path = gpu["path"]
        if os.path.exists(path) and not os.path.islink(path):
            os.chown(path, 0, 0)
            os.chmod(path, 0o660)


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


# --------------------------------------------------------------------------- preparations


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


# --------------------------------------------------------------------------- the end


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


COMMANDS = {
    "inventory": cmd_inventory,
    "create": cmd_create,
    "prepare": cmd_prepare,
    "extend": cmd_extend,
    "status": cmd_status,
    "destroy": cmd_destroy,
}


def load_settings(args):
    settings = dict(DEFAULTS)
    config = args.config or os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent.json")
    if os.path.isfile(config):
        with open(config) as handle:
            loaded = json.load(handle)
        settings.update({k: v for k, v in loaded.items() if k in DEFAULTS})
    for key in ("root", "home_base", "state_dir", "prefix"):
        value = getattr(args, key)
        if value:
            settings[key] = value
    return settings


def main(argv=None, stdin=None, stdout=None):
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    parser = argparse.ArgumentParser(description="Kernodeck host agent")
    parser.add_argument("command", choices=[*sorted(COMMANDS), "version"])
    parser.add_argument("--root", help="folder holding dev/ (stand-in devices in tests)")
    parser.add_argument("--home-base", dest="home_base")
    parser.add_argument("--state-dir", dest="state_dir")
    parser.add_argument("--prefix")
    parser.add_argument("--config")
    args = parser.parse_args(argv)
    if args.command == "version":
        with open(os.path.abspath(__file__), "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
        stdout.write(json.dumps({"ok": True, "version": AGENT_VERSION, "sha256": digest}) + "\n")
        return 0
    try:
        raw = "" if stdin.isatty() else stdin.read(1_000_000)
        request = json.loads(raw) if raw.strip() else {}
        if not isinstance(request, dict):
            raise AgentError("the request must be a JSON object")
        settings = load_settings(args)
        host = Host(settings)
        with open(os.path.join(host.state_dir, "agent.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if args.command != "destroy":
                sweep(host)
            answer = COMMANDS[args.command](host, request)
    except AgentError as exc:
        stdout.write(json.dumps({"ok": False, "error": str(exc), "command": args.command}) + "\n")
        return 1
    except (ValueError, OSError) as exc:
        message = f"{type(exc).__name__}: {exc}"
        stdout.write(json.dumps({"ok": False, "error": message, "command": args.command}) + "\n")
        return 1
    answer = {"ok": True, "command": args.command, **answer}
    stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
