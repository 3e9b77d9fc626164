"""Settings, names, the error type and the few file and process helpers every step uses."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import subprocess

DEFAULTS = {
    "root": "/",
    "home_base": "/home",
    "state_dir": "/var/lib/kernodeck/state",
    "prefix": "kd-",
    "tools_path": "",
    "recipe_timeout": 1800,
    "service_wait": 90,
    "kill_wait": 10,
    # Rental accounts' uids and gids: above systemd's container range, below 2^31, and
    # counted in the agent's state so that no number is ever handed out twice on a node.
    "uid_min": 1_900_000_000,
    "uid_max": 1_999_999_999,
    # The group owning the GPU devices every GPU process opens (nvidiactl, nvidia-uvm,
    # /dev/kfd...); active rental accounts are its members.
    "gpu_group": "kernodeck-gpu",
    # Where cgroup v2 is mounted; rentals' cgroups go under kernodeck/ in it.
    "cgroup_root": "/sys/fs/cgroup",
    # Shared temporary folders emptied of a rental's files at its end (/dev/mqueue: its
    # POSIX message queues; System V IPC objects are removed apart).
    "shared_dirs": ["/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue"],  # noqa: S108
}

REFERENCE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,23}$")
ACCOUNT_RE = re.compile(r"^[a-z][a-z0-9-]{1,31}$")
KEY_RE = re.compile(
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|"
    r"sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/=]{16,}"
    r"( [\x21-\x7e][\x20-\x7e]{0,200})?$"
)


class AgentError(Exception):
    """A refusal or failure explained in words an operator can act on."""


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
