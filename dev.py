#!/usr/bin/env python3
"""Set up and run Kernodeck with nothing but Python 3.11+.

    python3 dev.py demo    # the demo on http://127.0.0.1:8000 (SQLite, web + worker)
    python3 dev.py test    # the whole test suite (extra arguments go to pytest)

Both create ./.venv and install the pinned dependencies (requirements-test.lock) the
first time, and again whenever a lock file or pyproject.toml changes.
"""

import hashlib
import os
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
        return subprocess.call([str(BIN / "kernodeck"), "demo", *rest])
    return subprocess.call([str(PYTHON), "-m", "pytest", *rest])


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
