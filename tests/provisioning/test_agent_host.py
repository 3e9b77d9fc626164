"""The host agent run as root on this machine, without SSH: accounts, keys, devices, the end.

Everything the agent makes is contained: its device folder, homes and state live in a
temporary folder, and its accounts carry the prefix `kdt<pid>y-`, removed after each test
(also when it failed). The machine's own accounts are never touched.
"""

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.provisioning.agent_loader import AGENT_PATH
from tests.sshhosts import _kill_uid, ssh_lab_unavailable

ED25519 = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk9cTq8lJ0bq6n0d0cB3m6m0p6mNlq5Hk3Yk0cJ3Qz1 ada@laptop"
)
ED25519_B = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF1w4qv8y6o0w2H0b6m8Vq3cT0nZk5Yb1cQ9x2Lr7Pa4 ada@desk"
)

AMD_SMI_STANDIN = """#!/usr/bin/env python3
import json, sys
static = {"gpu_data": [{"gpu": i, "asic": {"market_name": "AMD Instinct MI300X"},
          "bus": {"bdf": "0000:%02x:00.0" % (12 + i)},
          "vram": {"type": "HBM3", "size": {"value": 196592, "unit": "MB"}},
          "driver": {"name": "amdgpu", "version": "6.10.5"}} for i in range(2)]}
listed = [{"gpu": i, "bdf": "0000:%02x:00.0" % (12 + i), "uuid": "uuid-%d" % i} for i in range(2)]
print(json.dumps(static if sys.argv[1] == "static" else listed))
"""


class AgentHost:
    """A contained place for the agent: its config, devices, homes, state and prefix."""

    def __init__(self, vendor="nvidia"):
        self.base = Path(tempfile.mkdtemp(prefix=f"kdagent-{os.getpid()}-", dir="/run"))
        self.base.chmod(0o755)
        self.prefix = f"kdt{os.getpid()}y-"
        (self.base / "dev" / "dri").mkdir(parents=True)
        (self.base / "home").mkdir()
        (self.base / "tools").mkdir()
        (self.base / "tmp").mkdir(mode=0o1777)
        (self.base / "tmp").chmod(0o1777)
        if vendor == "nvidia":
            for i in range(4):
                (self.base / "dev" / f"nvidia{i}").write_text(f"gpu {i}\n")
                (self.base / "dev" / f"nvidia{i}").chmod(0o600)
            smi = self.base / "tools" / "nvidia-smi"
            smi.write_text(
                '#!/bin/sh\ncase "$*" in *driver_version*) printf \'570.1\\n570.1\\n570.1\\n'
                '570.1\\n\';; *) for i in 0 1 2 3; do echo "$i, GPU-$i, NVIDIA H100, 81559"; '
                "done;; esac\n"
            )
        else:
            # The kernel numbers render nodes in its own order: GPU i (PCI 0000:0c+i:00.0)
            # is renderD{131 - i} and card{1 - i}, found through sysfs, not by index.
            for i in range(2):
                drm = self.base / "sys" / "bus" / "pci" / "devices" / f"0000:{12 + i:02x}:00.0"
                (drm / "drm" / f"renderD{131 - i}").mkdir(parents=True)
                (drm / "drm" / f"card{1 - i}").mkdir()
                for name in (f"renderD{131 - i}", f"card{1 - i}"):
                    (self.base / "dev" / "dri" / name).write_text(f"gpu {i}\n")
                    (self.base / "dev" / "dri" / name).chmod(0o600)
            (self.base / "dev" / "kfd").write_text("kfd\n")
            (self.base / "dev" / "kfd").chmod(0o600)
            smi = self.base / "tools" / "amd-smi"
            smi.write_text(AMD_SMI_STANDIN)
        smi.chmod(0o755)
        self.config = self.base / "agent.json"
        self.config.write_text(
            json.dumps(
                {
                    "root": str(self.base),
                    "home_base": str(self.base / "home"),
                    "state_dir": str(self.base / "state"),
                    "prefix": self.prefix,
                    "gpu_group": self.prefix + "gpu",
                    "tools_path": str(self.base / "tools"),
                    "kill_wait": 5,
                    "service_wait": 3,
                    "shared_dirs": [str(self.base / "tmp")],
                    # The machine's own cgroups stay untouched here: the SSH test hosts
                    # (test_tenant_isolation) get hierarchies of their own for that.
                    "cgroup_root": str(self.base / "no-cgroups"),
                }
            )
        )

    def run(self, command, request=None, raw=None):
        done = subprocess.run(
            [sys.executable, str(AGENT_PATH), command, "--config", str(self.config)],
            input=raw if raw is not None else json.dumps(request or {}),
            capture_output=True,
            text=True,
            timeout=60,
        )
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        assert (done.returncode == 0) == answer["ok"], done.stderr
        return answer

    def account(self, reference):
        return self.prefix + reference.lower().replace("kd-", "").replace("-", "")

    def accounts(self):
        return sorted(e.pw_name for e in pwd.getpwall() if e.pw_name.startswith(self.prefix))

    def close(self):
        for name in self.accounts():
            _kill_uid(pwd.getpwnam(name).pw_uid)
            subprocess.run(["userdel", name], capture_output=True, check=False)
            subprocess.run(["groupdel", name], capture_output=True, check=False)
        subprocess.run(["groupdel", self.prefix + "gpu"], capture_output=True, check=False)
        shutil.rmtree(self.base, ignore_errors=True)


