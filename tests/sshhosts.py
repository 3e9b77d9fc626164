"""Real SSH test hosts: Debian's sshd, each in its own network namespace.

    with SshLab(hosts=2, gpus=4) as lab:
        host = lab.hosts[0]
        host.address, host.port        # where its sshd listens
        host.agent_dir                 # where the control plane copies the agent
        lab.operator_key_path          # the operator's private key (Ed25519)
        host.cut(); host.restore()     # take its link down and up again
        host.rotate_host_key()         # a new host key, as after a reinstall

Each host gets a namespace `kdssh<pid>h<i>` with a veth pair (the host end in the root
namespace), a /30 inside the lab's own /27 of 10.0.0.0/8 (derived from the test process id),
its own host key, the
operator key for root (through a `Match User root` block, so the machine's own root keys are
never read or changed), GPU device files under its agent `--root` that are real character
devices with NVIDIA's numbers (`nvidiaN` 195:N, `nvidiactl` 195:255, `nvidia-modeset`
195:254, `nvidia-uvm` 235:0 and `nvidia-uvm-tools` 235:1; with no driver loaded, opening one
fails with ENXIO once permission is granted and with EACCES before), and an `nvidia-smi`
stand-in that prints the documented CSV. Its sshd (and so everything a login or the agent
starts) runs in its own mount, PID, UTS and IPC namespaces (`unshare`) with private tmpfs
`/tmp`, `/var/tmp` and `/dev/shm`, so tenants of one host share those as on a real node and
nothing of the machine's (and a fresh /dev/mqueue where the machine has one);
`host.node_path("/tmp")` is that folder seen from outside. Each host also gets cgroup
hierarchies of its own: a folder per host below the test's own cgroup in each hierarchy
the agent uses (v2, or v1 cpu and memory plus v2 `unified` on a hybrid machine; at the top
of v2 where it carries the controllers), mounted as the host's `/sys/fs/cgroup/...` with
the host's processes in its `node` child, as a container's delegated cgroup (where that
cannot be, `lab.cgroups_unavailable` says why). Each
host also has its own `/etc`: a copy of the machine's, bind-mounted over it, so its account
database is its own (`host.account(name)`, `host.group(name)` read it) and Debian's stock
sshd runs with PAM on, as on a real node. Two hosts, or two labs run side by side by test
workers, never write one `/etc/passwd`; their agents take uids from ranges of their own, so
no process of one host's tenant carries the uid of another's. The rest of the filesystem
is the machine's own: every account the agent creates carries the prefix `kdt<pid>x-`, and
teardown removes those accounts, their processes, the namespaces, the links and the files,
also after a failed test. Where network namespaces cannot be made, the same servers listen
on loopback ports (with the machine's `/etc`), and `cut()` stops the server instead.
Without root or sshd the tests skip with that reason.

Nothing meant for a test host can leave by the default route: before the first host exists
the lab adds an `unreachable` route for its whole /27 (removed after the last host is gone),
and each host end ignores its connected route while the link is down. `cut()` downs the
node-side end of the veth, so the host's address falls to the catch-all and connections fail
at once with "No route to host", whatever state the links are in.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernodeck.provisioning.agent import ARCHIVE_NAME as AGENT_NAME

SSHD = "/usr/sbin/sshd"
LAB_PARENT = "/run"

NVIDIA_SMI_STANDIN = """#!/usr/bin/env python3
# Stand-in for nvidia-smi on a test host: prints the documented CSV for the GPUs listed in
# gpus.json beside it (index, uuid, name, memory.total in MiB; driver_version on request;
# each GPU's use now: utilisation %, memory used, temperature, power, from its "use").
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
gpus = json.load(open(os.path.join(here, "gpus.json")))
args = " ".join(sys.argv[1:])
if "--query-gpu=driver_version" in args:
    for _ in gpus["gpus"]:
        print(gpus["driver"])
elif "--query-gpu=index,uuid,name,memory.total" in args and "nounits" in args:
    for g in gpus["gpus"]:
        print(f"{g['index']}, {g['uuid']}, {g['name']}, {g['memory_mib']}")
elif "utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw" in args:
    for g in gpus["gpus"]:
        u = {"util": 0, "used": 1, "temp": 31, "power": "68.52", **g.get("use", {})}
        print(f"{g['index']}, {u['util']}, {u['used']}, {g['memory_mib']}, {u['temp']}, "
              f"{u['power']}")
