#!/usr/bin/env python3
"""Set up and run Kernodeck with nothing but Python 3.11+.

    python3 dev.py demo    # the demo on http://127.0.0.1:8000 (SQLite, web + worker)
    python3 dev.py test    # the whole test suite (extra arguments go to pytest)

Both create ./.venv and install the pinned dependencies (requirements-test.lock) the
first time, and again whenever a lock file or pyproject.toml changes.

The command then runs as a child process (`kernodeck demo`, or pytest). SIGTERM, SIGHUP
and SIGINT sent to this script are passed on to that child, and the script waits for it:
`kill <pid>` stops the demo with everything it started. Ctrl-C in a terminal already
reaches the child (the terminal signals its whole foreground process group), so SIGINT is
passed on only when this script is not in the terminal's foreground. The script exits
with the child's status; when a signal ended the child, with 128 + that signal's number,
as a shell reports it (130 after SIGINT, 143 after SIGTERM).

`dev.py test` runs the suite on several processes (pytest-xdist, see parallel()).
"""

import hashlib
import os
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / "python"
STAMP = VENV / ".kernodeck-installed"
INPUTS = ["requirements.lock", "requirements-test.lock", "pyproject.toml"]
# The signals that ask a program to stop (Windows has no such signals to pass on).
FORWARDED = [] if os.name == "nt" else [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


def fingerprint() -> str:
    digest = hashlib.sha256()
    for name in INPUTS:
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def ensure_environment() -> None:
    wanted = fingerprint()
    if STAMP.exists() and STAMP.read_text() == wanted and PYTHON.exists():
        return
    if not PYTHON.exists():
        print("Creating the virtual environment in .venv …", flush=True)
        venv.create(VENV, with_pip=True)
    print("Installing the pinned dependencies …", flush=True)
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-r", str(ROOT / "requirements-test.lock")], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    STAMP.write_text(wanted)


def in_terminal_foreground() -> bool:
    """Whether this process belongs to the foreground process group of its terminal."""
    try:
        terminal = os.open("/dev/tty", os.O_RDONLY)
    except OSError:  # no controlling terminal (a service, a test, Windows)
        return False
    try:
        return os.tcgetpgrp(terminal) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(terminal)


def run(command: list[str]) -> int:
    """Run `command`, passing the stop signals on to it; return its exit status."""
    child = None
    pending = []  # a signal that came before the child existed

    def forward(signum, _frame):
        if child is None:
            pending.append(signum)
        elif signum != signal.SIGINT or not in_terminal_foreground():
            child.send_signal(signum)  # does nothing once the child has ended
        # else Ctrl-C: the terminal has signalled the child already

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        child = subprocess.Popen(command)
        for signum in pending:
            child.send_signal(signum)
        status = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 - status if status < 0 else status


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 - this script may run on an older python3
        sys.exit("Kernodeck needs Python 3.11 or newer.")
    commands = {"demo", "test"}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    ensure_environment()
    command, rest = argv[0], argv[1:]
    os.chdir(ROOT)
    if command == "demo":
        return run([str(BIN / "kernodeck"), "demo", *rest])
    return run([str(PYTHON), "-m", "pytest", *parallel(rest), *rest])


def parallel(args: list[str]) -> list[str]:
    """pytest-xdist's options for the whole suite: two workers per core (most of the slow
    tests wait on servers, browsers and subprocesses), eight at most, each test file kept
    on one worker (module fixtures such as the SSH hosts start once).
    KERNODECK_TEST_WORKERS sets the number; 0, the caller's own -n or `-p no:xdist` runs
    in one process."""
    own = ("-n", "--numprocesses", "--version", "--help", "-h", "no:xdist", "-pno:xdist")
    if any(arg.split("=")[0] in own or arg.startswith("-n") for arg in args):
        return []
    workers = os.environ.get("KERNODECK_TEST_WORKERS", "")
    count = int(workers) if workers.isdigit() else max(2, min(2 * (os.cpu_count() or 1), 8))
    return ["-n", str(count), "--dist", "loadfile"] if count else []


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C while the environment is being set up
        sys.exit(130)
