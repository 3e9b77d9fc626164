"""Metrics across gunicorn's worker processes (prometheus_client's multiprocess mode).

`kernodeck serve` calls `directory_prepare` before gunicorn forks: every worker then writes
its counters to files in PROMETHEUS_MULTIPROC_DIR, and a scrape answered by any worker sums
them all. The folder is emptied at each start (values of a previous run must not add up).
"""

import os
from pathlib import Path

from django.conf import settings

ENV = "PROMETHEUS_MULTIPROC_DIR"


def directory_prepare() -> Path:
    """Choose (PROMETHEUS_MULTIPROC_DIR or var/metrics), create and empty the folder, and
    export it to the processes about to start."""
    folder = Path(os.environ.get(ENV) or Path(settings.VAR_DIR) / "metrics")
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()
    os.environ[ENV] = str(folder)
    return folder


def worker_exited(server, worker) -> None:
    """gunicorn's child_exit hook: forget the live gauges of a worker that is gone."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