def shadow_password(account):
    for line in Path("/etc/shadow").read_text().splitlines():
        name, password, *_ = line.split(":")
        if name == account:
            return password
    raise KeyError(account)


@pytest.fixture
def agent_host():
    reason = ssh_lab_unavailable()
    if reason:
        pytest.skip(reason)
    host = AgentHost()
    yield host
    host.close()


def create(host, reference="KD-AAAA-BBBB", gpus=(1, 2), keys=(ED25519,)):
    return host.run(
        "create",
        {"reference": reference, "backend": "cuda", "gpus": list(gpus), "keys": list(keys)},
    )


def test_create_twice_gives_one_account_one_key_set_and_only_its_devices(agent_host):
    first = create(agent_host)
    second = create(agent_host)
    account = agent_host.account("KD-AAAA-BBBB")

    assert (first["changed"], second["changed"]) == (True, False)
    assert first["account"] == second["account"] == account
    assert agent_host.accounts() == [account]
    entry = pwd.getpwnam(account)
    home = Path(entry.pw_dir)
    assert (home / ".ssh" / "authorized_keys").read_text() == ED25519 + "\n"
    assert (home / ".kernodeck" / "env").read_text() == (
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID\nexport CUDA_VISIBLE_DEVICES=1,2\n"
    )
    hooks = [line for line in (home / ".bashrc").read_text().splitlines() if "kernodeck" in line]
    assert len(hooks) == 1
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for i in range(4):
        info = (agent_host.base / "dev" / f"nvidia{i}").stat()
        expected = (entry.pw_gid, 0o660) if i in (1, 2) else (0, 0o600)
        assert (info.st_gid, stat.S_IMODE(info.st_mode)) == expected
    assert shadow_password(account) == "*"  # no password, not locked

    # New keys replace the set; nothing is appended twice.
    create(agent_host, keys=(ED25519_B, ED25519, ED25519_B))
    assert (home / ".ssh" / "authorized_keys").read_text() == f"{ED25519_B}\n{ED25519}\n"


