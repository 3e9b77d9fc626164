"""The command line: settings, the lock, one JSON request in and one JSON answer out."""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import sys

from . import AGENT_VERSION
from .commands import COMMANDS
from .common import (
    DEFAULTS,
    AgentError,
)
from .ending import sweep
from .logins import pam_session
from .state import Host


def agent_file():
    """The file the node runs: the zipapp archive (or, from a checkout, the script)."""
    archive = getattr(globals().get("__loader__"), "archive", None)
    return archive or os.path.abspath(sys.argv[0])


def load_settings(args):
    settings = dict(DEFAULTS)
    config = args.config or os.path.join(os.path.dirname(agent_file()), "agent.json")
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
    parser.add_argument("command", choices=[*sorted(COMMANDS), "session", "version"])
    parser.add_argument("--root", help="folder holding dev/ (stand-in devices in tests)")
    parser.add_argument("--home-base", dest="home_base")
    parser.add_argument("--state-dir", dest="state_dir")
    parser.add_argument("--prefix")
    parser.add_argument("--config")
    args = parser.parse_args(argv)
    if args.command == "version":
        with open(agent_file(), "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
        stdout.write(json.dumps({"ok": True, "version": AGENT_VERSION, "sha256": digest}) + "\n")
        return 0
    if args.command == "session":  # from pam_exec at a login: no request, no lock
        try:
            answer = pam_session(Host(load_settings(args)), os.environ, os.getppid())
        except (ValueError, OSError) as exc:
            answer = {"joined": 0, "why": f"{type(exc).__name__}: {exc}"}
        stdout.write(json.dumps({"ok": True, "command": "session", **answer}) + "\n")
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
