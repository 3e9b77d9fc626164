"""Commands run with KERNODECK_DEMO on read the demo's configuration (key, database)."""

import os
import subprocess
import sys
import threading
from pathlib import Path

from kernodeck.demo.simulator import make_server
from tests.processes import migrated_copy

ROOT = Path(__file__).resolve().parents[2]


def kernodeck(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "kernodeck", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard for a busy machine
    )


def bare_environment(tmp_path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("KERNODECK_") and key != "DJANGO_SETTINGS_MODULE"
    }
    env["KERNODECK_VAR_DIR"] = str(tmp_path)
    return env


def test_watch_chains_runs_with_the_demo_variables_alone(tmp_path, tmp_path_factory):
    env = {**bare_environment(tmp_path), "KERNODECK_DEMO": "1"}
    # The demo's database is var/kernodeck.db: the run's migrated file put there is the one
    # `migrate` reads (nothing left to apply), not a new one somewhere else.
    migrated_copy(tmp_path_factory, tmp_path / "kernodeck.db")

    migrated = kernodeck("migrate", env=env)
    assert migrated.returncode == 0, migrated.stderr
    assert "No migrations to apply." in migrated.stdout
    result = kernodeck("watch_chains", "--once", env=env)

    assert result.returncode == 0, result.stderr
    assert "KERNODECK_SECRET_KEY is required" not in result.stderr
    assert (tmp_path / "demo-secret-key").exists()
    assert (tmp_path / "kernodeck.db").exists()
    # It says which networks it would contact: none, with no demo chain simulator running.
    assert "bitcoin: no chain API configured" in result.stdout
    assert "solana: no chain API configured" in result.stdout

    # With the demo's chain simulator running (its port file under var/), it watches that.
    server = make_server(tmp_path / "chain-simulator.json")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    port = server.server_address[1]
    (tmp_path / "chain-simulator.port").write_text(str(port))
    try:
        result = kernodeck("watch_chains", "--once", env=env)
    finally:
        server.shutdown()
        thread.join()
        server.server_close()

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:5] == [
        f"bitcoin: http://127.0.0.1:{port}/bitcoin/api",
        f"litecoin: http://127.0.0.1:{port}/litecoin/api",
        f"ethereum: http://127.0.0.1:{port}/ethereum",
        f"tron: http://127.0.0.1:{port}/tron",
        f"solana: http://127.0.0.1:{port}/solana",
    ]
    # One pass over each simulated network, none failing.
    assert [line.split()[0] for line in lines[5:]] == [
        "network=bitcoin",
        "network=litecoin",
        "network=ethereum",
        "network=tron",
        "network=solana",
    ]
    assert "error=" not in result.stdout


def test_without_demo_mode_a_command_still_needs_the_secret_key(tmp_path):
    result = kernodeck("watch_chains", "--once", env=bare_environment(tmp_path))

    assert result.returncode == 2
    assert "KERNODECK_SECRET_KEY is required" in result.stderr
    assert not (tmp_path / "demo-secret-key").exists()
