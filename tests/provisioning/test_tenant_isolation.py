"""Tenants of one node, tried as a tenant would on real SSH test hosts (tests/sshhosts.py).

Each host runs its sshd in its own mount, PID, UTS and IPC namespaces with private /tmp,
/var/tmp and /dev/shm, real character devices for its GPUs, and the agent zipapp the ssh
driver ships, run as root over SSH with the operator key exactly as the control plane does.
Tenants log in with their own keys and try what a hostile customer would.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket as socketlib
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from kernodeck.provisioning.agent import ARCHIVE_NAME, write_zipapp
from tests.sshhosts import SshLab, ssh_lab_unavailable

pytestmark = pytest.mark.skipif(bool(ssh_lab_unavailable()), reason=str(ssh_lab_unavailable()))


@pytest.fixture(scope="module")
def lab():
    with SshLab(hosts=1, gpus=4) as lab:
        yield lab


class Node:
    """One test host with the agent installed, driven as root and logged in to as tenants."""

    def __init__(self, lab):
        self.lab, self.host = lab, lab.hosts[0]
        lab.reset()
        write_zipapp(f"{self.host.agent_dir}/{ARCHIVE_NAME}")
        self.keys = {}

    def agent(self, command, request):
        done = subprocess.run(
            [
                *self.host.ssh_argv("root", self.lab.operator_key_path),
                f"python3 {self.host.agent_dir}/{ARCHIVE_NAME} {command}",
            ],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout.strip(), done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    def rent(self, reference, gpus):
        name = reference.lower()
        if name not in self.keys:
            self.keys[name] = self.lab.make_key(name)
        answer = self.agent(
            "create",
            {
                "reference": reference,
                "backend": "cuda",
                "gpus": gpus,
                "keys": [self.keys[name][1]],
            },
        )
        assert answer["ok"], answer
        return answer["account"]

    def end(self, reference, retention_hours=0):
        return self.agent("destroy", {"reference": reference, "retention_hours": retention_hours})

    def as_tenant(self, reference, command):
        key = self.keys[reference.lower()][0]
        account = self.lab.account_prefix + reference.lower().replace("kd-", "").replace("-", "")
        return subprocess.run(
            [*self.host.ssh_argv(account, key), command],
            capture_output=True,
            text=True,
            timeout=60,
        )

    def as_root(self, command):
        return subprocess.run(
            [*self.host.ssh_argv("root", self.lab.operator_key_path), command],
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture
def node(lab):
    return Node(lab)


def test_a_tenant_linking_its_ssh_folder_elsewhere_never_makes_root_remove_those_keys(node):
    host = node.host
    root_keys = (host.root_ssh_dir / "authorized_keys").read_text()
    node.rent("KD-AAAA-0001", [0])
    other = node.rent("KD-BBBB-0002", [1])
    node.rent("KD-CCCC-0003", [2])
    node.rent("KD-DDDD-0004", [3])
    other_ssh = host.home_base / other / ".ssh"
    other_keys = (other_ssh / "authorized_keys").read_text()
    (host.home_base / other / "workspace" / "results.txt").write_text("mine\n")
    # A points its .ssh at the other rental's, C at root's; D its workspace at the other's.
    for reference, target, name in (
        ("KD-AAAA-0001", other_ssh, ".ssh"),
        ("KD-CCCC-0003", host.root_ssh_dir, ".ssh"),
        ("KD-DDDD-0004", host.home_base / other / "workspace", "workspace"),
    ):
        done = node.as_tenant(reference, f"mv ~/{name} ~/{name}.old && ln -s {target} ~/{name}")
        assert done.returncode == 0, done.stderr

    for reference in ("KD-AAAA-0001", "KD-CCCC-0003"):
        ended = node.end(reference)
        assert not ended["ok"] and "refusing to follow" in ended["error"], ended
        assert "symbolic link" in ended["error"]
        assert node.as_tenant(reference, "true").returncode == 255  # locked all the same
    assert node.end("KD-DDDD-0004")["ok"]
    assert node.agent("inventory", {})["ok"]  # the sweep wipes the ended homes

    assert (host.root_ssh_dir / "authorized_keys").read_text() == root_keys
    assert node.as_root("true").returncode == 0
    assert (other_ssh / "authorized_keys").read_text() == other_keys
    assert node.as_tenant("KD-BBBB-0002", "cat workspace/results.txt").stdout == "mine\n"
    assert sorted(p.name for p in host.home_base.iterdir()) == [other]


def test_a_departed_tenants_files_and_processes_never_pass_to_the_next_rental(node):
    first = node.rent("KD-EEEE-0005", [0])
    planted = node.as_tenant(
        "KD-EEEE-0005",
        "umask 077; for d in /tmp /var/tmp /dev/shm; do echo secret > $d/left.txt; done; "
        "mkdir /tmp/cache && echo secret > /tmp/cache/deep.txt; "
        "ipcmk -M 4096 >/dev/null; ipcmk -Q >/dev/null; ipcmk -S 1 >/dev/null; "
        "setsid sleep 600 > /dev/null 2>&1 < /dev/null & echo started",
    )
    assert planted.stdout.strip() == "started", planted.stderr
    first_uid = node.host.account(first).pw_uid
    for kind in ("shm", "msg", "sem"):
        assert str(first_uid) in node.as_root(f"cat /proc/sysvipc/{kind}").stdout, kind

    assert node.end("KD-EEEE-0005")["ok"]
    second = node.rent("KD-FFFF-0006", [1])  # the sweep wipes the first account meanwhile

    with pytest.raises(KeyError):
        node.host.account(first)
    assert node.host.account(second).pw_uid != first_uid
    left = ("/tmp/left.txt", "/var/tmp/left.txt", "/dev/shm/left.txt", "/tmp/cache")  # noqa: S108
    for path in left:
        assert not node.host.node_path(path).exists(), path
    read = node.as_tenant("KD-FFFF-0006", "cat /tmp/left.txt /dev/shm/left.txt /tmp/cache/*")
    assert read.returncode != 0 and "secret" not in read.stdout
    for kind in ("shm", "msg", "sem"):
        rows = node.as_root(f"cat /proc/sysvipc/{kind}").stdout.splitlines()[1:]
        assert not [row for row in rows if str(first_uid) in row.split()], kind
    assert node.as_root(f"ps -o pid= -u {first_uid} || true").stdout.strip() == ""


def test_a_rental_opens_its_gpu_and_the_shared_cuda_devices_but_never_anothers_gpu(node):
    dev = node.host.device_root / "dev"
    node.rent("KD-GGGG-0007", [0, 1])
    node.rent("KD-HHHH-0008", [2])
    names = ["nvidia0", "nvidia1", "nvidia2", "nvidia3"]
    names += ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"]

    def opens(reference):
        probe = "; ".join(
            f"{node.host.opener} {dev / name} && echo {name}:open || echo {name}:denied"
            for name in names
        )
        done = node.as_tenant(reference, probe)
        assert done.returncode == 0, done.stderr
        return dict(line.split(":") for line in done.stdout.split())

    shared = {"nvidiactl": "open", "nvidia-uvm": "open", "nvidia-uvm-tools": "open"}
    shared["nvidia-modeset"] = "open"
    assert opens("KD-GGGG-0007") == {
        "nvidia0": "open",
        "nvidia1": "open",
        "nvidia2": "denied",
        "nvidia3": "denied",
        **shared,
    }
    assert opens("KD-HHHH-0008") == {
        "nvidia0": "denied",
        "nvidia1": "denied",
        "nvidia2": "open",
        "nvidia3": "denied",
        **shared,
    }
    # An ended rental leaves the GPU group: the shared devices are closed to it again.
    ended = node.lab.account_prefix + "gggg0007"
    assert node.end("KD-GGGG-0007", retention_hours=1)["ok"]
    assert ended not in node.host.group(node.lab.gpu_group).gr_mem


# Stands in for JupyterLab in the rental's venv (the default recipe then installs nothing):
# takes the token from the --config file the agent wrote, as JupyterLab does, listens on
# --ServerApp.sock with --ServerApp.sock_mode (or on --port), and answers 200 with the
# token, 403 without.
JUPYTER_STANDIN = """#!/usr/bin/python3
import http.server, json, os, socketserver, sys, urllib.parse
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
token = json.load(open(args["config"]))["IdentityProvider"]["token"]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        self.send_response(200 if query.get("token") == [token] else 403)
        self.end_headers()
    def log_message(self, *args):
        pass