else:
    sys.exit("unsupported stand-in call: " + args)
"""


# NVIDIA's shared devices as the driver makes them with NVreg_DeviceFileMode=0660 and
# NVreg_DeviceFileGID=0 (nvidia-uvm's major is dynamic on a real node).
CONTROL_DEVICES = {
    "nvidiactl": (195, 255),
    "nvidia-modeset": (195, 254),
    "nvidia-uvm": (235, 0),
    "nvidia-uvm-tools": (235, 1),
}

# Run by sh as the first process of the host's own namespaces, then replaced by sshd:
# `kdnode ETC NAME ARGV...` (ETC: the host's copy of /etc, bind-mounted over the machine's).
NODE_INIT = (
    "set -e; for d in /tmp /var/tmp /dev/shm; do "
    'mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m kdnode "$d"; done; '
    "if [ -d /dev/mqueue ]; then mount -t mqueue kdnode /dev/mqueue; fi; "
    'if [ "$1" != /etc ]; then mount --bind "$1" /etc; fi; shift; '
    'hostname "$1"; shift; '
    # `TYPE:OPTIONS:FOLDER:MOUNT ...` (or `-`): the lab's cgroup FOLDER of a hierarchy (its
    # filesystem TYPE and OPTIONS) becomes the host's hierarchy at MOUNT (`ip netns exec`
    # left a bare /sys; a tmpfs holds the v1 mount points as on a hybrid machine).
    'if [ "$1" != - ]; then mkdir /tmp/.kdcg; case " $1 " in *":/sys/fs/cgroup "*) ;; '
    "*) mount -t tmpfs -o mode=755 kdcg /sys/fs/cgroup;; esac; for spec in $1; do "
    "t=${spec%%:*}; r=${spec#*:}; o=${r%%:*}; r=${r#*:}; sub=${r%%:*}; dst=${r#*:}; "
    'if [ "$t" = cgroup2 ]; then mount -t cgroup2 kdcg /tmp/.kdcg; '
    'else mount -t cgroup -o "$o" kdcg /tmp/.kdcg; fi; mkdir -p "$dst"; '
    'mount --bind "/tmp/.kdcg$sub" "$dst"; umount /tmp/.kdcg; done; rmdir /tmp/.kdcg; fi; '
    'shift; exec "$@"'
)

# Run before the host's namespaces are made: `kdjoin PROCS... -- ARGV`, each PROCS the
# cgroup.procs of a lab folder's `node` child, where the host's own processes then run (the
# agent makes `kernodeck` beside it: a populated cgroup v2 could not give it controllers).
CGROUP_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift; exec "$@"'

# The account database of a host, copied back between tests (its accounts, groups, hashes).
ACCOUNT_FILES = ("passwd", "group", "shadow", "gshadow")

# Each host's agent takes uids from a range of its own: a block per (lab, host) of the range
# below 2**31, from the test process id, so hosts of labs that run side by side never share
# a uid (the kernel is one; a uid names the same owner of files and processes everywhere).
UID_BASE, UID_BLOCK = 1_900_000_000, 1_000


# `kd-open PATH`: exits 0 when the caller may open PATH read-write (a device with no driver
# behind it answers ENXIO only after the permission check passed), 1 when refused.
OPEN_PROBE = """#!/usr/bin/env python3
import errno, os, sys
try:
    os.close(os.open(sys.argv[1], os.O_RDWR))
except OSError as exc:
    sys.exit(0 if exc.errno == errno.ENXIO else 1)
"""


def _mknod(path: Path, major: int, minor: int, mode: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.mknod(path, mode | stat.S_IFCHR, os.makedev(major, minor))
    os.chown(path, 0, 0)
    path.chmod(mode)


def ssh_lab_unavailable() -> str | None:
    """Why real SSH test hosts cannot run here, or None."""
    if os.geteuid() != 0:
        return "the SSH test hosts need root (accounts, namespaces, sshd)"
    if not os.access(SSHD, os.X_OK):
        return "the SSH test hosts need Debian's openssh-server (/usr/sbin/sshd)"
    for tool in ("ssh", "ssh-keygen", "useradd"):
        if not shutil.which(tool):
            return f"the SSH test hosts need {tool}"
    return None


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=30)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(address: str, port: int, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex((address, port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd did not listen on {address}:{port}")


def _wait_closed(address: str, port: int, seconds: float = 10) -> None:
    """Until nothing accepts connections on address:port: a stopped host's sshd, in its own
    PID namespace, may outlive the process that started it by a moment, and a restart must
    not take the old server's answer for the new one's (a reset, not the new host key)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex((address, port)) != 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd still listens on {address}:{port} after it was stopped")


