"""The demo stops with everything it started when it is asked to, and when a part of it dies.

First dev.py's own part, with a small child: it passes stop signals on and reports the
child's status. Then each test starts the demo as a real process tree (`python3 dev.py demo`
or `kernodeck demo`: chain simulator, gunicorn with its workers, huey worker), notes every
process of that tree, stops it and checks that the port is free and none of those processes
is left. Linux only: the tree is read from /proc.
"""

import contextlib
import importlib.util
import os
import select
import signal
import socket
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

import pytest

from tests.core.test_demo_commands import bare_environment
from tests.core.test_serve import free_port, get
from tests.processes import migrated_copy

ROOT = Path(__file__).resolve().parents[2]
START_DEADLINE = 240  # seconds: a hang guard for a busy machine, not a measure of speed
STOP_DEADLINE = 90

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc (Linux)"
)


# A child that says which stop signals reach it. SIGINT is counted; any other one ends it
# with exit status 7. With "default", it leaves every signal its default action.
CHILD = """
import signal, sys, time

counts = {}

def note(signum, _frame):
    name = signal.Signals(signum).name
    counts[name] = counts.get(name, 0) + 1
    print(name, counts[name], flush=True)
    if signum != signal.SIGINT:
        sys.exit(7)

if sys.argv[1:] != ["default"]:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, note)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def dev_py_running(tmp_path, *child_args, terminal=False, **options) -> subprocess.Popen:
    """dev.py's `run` around CHILD, in a session of its own (with `terminal`, the session's
    controlling terminal is the pty on its standard input)."""
    (tmp_path / "child.py").write_text(CHILD)
    child = [sys.executable, str(tmp_path / "child.py"), *child_args]
    wrapper = textwrap.dedent(
        f"""
        import fcntl, sys, termios
        sys.path.insert(0, {str(ROOT)!r})
        import dev
        if {terminal!r}:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        sys.exit(dev.run({child!r}))
        """
    )
    return subprocess.Popen(
        [sys.executable, "-c", wrapper], start_new_session=True, cwd=ROOT, **options
    )


def end_session(process: subprocess.Popen) -> None:
    """Kill the wrapper and its child, whatever the test left running."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def read_until(stream, wanted: bytes, seen: bytearray) -> None:
    """Read `stream` (a pipe or a pty's fd) into `seen` until `wanted` is in it."""
    fd = stream if isinstance(stream, int) else stream.fileno()
    deadline = time.monotonic() + 60
    while wanted not in seen:
        assert time.monotonic() < deadline, f"no {wanted!r} in {bytes(seen)!r}"
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 4096)
            assert chunk, f"no {wanted!r} in {bytes(seen)!r}"
            seen += chunk


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name
)
def test_dev_py_passes_a_stop_signal_on_and_exits_with_the_childs_status(tmp_path, signum):
    process = dev_py_running(tmp_path, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    output = bytearray()
    try:
        read_until(process.stdout, b"ready", output)
        process.send_signal(signum)
        read_until(process.stdout, f"{signal.Signals(signum).name} 1".encode(), output)
        if signum == signal.SIGINT:  # counted, not an end: end it with SIGTERM
            process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 7
    finally:
        end_session(process)


def test_dev_py_exits_128_plus_the_signal_that_ended_its_child(tmp_path):
    process = dev_py_running(tmp_path, "default", stdout=subprocess.PIPE)
    try:
        read_until(process.stdout, b"ready", bytearray())
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        end_session(process)


def test_ctrl_c_in_a_terminal_reaches_the_child_and_dev_py_waits_for_it(tmp_path):
    controller, terminal = os.openpty()
    try:
        process = dev_py_running(
            tmp_path, terminal=True, stdin=terminal, stdout=terminal, stderr=terminal
        )
    finally:
        os.close(terminal)
    output = bytearray()
    try:
        read_until(controller, b"ready", output)
        os.write(controller, termios.tcgetattr(controller)[6][termios.VINTR])  # Ctrl-C
        read_until(controller, b"SIGINT 1", output)
        # dev.py did not die of the Ctrl-C (nor kill its child): it still passes SIGTERM on.
        process.send_signal(signal.SIGTERM)
        read_until(controller, b"SIGTERM 1", output)
        assert process.wait(timeout=60) == 7
        # The terminal's SIGINT is not passed on a second time. (Had it been, the two would
        # often merge into one pending signal, so this line cannot always tell.)
        assert b"SIGINT 2" not in output
    finally:
        end_session(process)
        os.close(controller)


def started_at(pid: int) -> str | None:
    """The start time of a live (not zombie) process, which tells a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return None if fields[0] in ("Z", "X") else fields[19]


def descendants(pid: int) -> dict[int, str]:
    """Every live process below `pid`, with its start time."""
    found = {}
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            pids = [int(child) for child in children.read_text().split()]
        except OSError:
            continue
        for child in pids:
            start = started_at(child)
            if start is not None:
                found[child] = start
                found.update(descendants(child))
    return found


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "(gone)"


def left_over(tree: dict[int, str]) -> list[int]:
    return [pid for pid, start in tree.items() if started_at(pid) == start]


class Demo:
    """A demo process tree started for a test; `stop_everything` leaves nothing behind."""

    def __init__(self, command: list[str], var_dir: Path, log: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = bare_environment(var_dir)
        # The code of this checkout, whatever the virtualenv's editable install points at.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                [*command, "--port", str(self.port)],
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # no terminal: nothing else signals this tree
            )
        self.tree: dict[int, str] = {}

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_until_serving(self, expected: int) -> None:
        """Wait for the web server's answer and for `expected` processes below the demo."""
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline and self.process.poll() is None:
            self.tree.update(descendants(self.process.pid))
            try:
                serving = get(f"{self.base}/healthz")[0] == 200
            except OSError:
                serving = False
            if serving and len(left_over(self.tree)) >= expected:
                return
            time.sleep(0.5)
        pytest.fail(
            f"the demo did not come up with {expected} processes below it "
            f"(exit status {self.process.poll()}):\n"
            + "\n".join(command_line(pid) for pid in self.tree)
            + f"\n{self.output()}"
        )

    def child(self, word: str) -> int:
        """The process the demo started whose command line holds `word`."""
        matches = [
            pid
            for pid in left_over(self.tree)
            if parent_of(pid) == self.process.pid and word in command_line(pid)
        ]
        assert len(matches) == 1, [command_line(pid) for pid in self.tree]
        return matches[0]

    def wait_stopped(self) -> int:
        try:
            return self.process.wait(timeout=STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the demo did not stop:\n{self.output()}")

    def assert_nothing_left(self) -> None:
        # A process killed a moment ago may need a moment to be gone.
        deadline = time.monotonic() + 15
        while left_over(self.tree) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [command_line(pid) for pid in left_over(self.tree)] == []
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self.port))  # nothing listens there any more

    def stop_everything(self) -> None:
        for pid in [self.process.pid, *left_over(self.tree)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory):
    """One var/ for the module, its database the run's migrated file (the demo's own migrate
    then has nothing to do; its first start from scratch is tested in test_serve)."""
    folder = tmp_path_factory.mktemp("demo-var")
    migrated_copy(tmp_path_factory, folder / "kernodeck.db")
    return folder


