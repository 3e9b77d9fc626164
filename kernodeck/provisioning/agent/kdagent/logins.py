"""Logins: a rental account's SSH session joins the rental's cgroup, so what the customer
runs by hand is limited and ended like its services.

sshd opens the PAM session in its privileged per-connection process, before it forks the
user's side; `pam_exec` runs `session` there as root with PAM_USER and PAM_TYPE set, and
the agent moves that parent process into the rental's cgroup: the shell and everything the
customer starts inherit it. One line at the end of /etc/pam.d/sshd (README, "Adding a
node"), AGENT being where the driver puts the agent (/var/lib/kernodeck/kernodeck_agent.pyz):

    session optional pam_exec.so quiet /usr/bin/python3 AGENT session

It reads the rental's state without the agent's lock (a long preparation must not hold up
a login) and writes nothing but `cgroup.procs`; an account that is not an active rental's
is left alone (the operator's own logins among them).
"""

from __future__ import annotations

from . import cgroups
from .common import ACCOUNT_RE


def pam_session(host, environ, parent):
    """Moves the login's sshd process `parent` into its rental's cgroup; says what it did."""
    if environ.get("PAM_TYPE") != "open_session":
        return {"joined": 0, "why": "not a session opening"}
    account = environ.get("PAM_USER") or ""
    if not account.startswith(host.settings["prefix"]) or not ACCOUNT_RE.fullmatch(account):
        return {"joined": 0, "why": "not a rental account"}
    state = host.load(account)
    if not state or state.get("status") != "active":
        return {"joined": 0, "why": "no active rental"}
    record = state.get("cgroup") or {}
    if not record.get("path"):
        return {"joined": 0, "why": record.get("reason") or "the rental has no cgroup"}
    return {"account": account, "joined": cgroups.join(record, parent)}