def test_a_gpu_held_by_another_rental_or_a_foreign_account_is_refused(agent_host):
    create(agent_host)
    taken = create(agent_host, reference="KD-CCCC-DDDD", gpus=(2, 3))
    assert taken == {
        "ok": False,
        "error": "GPU 2 is held by another rental on this host",
        "command": "create",
    }
    foreign = agent_host.account("KD-EEEE-FFFF")
    subprocess.run(["useradd", "--no-create-home", foreign], check=True)
    refused = create(agent_host, reference="KD-EEEE-FFFF", gpus=(3,))
    assert refused["error"] == (
        f"the account {foreign} exists and was not made by Kernodeck; refusing to touch it"
    )
    assert not (agent_host.base / "state" / "rentals" / f"{foreign}.json").exists()
    assert stat.S_IMODE((agent_host.base / "dev" / "nvidia3").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "request_body",
    [
        {"reference": "KD-AAAA-BBBB", "backend": "cuda", "gpus": ["٣"], "keys": [ED25519]},
        {"reference": "KD-AAAA-BBBB", "backend": "cuda", "gpus": [True], "keys": [ED25519]},
        {"reference": "KD-AAAA-BBBB", "backend": "cuda", "gpus": [-1], "keys": [ED25519]},
        {"reference": "KD-AAAA-BBBB", "backend": "cuda", "gpus": [9], "keys": [ED25519]},
        {"reference": "KD-AAAA-BBBB", "backend": "cuda", "gpus": [1, 1], "keys": [ED25519]},
        {"reference": "../../etc", "backend": "cuda", "gpus": [1], "keys": [ED25519]},
        {"reference": "KD-AAAA\x00", "backend": "cuda", "gpus": [1], "keys": [ED25519]},
        {"reference": "KD-AAAA-BBBB", "backend": "metal", "gpus": [1], "keys": [ED25519]},
        {"reference": "KD-AAAA-BBBB", "backend": "cuda", "gpus": [1], "keys": []},
        {
            "reference": "KD-AAAA-BBBB",
            "backend": "cuda",
            "gpus": [1],
            "keys": [ED25519 + "\n" + ED25519_B],
        },
        {
            "reference": "KD-AAAA-BBBB",
            "backend": "cuda",
            "gpus": [1],
            "keys": ['command="sh" ' + ED25519],
        },
        {"reference": "KD-AAAA-BBBB", "backend": "cuda", "gpus": [1], "keys": [ED25519 + "\x00"]},
    ],
)
def test_nonsense_requests_are_refused_and_change_nothing(agent_host, request_body):
    answer = agent_host.run("create", request_body)
    assert answer["ok"] is False and answer["error"]
    assert agent_host.accounts() == []
    assert all(
        stat.S_IMODE((agent_host.base / "dev" / f"nvidia{i}").stat().st_mode) == 0o600
        for i in range(4)
    )


@pytest.mark.parametrize("raw", ["[1, 2]", "not json", '{"reference": 3}', "\x00"])
def test_a_request_that_is_not_an_object_is_an_error_not_a_crash(agent_host, raw):
    answer = agent_host.run("create", raw=raw)
    assert answer["ok"] is False


def test_destroy_locks_removes_keys_and_devices_and_keeps_the_workspace_for_the_retention(
    agent_host,
):
    create(agent_host)
    account = agent_host.account("KD-AAAA-BBBB")
    home = Path(pwd.getpwnam(account).pw_dir)
    (home / "workspace" / "results.txt").write_text("42\n")
    sleeper = subprocess.Popen(["runuser", "-u", account, "--", "sleep", "300"])

    ended = agent_host.run("destroy", {"reference": "KD-AAAA-BBBB", "retention_hours": 2})
    sleeper.wait(timeout=10)

    assert (ended["changed"], ended["status"]) == (True, "ended")
    assert sleeper.returncode == 137  # runuser reports its child's SIGKILL
    assert shadow_password(account).startswith("!")
    assert pwd.getpwnam(account).pw_shell == "/usr/sbin/nologin"
    assert not (home / ".ssh" / "authorized_keys").exists()
    assert (home / "workspace" / "results.txt").read_text() == "42\n"
    assert all((agent_host.base / "dev" / f"nvidia{i}").stat().st_gid == 0 for i in range(4))
    again = agent_host.run("destroy", {"reference": "KD-AAAA-BBBB", "retention_hours": 2})
    assert (again["changed"], again["status"]) == (False, "ended")
    assert create(agent_host)["error"] == "the rental KD-AAAA-BBBB has already ended on this host"

    # When the retention is over, the next run of the agent wipes account and workspace.
    state_path = agent_host.base / "state" / "rentals" / f"{account}.json"
    state = json.loads(state_path.read_text())
    state["wipe_after"] = "2000-01-01T00:00:00+00:00"
    state_path.write_text(json.dumps(state))
    status = agent_host.run("status", {"reference": "KD-AAAA-BBBB"})
    assert (status["status"], status["exists"]) == ("wiped", False)
    assert agent_host.accounts() == []
    assert not home.exists()


def test_destroy_of_an_unknown_rental_touches_nothing(agent_host):
    answer = agent_host.run("destroy", {"reference": "KD-ZZZZ-ZZZZ"})
    assert (answer["ok"], answer["changed"], answer["status"]) == (True, False, "unknown")