@pytest.fixture
def start_demo(var_dir, tmp_path):
    demos = []

    def start(command: list[str]) -> Demo:
        demos.append(Demo(command, var_dir, tmp_path / f"demo-{len(demos)}.log"))
        return demos[-1]

    yield start
    for demo in demos:
        demo.stop_everything()


def dev_py_is_set_up() -> bool:
    """Whether `dev.py` would run at once, without installing into .venv first."""
    spec = importlib.util.spec_from_file_location("kernodeck_dev_script", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    return dev.STAMP.exists() and dev.STAMP.read_text() == dev.fingerprint()


# Below dev.py: kernodeck demo, the chain simulator, gunicorn and its 2 workers, the worker.
DEV_PY_TREE = 6


def to_the_process(demo: Demo, signum: int) -> None:
    demo.process.send_signal(signum)


def to_its_process_group(demo: Demo, signum: int) -> None:
    """As a terminal signals its foreground processes: dev.py and `kernodeck demo` both."""
    os.killpg(demo.process.pid, signum)


# Ctrl-C (SIGINT) is tested on `kernodeck demo` in tests/core/test_serve.py, and on dev.py
# with a real terminal above; each demo started here costs half a minute on a busy machine.
@pytest.mark.parametrize(
    "signum, send",
    [
        (signal.SIGTERM, to_the_process),  # `kill <pid>`, a service manager
        (signal.SIGHUP, to_its_process_group),  # the terminal closes
    ],
    ids=["kill", "terminal-closes"],
)
def test_dev_py_demo_stops_everything_when_asked(start_demo, signum, send):
    if not dev_py_is_set_up():
        pytest.skip(".venv is not installed for this checkout yet: run `python3 dev.py test`")
    demo = start_demo([sys.executable, str(ROOT / "dev.py"), "demo"])
    demo.wait_until_serving(DEV_PY_TREE)

    send(demo, signum)

    assert demo.wait_stopped() == 0, demo.output()
    demo.assert_nothing_left()
    output = demo.output()
    assert f"Stopping the demo ({signal.Signals(signum).name})" in output
    assert "Demo stopped." in output


def test_the_demo_stops_everything_when_its_web_server_dies(start_demo):
    demo = start_demo([sys.executable, "-m", "kernodeck", "demo"])
    demo.wait_until_serving(DEV_PY_TREE - 1)

    # The gunicorn master dies without a word, leaving its workers behind.
    os.kill(demo.child(" serve "), signal.SIGKILL)

    assert demo.wait_stopped() == 1
    demo.assert_nothing_left()
    output = demo.output()
    assert "The demo's web server stopped on its own (exit status -9)" in output
    assert "The demo stopped because its web server did" in output
