"""A SQLite database migrated once per run, for the tests that start `kernodeck` processes.

`kernodeck migrate` on an empty file runs every migration: about 12 s of CPU in a fresh
process, which the serve, metrics and demo tests used to pay each. The first test of the run
that needs one migrates a file in the run's shared temporary folder (under a lock, as
tests/databases.py does for the test database); each test then copies it where its process
reads its database (`serve.db`, or `kernodeck.db` under a demo's var/), and that process's
own `migrate` finds nothing to do. The demo's first start on an empty var/ is still tested
from scratch (tests/core/test_serve.py's Ctrl-C test), as a new user meets it.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.databases import locked

ROOT = Path(__file__).resolve().parents[1]
NAME = "migrated-for-processes.sqlite3"


def _shared_folder(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def migrated_copy(tmp_path_factory, target: Path) -> Path:
    """Copy the run's migrated SQLite file to `target` (made on first use); return `target`."""
    shared = _shared_folder(tmp_path_factory)
    template = shared / NAME
    with locked(shared / f"{NAME}.lock"):
        if not template.exists():
            partial = shared / f"{NAME}.partial"
            partial.unlink(missing_ok=True)
            env = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith("KERNODECK_") and key != "DJANGO_SETTINGS_MODULE"
            }
            env.update(
                KERNODECK_DEBUG="0",
                KERNODECK_SECRET_KEY="m" * 60,
                KERNODECK_HTTPS="off",
                KERNODECK_ALLOWED_HOSTS="127.0.0.1",
                KERNODECK_DATABASE_URL=f"sqlite:///{partial}",
                KERNODECK_VAR_DIR=str(shared / "migrated-var"),
            )
            subprocess.run(
                [sys.executable, "-m", "kernodeck", "migrate", "-v", "0"],
                env=env,
                cwd=ROOT,
                check=True,
                timeout=600,  # a hang guard for a busy machine
            )
            partial.rename(template)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, target)
    return target
