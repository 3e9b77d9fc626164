"""Under `kernodeck serve`, /metrics sums the counters of every gunicorn worker."""

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.core.test_serve import free_port, get, production_environment
from tests.observability.helpers import TOKEN
from tests.processes import migrated_copy

ROOT = Path(__file__).resolve().parents[2]
REQUESTS = 12


def test_a_scrape_counts_the_requests_every_worker_answered(tmp_path, tmp_path_factory):
    port = free_port()
    env = production_environment(tmp_path, KERNODECK_METRICS_TOKEN=TOKEN)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    stale = tmp_path / "metrics" / "counter_4242.db"
    stale.parent.mkdir()
    stale.write_bytes(b"left by an earlier run")
    migrated_copy(tmp_path_factory, tmp_path / "serve.db")  # the run's migrated file
    command = [sys.executable, "-m", "kernodeck", "serve", "--bind", f"127.0.0.1:{port}"]
    process = subprocess.Popen(
        [*command, "--workers", "3", "--threads", "1", "--no-access-log"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # a hang guard for a busy machine
        while time.monotonic() < deadline:
            try:
                if get(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.2)
        for _ in range(REQUESTS):
            assert get(f"{base}/gpus/")[0] == 200
        request = urllib.request.Request(
            f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
        assert get(f"{base}/metrics")[0] == 403
    finally:
        process.terminate()
        process.wait(timeout=30)

    counted = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "kernodeck_http_requests_total" and sample.labels["route"] == "gpus/"
    ]
    assert counted == [REQUESTS]
    files = list((tmp_path / "metrics").glob("*.db"))
    assert files and not stale.exists()