@dataclass
class TestHost:
    """One SSH server standing in for a GPU node."""

    lab: SshLab
    index: int
    base: Path
    address: str = "127.0.0.1"
    port: int = 22
    namespace: str | None = None
    link: str | None = None
    process: subprocess.Popen | None = None
    gpu_count: int = 4
    extra: dict = field(default_factory=dict)

    __test__ = False  # not a pytest test class

    @property
    def name(self) -> str:
        return f"testhost{self.index}"

    @property
    def agent_dir(self) -> str:
        return str(self.base / "agent")

    @property
    def device_root(self) -> Path:
        return self.base / "root"

    @property
    def home_base(self) -> Path:
        return self.base / "home"

    @property
    def state_dir(self) -> Path:
        return self.base / "state"

    @property
    def root_ssh_dir(self) -> Path:
        """The folder of root's `authorized_keys` (the operator's key) on this host."""
        return self.base / "root_home" / ".ssh"

    @property
    def host_key_path(self) -> Path:
        return self.base / "ssh_host_ed25519_key"

    def host_public_key(self) -> str:
        """`ssh-ed25519 AAAA…` of the current host key."""
        text = (self.base / "ssh_host_ed25519_key.pub").read_text().split()
        return f"{text[0]} {text[1]}"

    @property
    def opener(self) -> str:
        """The path of `kd-open` on the host (see OPEN_PROBE): `kd-open DEVICE` as a tenant."""
        return str(self.base / "tools" / "kd-open")

    def set_gpus(self, count: int) -> None:
        """What the nvidia-smi stand-in reports (a node losing a GPU reports fewer)."""
        gpus = [
            {
                "index": i,
                "uuid": f"GPU-{self.index:04x}{i:04x}-kd00-4000-8000-{self.lab.pid:012x}",
                "name": "NVIDIA H100 80GB HBM3",
                "memory_mib": 81559,
            }
            for i in range(count)
        ]
        tools = self.base / "tools"
        (tools / "gpus.json").write_text(json.dumps({"driver": "570.133.20", "gpus": gpus}))

    def set_gpu_use(self, use: dict[int, dict]) -> None:
        """What the stand-in reports as GPU `i`'s use now: `{i: {"util": 87, "used": 40960,
        "temp": 64, "power": "512.3"}}` (a figure may be "[N/A]", as a real card's can)."""
        path = self.base / "tools" / "gpus.json"
        data = json.loads(path.read_text())
        for gpu in data["gpus"]:
            gpu["use"] = use.get(gpu["index"], {})
        path.write_text(json.dumps(data))

    @property
    def uid_min(self) -> int:
        block = (self.lab.pid % 30_000) * SshLab.MAX_HOSTS + self.index
        return UID_BASE + block * UID_BLOCK

    @property
    def etc(self) -> Path:
        """The host's own /etc (the machine's where hosts cannot be isolated)."""
        return self.base / "etc" if self.lab.isolate else Path("/etc")

    def passwd(self) -> list[pwd.struct_passwd]:
        """The host's account database, read from its own /etc/passwd."""
        entries = []
        for line in (self.etc / "passwd").read_text().splitlines():
            fields = line.split(":")
            if len(fields) == 7:
                name, password, uid, gid, gecos, home, shell = fields
                entries.append(
                    pwd.struct_passwd((name, password, int(uid), int(gid), gecos, home, shell))
                )
        return entries

    def account(self, name: str) -> pwd.struct_passwd:
        """One account of the host, as pwd.getpwnam would answer on it (KeyError if none)."""
        for entry in self.passwd():
            if entry.pw_name == name:
                return entry
        raise KeyError(f"{self.name} has no account {name}")

    def group(self, name: str) -> grp.struct_group:
        """One group of the host, as grp.getgrnam would answer on it (KeyError if none)."""
        for line in (self.etc / "group").read_text().splitlines():
            fields = line.split(":")
            if len(fields) == 4 and fields[0] == name:
                members = [m for m in fields[3].split(",") if m]
                return grp.struct_group((fields[0], fields[1], int(fields[2]), members))
        raise KeyError(f"{self.name} has no group {name}")

    def _copy_etc(self) -> None:
        """The host's /etc: a copy of the machine's, its account files kept aside pristine."""
        if not self.lab.isolate:
            return
        shutil.rmtree(self.etc, ignore_errors=True)
        try:
            shutil.copytree("/etc", self.etc, symlinks=True, ignore=_transient_etc_files)
        except shutil.Error as exc:
            # Another test writing the machine's /etc meanwhile (useradd's passwd+, a lock):
            # files that vanished during the copy are not missed; anything else is an error.
            lost = [source for source, _target, _why in exc.args[0] if os.path.lexists(source)]
            if lost:
                raise
        # A login joins its rental's cgroup, as README's node set-up asks (the agent's
        # `session` from pam_exec; without the agent file the optional line does nothing).
        pam = self.etc / "pam.d" / "sshd"
        if pam.exists():
            with pam.open("a") as handle:
                handle.write(
                    "session optional pam_exec.so quiet /usr/bin/python3 "
                    f"{self.agent_dir}/{AGENT_NAME} session\n"
                )
        pristine = self.base / "etc-accounts"
        pristine.mkdir(mode=0o700, exist_ok=True)
        for name in ACCOUNT_FILES:
            if (self.etc / name).exists():
                shutil.copy2(self.etc / name, pristine / name)

    def reset_accounts(self) -> None:
        """No test account is left on the host: their processes stopped, its account files
        as they were copied (on a shared /etc: the lab's accounts deleted)."""
        prefix = self.lab.account_prefix
        for entry in self.passwd():
            if entry.pw_name.startswith(prefix):
                _kill_uid(entry.pw_uid)
        if not self.lab.isolate:
            return
        pristine = self.base / "etc-accounts"
        for name in ACCOUNT_FILES:
            if (pristine / name).exists():
                # In place: the host's sshd has this very folder as its /etc.
                (self.etc / name).write_bytes((pristine / name).read_bytes())

    def _prepare_files(self) -> None:
        self._copy_etc()
        for path in (self.base, self.home_base, self.device_root / "dev", self.base / "tools"):
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o755)
        (self.base / "agent").mkdir(mode=0o700, exist_ok=True)
        for i in range(self.gpu_count):
            _mknod(self.device_root / "dev" / f"nvidia{i}", 195, i, 0o600)
        for name, (major, minor) in CONTROL_DEVICES.items():
            _mknod(self.device_root / "dev" / name, major, minor, 0o660)
        opener = self.base / "tools" / "kd-open"
        opener.write_text(OPEN_PROBE)
        opener.chmod(0o755)
        nvidia_smi = self.base / "tools" / "nvidia-smi"
        nvidia_smi.write_text(NVIDIA_SMI_STANDIN)
        nvidia_smi.chmod(0o755)
        self.set_gpus(self.gpu_count)
        config = {
            "root": str(self.device_root),
            "home_base": str(self.home_base),
            "state_dir": str(self.state_dir),
            "prefix": self.lab.account_prefix,
            "gpu_group": self.lab.gpu_group,
            "tools_path": str(self.base / "tools"),
            "service_wait": 20,
            "recipe_timeout": 60,
            "uid_min": self.uid_min,
            "uid_max": self.uid_min + UID_BLOCK - 1,
        }
        (self.base / "agent" / "agent.json").write_text(json.dumps(config))
        self._new_host_key()
        self.root_ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        operator_keys = self.root_ssh_dir / "authorized_keys"
        operator_keys.write_text(self.lab.operator_public_key + "\n")
        operator_keys.chmod(0o600)

    def _new_host_key(self) -> None:
        for suffix in ("", ".pub"):
            with contextlib.suppress(FileNotFoundError):
                (self.base / f"ssh_host_ed25519_key{suffix}").unlink()
        _run(
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            self.name,
            "-f",
            str(self.host_key_path),
        )

    def _write_sshd_config(self) -> Path:
        config = self.base / "sshd_config"
        config.write_text(
            f"Port {self.port}\n"
            f"ListenAddress {self.address}\n"
            f"HostKey {self.host_key_path}\n"
            f"PidFile {self.base / 'sshd.pid'}\n"
            "PermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            f"UsePAM {'yes' if self.lab.isolate else 'no'}\n"
            "AllowTcpForwarding local\n"
            "X11Forwarding no\n"
            "PrintMotd no\n"
            "MaxStartups 50:30:100\n"
            "LogLevel ERROR\n"
            "AuthorizedKeysFile .ssh/authorized_keys\n"
            "Match User root\n"
            f"    AuthorizedKeysFile {self.root_ssh_dir / 'authorized_keys'}\n"
        )
        return config

    def start(self) -> None:
        config = self._write_sshd_config()
        argv = [SSHD, "-D", "-e", "-f", str(config)]
        if self.lab.isolate:
            delegated = self.cgroup_folders()
            specs = " ".join(
                f"{kind}:{options}:{folder[len(mount) :]}:{mount}"
                for mount, kind, options, folder in delegated
            )
            argv = [*ISOLATE, "/bin/sh", "-c", NODE_INIT, "kdnode", str(self.etc), self.name]
            argv += [specs or "-", SSHD, "-D", "-e", "-f", str(config)]
        if self.namespace:
            argv = ["ip", "netns", "exec", self.namespace, *argv]
        if self.lab.isolate and delegated:
            procs = [f"{folder}/node/cgroup.procs" for *_rest, folder in delegated]
            argv = ["/bin/sh", "-c", CGROUP_JOIN, "kdjoin", *procs, "--", *argv]
        log = open(self.base / "sshd.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        log.close()
        try:
            _wait_listening(self.address, self.port)
        except RuntimeError:
            raise RuntimeError(
                f"sshd did not start: {(self.base / 'sshd.log').read_text()[-2000:]}"
            ) from None

    def cgroup_folders(self) -> list[tuple[str, str, str, str]]:
        """(mount, filesystem type, mount options, the lab's folder for this host) per
        hierarchy, made if missing: inside the host that folder is the whole hierarchy, as a
        container's delegated cgroup is, and the host's own processes run in its `node`."""
        if self.lab.cgroups_unavailable:
            return []
        folders = []
        for mount, kind, options, base in self.lab.cgroup_bases:
            folder = os.path.join(base, f"kdssh{self.lab.pid}h{self.index}")
            os.makedirs(os.path.join(folder, "node"), exist_ok=True)
            folders.append((mount, kind, options, folder))
        return folders

    def clear_cgroups(self, *, keep_node: bool = True) -> None:
        """Removes the rentals' cgroups the agent left in the host's folders (their
        processes, all the lab's, ended first); with keep_node=False the folders too."""
        for *_rest, folder in self.cgroup_folders():
            targets = [os.path.join(folder, "kernodeck")] if keep_node else [folder]
            for target in targets:
                _remove_cgroup_tree(target)

    def node_pid(self) -> int | None:
        """The first process of the host's namespaces (seen from the machine), or None."""
        if not (self.process and self.lab.isolate):
            return None
        for _ in range(100):
            with contextlib.suppress(OSError):
                children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
                first = children.read_text().split()
                if first:
                    return int(first[0])
            time.sleep(0.02)
        return None

    def node_path(self, path: str) -> Path:
        """A path as the host's own processes see it (its private /tmp, /dev/shm...)."""
        pid = self.node_pid()
        return Path(f"/proc/{pid}/root{path}") if pid else Path(path)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
            _wait_closed(self.address, self.port)
        self.process = None

    def rotate_host_key(self) -> None:
        """A reinstalled or impostor host: a new host key on the same address."""
        self.stop()
        self._new_host_key()
        self.start()

    def cut(self) -> None:
        """The node becomes unreachable: the node-side end of its link goes down (or, on
        loopback, its server stops).

        The host end then ignores its connected route and the address falls to the lab's
        catch-all `unreachable` route: connections fail at once instead of waiting for a
        timeout, and nothing can take the default route.
        """
        if self.link:
            self._node_link("down")
        else:
            self.stop()

    def restore(self) -> None:
        if self.link:
            self._node_link("up")
            _wait_listening(self.address, self.port)
        else:
            self.start()

    def _node_link(self, state: str) -> None:
        inner = self.lab.node_link_name(self.index)
        _run("ip", "netns", "exec", self.namespace, "ip", "link", "set", inner, state)
        if state == "down":
            # The host end learns of the lost carrier a moment later (the kernel's link
            # watch): return once the address no longer routes, so cut() means cut.
            deadline = time.monotonic() + 10
            while _run("ip", "route", "get", self.address, check=False).returncode == 0:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name}: the link went down but still routes")
                time.sleep(0.02)

    def ssh_argv(self, user: str, key_path: Path | str, *extra: str) -> list[str]:
        """The `ssh` client command a customer would type, with test-only host-key handling."""
        return [
            "ssh",
            "-F",
            "/dev/null",
            "-i",
            str(key_path),
            "-p",
            str(self.port),
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            f"UserKnownHostsFile={self.lab.base / 'known_hosts'}",
            "-o",
            "ConnectTimeout=5",
            "-o",
            "LogLevel=ERROR",
            *extra,
            f"{user}@{self.address}",
        ]


