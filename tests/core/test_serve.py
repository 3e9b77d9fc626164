"""`kernodeck serve` starts gunicorn, answers pages and probes, and stops on SIGTERM."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from kernodeck.core.management.commands.serve import worker_recycling
from tests.processes import migrated_copy

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def production_environment(tmp_path, **extra: str) -> dict[str, str]:
    """The environment of a production-mode `kernodeck` process on a SQLite file under
    `tmp_path`, without the suite's Redis."""
    env = {
        **os.environ,
        "KERNODECK_DEBUG": "0",
        "KERNODECK_SECRET_KEY": "x" * 60,
        "KERNODECK_HTTPS": "off",
        "KERNODECK_ALLOWED_HOSTS": "127.0.0.1",
        "KERNODECK_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
        "KERNODECK_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        **extra,
    }
    env.pop("KERNODECK_REDIS_URL", None)
    return env


@pytest.fixture
def server(tmp_path, tmp_path_factory):
    port = free_port()
    env = production_environment(tmp_path)
    migrated_copy(tmp_path_factory, tmp_path / "serve.db")  # the run's migrated file
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernodeck",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "2",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a hang guard for a busy machine
    while time.monotonic() < deadline:
        try:
            if get(f"{base}/healthz")[0] == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        pytest.fail(process.stdout.read().decode())
    yield base, process
    if process.poll() is None:
        process.kill()
        process.wait()


def test_serve_answers_probes_pages_and_api(server):
    base, _process = server

    assert get(f"{base}/healthz") == (200, b'{"status": "ok"}')
    status, body = get(f"{base}/readyz")
    assert status == 200
    assert b'"database": "ok"' in body
    assert get(f"{base}/gpus/")[0] == 200
    assert get(f"{base}/api/v1/offers")[0] == 200
    assert get(f"{base}/static/kernodeck/vendor/htmx.min.js")[0] == 200


def test_serve_stops_cleanly_on_sigterm(server):
    _base, process = server

    process.send_signal(signal.SIGTERM)

    assert process.wait(timeout=30) == 0
    log = process.stdout.read().decode()
    assert "Kernodeck web on" in log
    assert "Traceback" not in log


def test_the_demo_runs_web_and_worker_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("KERNODECK_") and key != "DJANGO_SETTINGS_MODULE"
    }
    env["KERNODECK_VAR_DIR"] = str(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "kernodeck", "demo", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600  # a hang guard for a busy machine
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if get(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.5)
        status, page = get(f"{base}/")
        assert status == 200
        assert b"demo" in page.lower()
        # The chain simulator runs beside web and worker, on the port it wrote under var/.
        simulator = f"http://127.0.0.1:{(tmp_path / 'chain-simulator.port').read_text()}"
        status, tip = get(f"{simulator}/bitcoin/api/blocks/tip/height")
        assert (status, tip.isdigit()) == (200, True)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    log = process.stdout.read().decode()
    assert "operator@kernodeck.test" in log
    assert "Demo stopped." in log
    assert f"chain simulator: {simulator}" in log
    assert process.returncode == 0
    assert not (tmp_path / "chain-simulator.port").exists()
    assert (tmp_path / "chain-simulator.json").exists()
    with pytest.raises(OSError):
        get(f"{simulator}/bitcoin/api/blocks/tip/height")


def test_workers_are_recycled_rarely_by_default_and_as_configured():
    assert worker_recycling({}) == (100_000, 10_000)
    assert worker_recycling({"KERNODECK_WEB_MAX_REQUESTS": "20000"}) == (20_000, 2_000)
    assert worker_recycling({"KERNODECK_WEB_MAX_REQUESTS": "0"}) == (0, 0)
    for bad in ("-1", "many", "1e5"):
        with pytest.raises(CommandError, match="KERNODECK_WEB_MAX_REQUESTS"):
            worker_recycling({"KERNODECK_WEB_MAX_REQUESTS": bad})
