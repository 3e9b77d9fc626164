"""Commands run with KERNODECK_DEMO on read the demo's configuration (key, database)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kernodeck(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "kernodeck", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def bare_environment(tmp_path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("KERNODECK_") and key != "DJANGO_SETTINGS_MODULE"
    }
    env["KERNODECK_VAR_DIR"] = str(tmp_path)
    return env


def test_watch_chains_runs_with_the_demo_variables_alone(tmp_path):
    env = {**bare_environment(tmp_path), "KERNODECK_DEMO": "1"}

    migrated = kernodeck("migrate", "-v", "0", env=env)
    assert migrated.returncode == 0, migrated.stderr
    result = kernodeck("watch_chains", "--once", env=env)

    assert result.returncode == 0, result.stderr
    assert "KERNODECK_SECRET_KEY is required" not in result.stderr
    assert (tmp_path / "demo-secret-key").exists()
    assert (tmp_path / "kernodeck.db").exists()


def test_without_demo_mode_a_command_still_needs_the_secret_key(tmp_path):
    result = kernodeck("watch_chains", "--once", env=bare_environment(tmp_path))

    assert result.returncode == 2
    assert "KERNODECK_SECRET_KEY is required" in result.stderr
    assert not (tmp_path / "demo-secret-key").exists()