class SshLab:
    """A set of test hosts, torn down on exit whatever happened."""

    def __init__(self, hosts: int = 2, gpus: int = 4, use_namespaces: bool = True):
        self.pid = os.getpid()
        self.account_prefix = f"kdt{self.pid}x-"
        self.gpu_group = f"{self.account_prefix}gpu"  # the agent's shared GPU group here
        self.count = hosts
        self.gpus = gpus
        self.use_namespaces = use_namespaces
        self.hosts: list[TestHost] = []
        self.namespaces: list[str] = []
        self.links: list[str] = []
        # sshd's StrictModes wants every folder above the operator's key file owned by root
        # and not world-writable, which /tmp is not; /run is.
        self.base = Path(tempfile.mkdtemp(prefix=f"kdssh-{self.pid}-", dir=LAB_PARENT))
        self.base.chmod(0o755)
        self.mode = "namespaces"
        self.catch_all: str | None = None  # the lab's `unreachable` route, while it exists
        self.isolate = _can_isolate()
        self.cgroup_bases: list[tuple[str, str, str, str]] = []
        self.cgroups_unavailable = _cgroups_unavailable(self.isolate)
        if not self.cgroups_unavailable:
            self.cgroup_bases = _cgroup_bases()

    # --- keys

    def make_key(self, name: str) -> tuple[Path, str]:
        """A fresh Ed25519 key pair: (private key path, public key line)."""
        path = self.base / "keys" / name
        path.parent.mkdir(mode=0o700, exist_ok=True)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(path))
        return path, (path.with_suffix(".pub")).read_text().strip()

    # --- lifecycle

    def __enter__(self) -> SshLab:
        try:
            self.operator_key_path, self.operator_public_key = self.make_key("operator")
            for i in range(self.count):
                self._make_host(i)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    MAX_HOSTS = 8  # eight /30s fill the lab's /27

    def _range(self) -> str:
        """The lab's /27 of 10.0.0.0/8, from the process id: every host address is in it."""
        base = (10 << 24) + ((self.pid * self.MAX_HOSTS) % (1 << 22)) * 4
        return f"{socket.inet_ntoa(base.to_bytes(4, 'big'))}/27"

    def _subnet(self, i: int) -> tuple[str, str]:
        """A /30 of the lab's /27 from the host number (host end, node end)."""
        if not 0 <= i < self.MAX_HOSTS:
            raise ValueError(f"a lab has at most {self.MAX_HOSTS} hosts")
        block = ((self.pid * self.MAX_HOSTS) + i) % (1 << 22)
        base = (10 << 24) + block * 4
        dotted = [socket.inet_ntoa(int(base + n).to_bytes(4, "big")) for n in (1, 2)]
        return dotted[0], dotted[1]

    def node_link_name(self, i: int) -> str:
        return f"kd{self.pid}{i}n"

    def _add_catch_all(self) -> bool:
        """The `unreachable` route for the whole lab range, before any host exists."""
        if self.catch_all is None:
            target = self._range()
            if _run("ip", "route", "add", "unreachable", target, check=False).returncode:
                return False
            self.catch_all = target
        return True

    def _make_namespace(self, host: TestHost) -> bool:
        if not self._add_catch_all():
            return False
        name = f"kdssh{self.pid}h{host.index}"
        outer, inner = f"kd{self.pid}{host.index}h", self.node_link_name(host.index)
        if _run("ip", "netns", "add", name, check=False).returncode != 0:
            return False
        self.namespaces.append(name)
        if _run(
            "ip", "link", "add", outer, "type", "veth", "peer", "name", inner, check=False
        ).returncode:
            return False
        self.links.append(outer)
        host_addr, node_addr = self._subnet(host.index)
        # While the node end is down the host end's connected route is ignored, so the
        # address falls to the catch-all instead of a dead link (or any other route).
        ignore = f"/proc/sys/net/ipv4/conf/{outer}/ignore_routes_with_linkdown"
        try:
            Path(ignore).write_text("1\n")
        except OSError:
            return False
        for argv in (
            ("ip", "link", "set", inner, "netns", name),
            ("ip", "addr", "add", f"{host_addr}/30", "dev", outer),
            ("ip", "link", "set", outer, "up"),
            ("ip", "netns", "exec", name, "ip", "addr", "add", f"{node_addr}/30", "dev", inner),
            ("ip", "netns", "exec", name, "ip", "link", "set", inner, "up"),
            ("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"),
        ):
            if _run(*argv, check=False).returncode != 0:
                return False
        host.namespace, host.link, host.address, host.port = name, outer, node_addr, 22
        return True

    def _make_host(self, i: int) -> TestHost:
        host = TestHost(lab=self, index=i, base=self.base / f"host{i}", gpu_count=self.gpus)
        host._prepare_files()
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
        if not (self.use_namespaces and self._make_namespace(host)):
            self.mode = "loopback"
            host.namespace = host.link = None
            host.address, host.port = "127.0.0.1", _free_port()
        self.hosts.append(host)  # before start: a half-started server is still stopped
        host.start()
        return host

    def reset(self) -> None:
        """Between tests: no test accounts, agent state, homes or device grants remain, every
        link is up and every host reports its GPUs again (host keys stay as they are)."""
        for host in self.hosts:
            host.reset_accounts()
        self._remove_machine_accounts()
        for host in self.hosts:
            shutil.rmtree(host.state_dir, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                (host.base / "agent" / AGENT_NAME).unlink()
            for child in host.home_base.iterdir():
                shutil.rmtree(child, ignore_errors=True)
            host.clear_cgroups()
            for i in range(host.gpu_count):
                _mknod(host.device_root / "dev" / f"nvidia{i}", 195, i, 0o600)
            for name, (major, minor) in CONTROL_DEVICES.items():
                _mknod(host.device_root / "dev" / name, major, minor, 0o660)
            host.set_gpus(host.gpu_count)
            if host.link:
                host._node_link("up")
            if host.process is None or host.process.poll() is not None:
                host.start()

    def accounts(self) -> list[pwd.struct_passwd]:
        """Accounts the agent created for this lab (by the lab's unique prefix), on any of
        its hosts: a name the rental has on two hosts is listed once (the first host's)."""
        found = {}
        sources = [host.passwd() for host in self.hosts] + [pwd.getpwall()]
        for entries in sources:
            for entry in entries:
                if entry.pw_name.startswith(self.account_prefix):
                    found.setdefault(entry.pw_name, entry)
        return list(found.values())

    def account(self, name: str) -> pwd.struct_passwd:
        """The account of that name on the first host that has it (KeyError if none)."""
        for entry in self.accounts():
            if entry.pw_name == name:
                return entry
        raise KeyError(f"no host of the lab has an account {name}")

    def _remove_machine_accounts(self) -> None:
        """Accounts of the lab's prefix in the machine's own /etc (loopback hosts share it)."""
        for entry in pwd.getpwall():
            if entry.pw_name.startswith(self.account_prefix):
                with contextlib.suppress(Exception):
                    _kill_uid(entry.pw_uid)
                    _run("userdel", entry.pw_name, check=False)
                    _run("groupdel", entry.pw_name, check=False)
        with contextlib.suppress(KeyError):
            grp.getgrnam(self.gpu_group)
            _run("groupdel", self.gpu_group, check=False)

    def close(self) -> None:
        """Stops servers, removes test accounts, namespaces, links and files. Never raises."""
        hosts = list(self.hosts)
        for host in hosts:
            with contextlib.suppress(Exception):
                host.stop()
            with contextlib.suppress(Exception):
                host.reset_accounts()
        self._remove_machine_accounts()
        for host in hosts:
            with contextlib.suppress(Exception):
                host.clear_cgroups(keep_node=False)
        for link in self.links:
            _run("ip", "link", "del", link, check=False)
        for name in self.namespaces:
            _run("ip", "netns", "del", name, check=False)
        if self.catch_all is not None:  # only once the last host's link is gone
            _run("ip", "route", "del", "unreachable", self.catch_all, check=False)
            self.catch_all = None
        shutil.rmtree(self.base, ignore_errors=True)
        self.hosts, self.links, self.namespaces = [], [], []


ISOLATE = (
    "unshare",
    "--mount",
    "--uts",
    "--ipc",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
)


def _can_isolate() -> bool:
    """Whether this machine lets a host have its own mount, PID, UTS and IPC namespaces."""
    if not shutil.which("unshare"):
        return False
    probe = [*ISOLATE, "/bin/sh", "-c", NODE_INIT, "kdnode", "/etc", "probe", "-", "true"]
    return _run(*probe, check=False).returncode == 0


CGROUP_ROOT = "/sys/fs/cgroup"


def _cgroup_mounts() -> list[tuple[str, str, str]]:
    """The machine's cgroup hierarchies the agent uses: (mount point, filesystem type,
    mount options) for the v2 hierarchy and the v1 ones holding cpu or memory."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            after = fields[fields.index("-") + 1 :]
            mount, kind, options = fields[4], after[0], after[2].split(",")
            controllers = [o for o in options if o not in ("rw", "ro")]
            if not mount.startswith(CGROUP_ROOT) or fields[3] != "/":
                continue
            if kind == "cgroup2":
                found.append((mount, kind, "-"))
            elif kind == "cgroup" and {"cpu", "memory"} & set(controllers):
                found.append((mount, kind, ",".join(controllers)))
    return found


def _own_cgroup(mount: str, kind: str, options: str) -> str:
    """This process's cgroup in that hierarchy (as /proc/self/cgroup names it)."""
    controllers = {o for o in options.split(",") if not o.startswith("name=")}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            number, names, path = line.rstrip("\n").split(":", 2)
            if (kind == "cgroup2" and number == "0") or (
                kind == "cgroup" and set(names.split(",")) == controllers
            ):
                return path
    raise LookupError(mount)


def _cgroup_bases() -> list[tuple[str, str, str, str]]:
    """(mount, type, options, where the lab's folders go) per hierarchy: below this
    process's own cgroup (its limits and accounting still hold the lab), except where
    cgroup v2 carries the controllers: a populated cgroup cannot give them to children
    there, so the lab's folders go at the top."""
    bases = []
    for mount, kind, options in _cgroup_mounts():
        controllers = Path(mount, "cgroup.controllers")
        if kind == "cgroup2" and {"cpu", "memory"} <= set(controllers.read_text().split()):
            with contextlib.suppress(OSError):
                Path(mount, "cgroup.subtree_control").write_text("+cpu +memory\n")
            bases.append((mount, kind, options, mount))
        else:
            own = _own_cgroup(mount, kind, options).rstrip("/")
            bases.append((mount, kind, options, mount + own))
    return bases


def _cgroups_unavailable(isolate: bool) -> str | None:
    """Why the hosts cannot get cgroups of their own here, or None."""
    if not isolate:
        return "the test hosts have no mount namespaces of their own here"
    mounts = _cgroup_mounts()
    unified = Path(CGROUP_ROOT, "cgroup.controllers")
    if unified.exists():
        if not {"cpu", "memory"} <= set(unified.read_text().split()):
            return f"cgroup v2 at {CGROUP_ROOT} lacks the cpu or memory controller"
    else:
        v1 = {c for _m, kind, options in mounts if kind == "cgroup" for c in options.split(",")}
        if not {"cpu", "memory"} <= v1:
            return "neither cgroup v2 nor v1 has the cpu and memory controllers here"
    try:
        for *_rest, base in _cgroup_bases():
            probe = Path(base, f"kdprobe{os.getpid()}")
            probe.mkdir(exist_ok=True)
            probe.rmdir()
    except OSError as exc:
        return f"the machine's cgroups cannot be written here: {exc}"
    return None


def _remove_cgroup_tree(top: str) -> None:
    """Removes a cgroup folder and its children, ending what still runs in them (only the
    lab's processes are ever there)."""
    if not os.path.isdir(top):
        return
    for _ in range(50):
        folders = [d for d, _subs, _files in os.walk(top, topdown=False)]
        for folder in folders:
            with contextlib.suppress(OSError):
                for line in Path(folder, "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(line), signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        if not os.path.isdir(top):
            return
        time.sleep(0.1)


def _transient_etc_files(folder: str, names: list[str]) -> set[str]:
    """What shadow's tools leave in /etc only while they write (locks, new copies)."""
    return {n for n in names if n.endswith((".lock", "+")) or n in (".pwd.lock", "nologin")}


def _kill_uid(uid: int) -> None:
    """Stops every process of one test account (by its uid, nothing broader)."""
    for _ in range(50):
        pids = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{name}").st_uid == uid:
                        pids.append(int(name))
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


@pytest.fixture(scope="module")
def ssh_lab():
    """Two SSH test hosts with four stand-in GPUs each, for one test module."""
    reason = ssh_lab_unavailable()
    if reason:
        pytest.skip(reason)
    with SshLab(hosts=2, gpus=4) as lab:
        yield lab
