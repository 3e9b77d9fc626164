"""One agent run's settings and the rentals' state files, root's alone."""

from __future__ import annotations

import json
import os
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

    # --- devices

    def device_path(self, backend, gpu):
        """The device node that grants access to GPU `gpu["index"]`."""
        return devices.device_path(self.root, backend, gpu)
