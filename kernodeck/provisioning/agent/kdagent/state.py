"""One agent run's settings and the rentals' state files, root's alone."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil

from . import devices
from .common import (
    ACCOUNT_RE,
    REFERENCE_RE,
    AgentError,
    write_file,
)


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
            fd = os.open(self.state_path(account), os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        with os.fdopen(fd) as handle:
            return json.load(handle)

    def take_id(self):
        """The next uid/gid of the agent's range, never handed out before on this node.

        The counter lives in the state folder (root's alone) and moves on before the number
        is used, so a crash half-way loses a number rather than giving it twice; numbers an
        account or group of the machine already holds are skipped.
        """
        path = os.path.join(self.state_dir, "ids.json")
        low, high = int(self.settings["uid_min"]), int(self.settings["uid_max"])
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd) as handle:
                number = max(low, int(json.load(handle)["next"]))
        except FileNotFoundError:
            number = low
        while number <= high and (_uid_taken(number) or _gid_taken(number)):
            number += 1
        if number > high:
            raise AgentError(f"the agent's uid range {low}-{high} is used up")
        write_file(path, json.dumps({"next": number + 1}), mode=0o600)
        return number

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

    # --- devices

    def device_path(self, backend, gpu):
        """The device node that grants access to GPU `gpu["index"]`."""
        return devices.device_path(self.root, backend, gpu)


def _uid_taken(number):
    try:
        pwd.getpwuid(number)
    except KeyError:
        return False
    return True


def _gid_taken(number):
    try:
        grp.getgrgid(number)
    except KeyError:
        return False
    return True