def test_amd_hosts_get_hip_and_rocr_variables_and_their_render_nodes():
    reason = ssh_lab_unavailable()
    if reason:
        pytest.skip(reason)
    host = AgentHost(vendor="amd")
    try:
        inventory = host.run("inventory")
        assert (inventory["backend"], inventory["driver_version"]) == ("rocm", "6.10.5")
        assert [(g["index"], g["uuid"], g["memory_mib"]) for g in inventory["gpus"]] == [
            (0, "uuid-0", 196592),
            (1, "uuid-1", 196592),
        ]
        answer = host.run(
            "create",
            {"reference": "KD-AMDA-0001", "backend": "rocm", "gpus": [1], "keys": [ED25519]},
        )
        assert answer["environment"] == {"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "1"}
        gid = pwd.getpwnam(answer["account"]).pw_gid
        render = host.base / "dev" / "dri"
        for name, owner in (("renderD130", gid), ("card0", gid), ("renderD131", 0), ("card1", 0)):
            assert (render / name).stat().st_gid == owner, name
        # /dev/kfd, which every ROCm process opens, belongs to the GPU group it joined.
        shared = grp.getgrnam(host.prefix + "gpu")
        assert answer["account"] in shared.gr_mem
        kfd = (host.base / "dev" / "kfd").stat()
        assert (kfd.st_gid, stat.S_IMODE(kfd.st_mode)) == (shared.gr_gid, 0o660)
        assert host.run("destroy", {"reference": "KD-AMDA-0001"})["ok"]
        assert (render / "renderD130").stat().st_gid == 0
        assert answer["account"] not in grp.getgrnam(host.prefix + "gpu").gr_mem
    finally:
        host.close()


def test_the_default_python_preparation_makes_a_venv_owned_by_the_account_once(agent_host):
    create(agent_host)
    account = agent_host.account("KD-AAAA-BBBB")
    request = {"reference": "KD-AAAA-BBBB", "preparation": "python"}

    first = agent_host.run("prepare", request)
    second = agent_host.run("prepare", request)

    assert (first["status"], second["status"]) == ("done", "done")
    venv_python = Path(pwd.getpwnam(account).pw_dir) / "workspace" / "venv" / "bin" / "python"
    assert venv_python.exists()
    assert venv_python.parent.stat().st_uid == pwd.getpwnam(account).pw_uid
    log = agent_host.base / "state" / "logs" / f"{account}-python.log"
    assert log.read_text().count(" python\n") == 1  # the second run did not run it again


def test_a_failing_recipe_answers_its_last_line_and_a_silent_service_is_an_error(agent_host):
    create(agent_host)
    failed = agent_host.run(
        "prepare",
        {
            "reference": "KD-AAAA-BBBB",
            "preparation": "pytorch",
            "recipe": (
                "echo fetching wheels\necho 'no matching distribution for torch' >&2\nexit 3\n"
            ),
        },
    )
    assert failed["error"] == (
        "the pytorch preparation failed (exit 3): no matching distribution for torch"
    )
    silent = agent_host.run(
        "prepare",
        {"reference": "KD-AAAA-BBBB", "preparation": "notebook", "recipe": "true"},
    )
    assert silent["ok"] is False
    assert silent["error"].startswith("the notebook service did not answer on port ")
    state = json.loads(
        (
            agent_host.base / "state" / "rentals" / f"{agent_host.account('KD-AAAA-BBBB')}.json"
        ).read_text()
    )
    assert {k: v["status"] for k, v in state["prepared"].items()} == {
        "pytorch": "failed",
        "notebook": "failed",
    }


def test_a_recipe_runs_as_the_account_with_its_gpus_and_never_as_root(agent_host):
    create(agent_host)
    answer = agent_host.run(
        "prepare",
        {
            "reference": "KD-AAAA-BBBB",
            "preparation": "python",
            "recipe": 'echo "$(id -un) $CUDA_VISIBLE_DEVICES $KD_WORKSPACE" > "$KD_WORKSPACE/who"',
        },
    )
    assert answer["status"] == "done"
    account = agent_host.account("KD-AAAA-BBBB")
    home = Path(pwd.getpwnam(account).pw_dir)
    assert (home / "workspace" / "who").read_text() == f"{account} 1,2 {home}/workspace\n"