if "ServerApp.sock" in args:
    server = socketserver.UnixStreamServer(args["ServerApp.sock"], Handler)
    os.chmod(args["ServerApp.sock"], int(args.get("ServerApp.sock_mode", "0600"), 8))
else:
    server = http.server.HTTPServer(("127.0.0.1", int(args["port"])), Handler)
server.serve_forever()
"""

CONNECT = (
    "python3 -c 'import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    'try: s.connect(sys.argv[1]); print("connected")\n'
    "except OSError as e: print(type(e).__name__)' "
)


def _get(url):
    """The HTTP status of a GET, or the name of the error when no answer came."""
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, http.client.HTTPException) as exc:
        return type(exc).__name__


@contextlib.contextmanager
def tunnel(node, account, key, socket_path):
    """`ssh -N -L PORT:SOCKET account@node`, as the delivery tells the customer; yields PORT."""
    with socketlib.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = node.host.ssh_argv(account, key, "-N", "-o", "ExitOnForwardFailure=yes")
    argv[-1:-1] = ["-L", f"127.0.0.1:{port}:{socket_path}"]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Until the forward listens (after the login, which a busy machine makes slow): a
        # tunnel that never came up would make "the other tenant's tunnel does not reach
        # it" true for the wrong reason.
        for _ in range(600):
            with socketlib.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, f"ssh -L ended with {process.returncode}"
            time.sleep(0.1)
        else:
            raise AssertionError("the tunnel's local port never listened")
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # ssh busy in its handshake ignores SIGTERM a while
            process.kill()
            process.wait(timeout=10)


def test_the_notebook_listens_on_a_socket_only_its_owner_reaches_and_no_token_is_on_view(node):
    owner = node.rent("KD-JJJJ-0009", [0])
    other = node.rent("KD-KKKK-0010", [1])
    venv = node.host.home_base / owner / "workspace" / "venv" / "bin"
    installed = node.as_tenant(
        "KD-JJJJ-0009",
        f"mkdir -p {venv} && ln -s /usr/bin/python3 {venv}/python",
    )
    assert installed.returncode == 0, installed.stderr
    installed = subprocess.run(
        [*node.host.ssh_argv(owner, node.keys["kd-jjjj-0009"][0]), f"cat > {venv}/jupyter-lab"],
        input=JUPYTER_STANDIN,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr
    assert node.as_tenant("KD-JJJJ-0009", f"chmod 755 {venv}/jupyter-lab").returncode == 0
    prepared = node.agent("prepare", {"reference": "KD-JJJJ-0009", "preparation": "notebook"})
    assert prepared["ok"], prepared
    token, sock = prepared["token"], prepared["socket"]
    assert sock == str(node.host.home_base / owner / ".kernodeck" / "run" / "notebook.sock")
    assert prepared["url"] == f"http://127.0.0.1:8888/lab?token={token}"
    assert "port" not in prepared  # nothing of the notebook listens on the node's loopback

    seen = node.as_tenant("KD-KKKK-0010", "ps -eo user,args")
    assert "jupyter-lab" in seen.stdout  # the other tenant does see the process...
    assert token not in seen.stdout  # ...but never its token
    assert node.as_tenant("KD-KKKK-0010", CONNECT + sock).stdout.strip() == "PermissionError"
    secrets = node.host.home_base / owner / ".kernodeck" / "secrets"
    stolen = node.as_tenant("KD-KKKK-0010", f"cat {secrets}/notebook.token {secrets}/*.json")
    assert stolen.returncode != 0 and token not in stolen.stdout
    assert node.as_tenant("KD-JJJJ-0009", f"cat {secrets}/notebook.token").stdout == token

    # The customer's tunnel reaches the notebook; the other tenant's tunnel to it does not.
    with tunnel(node, owner, node.keys["kd-jjjj-0009"][0], sock) as port:
        assert _get(f"http://127.0.0.1:{port}/lab?token={token}") == 200
        assert _get(f"http://127.0.0.1:{port}/lab") == 403
    with tunnel(node, other, node.keys["kd-kkkk-0010"][0], sock) as port:
        assert _get(f"http://127.0.0.1:{port}/lab?token={token}") not in (200, 403)
    assert node.agent("status", {"reference": "KD-JJJJ-0009"})["services"] == {"notebook": True}

    # The owner swaps its socket for a link to a root-only socket: root never connects to it.
    bait_path = node.host.base / "tools" / "root-only.sock"
    with socketlib.socket(socketlib.AF_UNIX) as bait:
        bait.bind(str(bait_path))
        bait.listen()
        bait.settimeout(0.5)
        swapped = node.as_tenant("KD-JJJJ-0009", f"ln -sf {bait_path} {sock}")
        assert swapped.returncode == 0, swapped.stderr
        assert node.agent("status", {"reference": "KD-JJJJ-0009"})["services"] == {
            "notebook": False
        }
        with pytest.raises(TimeoutError):
            bait.accept()
    bait_path.unlink()


def test_each_rental_runs_in_its_own_cgroup_with_shares_from_its_gpus(node):
    if node.lab.cgroups_unavailable:
        pytest.skip(node.lab.cgroups_unavailable)
    small = node.rent("KD-MMMM-0011", [0])
    large = node.rent("KD-NNNN-0012", [1, 2])
    states = {
        account: json.loads((node.host.state_dir / "rentals" / f"{account}.json").read_text())
        for account in (small, large)
    }
    records = {account: state["cgroup"] for account, state in states.items()}
    layout = records[small].get("layout")
    assert layout in ("unified", "hybrid"), records[small]  # the lab's hosts get one of these
    folders = {a: [node.host.node_path(f) for f in r["folders"]] for a, r in records.items()}

    def value(account, name):
        (found,) = [f / name for f in folders[account] if (f / name).exists()]
        return int(found.read_text())

    if layout == "unified":
        cpu, memory, shares = "cpu.weight", "memory.max", (100, 200)
    else:
        cpu, memory, shares = "cpu.shares", "memory.limit_in_bytes", (1024, 2048)
    assert (value(small, cpu), value(large, cpu)) == shares
    assert value(large, memory) == pytest.approx(2 * value(small, memory), rel=0.01)
    assert value(small, memory) == records[small][memory]

    # What the recipe starts runs in the rental's cgroup in every hierarchy, is counted there
    # and ends with it, also when it detached from the recipe.
    recipe = (
        "cat /proc/self/cgroup > ~/workspace/cgroup; cat /proc/$PPID/cgroup > ~/workspace/agent; "
        "setsid sleep 600 > /dev/null 2>&1 < /dev/null &"
    )
    ran = node.agent(
        "prepare", {"reference": "KD-MMMM-0011", "preparation": "python", "recipe": recipe}
    )
    assert ran["ok"], ran
    lines = (node.host.home_base / small / "workspace" / "cgroup").read_text().splitlines()
    mine = [line for line in lines if line.endswith(f"/kernodeck/{small}")]
    assert len(mine) == len(records[small]["folders"]), lines
    counted = node.host.node_path(records[small]["path"]) / "cgroup.procs"
    assert len(counted.read_text().split()) == 1  # the detached sleep

    # So does what the customer runs in an SSH login (sshd's PAM session puts it there).
    for reference, account in (("KD-MMMM-0011", small), ("KD-NNNN-0012", large)):
        login = node.as_tenant(
            reference,
            "cat /proc/self/cgroup; setsid sleep 600 > /dev/null 2>&1 < /dev/null & echo $!",
        )
        *cgroup_lines, started = login.stdout.split()
        joined = [line for line in cgroup_lines if line.endswith(f"/kernodeck/{account}")]
        assert len(joined) == len(records[account]["folders"]), login.stdout + login.stderr
        inside = node.as_root(f"cat {records[account]['path']}/cgroup.procs").stdout.split()
        assert started in inside
    assert "kernodeck" not in node.as_root("cat /proc/self/cgroup").stdout  # root's are not
    agent = (node.host.home_base / small / "workspace" / "agent").read_text()
    assert agent and "kernodeck" not in agent  # the agent itself never joined it
    assert node.end("KD-MMMM-0011", retention_hours=1)["ok"]
    assert not any(f.exists() for f in folders[small])
    assert all(f.exists() for f in folders[large])
    uid = node.host.account(small).pw_uid
    assert node.as_root(f"ps -o pid= -u {uid} || true").stdout.strip() == ""
