"""`kernodeck check --deploy` refuses each unsafe production setting with its own id.

Each case runs the real command in a subprocess with a controlled environment: a good
production configuration, then one bad setting at a time.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernodeck.core import defaults

ROOT = Path(__file__).resolve().parents[2]
GOOD_SECRET_KEY = "q7Vd-2mXo9LrTz4Kb8NcWf1Hs6JpYe3Ua0GiRk5Ql_t8Zx2Bw9Mn"
GOOD_FIELD_KEY = "bWFkZS11cC10ZXN0LWtleS1mb3Itc2V0dGluZ3MtMDA="  # 32 bytes, a test value
GOOD = {
    "KERNODECK_SECRET_KEY": GOOD_SECRET_KEY,
    "KERNODECK_ALLOWED_HOSTS": "gpu.example.org",
    "KERNODECK_FIELD_KEYS": GOOD_FIELD_KEY,
}
UNSET = None


def check_deploy(tmp_path, *args, **changes):
    """Run `kernodeck check --deploy` with the good configuration plus `changes`
    (a value of None removes that variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNODECK_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        KERNODECK_VAR_DIR=str(tmp_path),
        KERNODECK_DATABASE_URL=f"sqlite:///{tmp_path / 'deploy-check.db'}",
        **GOOD,
    )
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return subprocess.run(
        [sys.executable, "-m", "kernodeck", "check", "--deploy", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_the_readme_configuration_passes_with_no_warning(tmp_path):
    result = check_deploy(tmp_path, "--fail-level", "WARNING")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout


@pytest.mark.parametrize(
    ("changes", "check_id"),
    [
        pytest.param({"KERNODECK_ALLOWED_HOSTS": UNSET}, "kernodeck.E001", id="no-hosts"),
        pytest.param({"KERNODECK_SECRET_KEY": "abcde"}, "kernodeck.E002", id="short-key"),
        pytest.param(
            {"KERNODECK_SECRET_KEY": "abcd" * 20}, "kernodeck.E002", id="low-entropy-key"
        ),
        pytest.param(
            {"KERNODECK_SECRET_KEY": defaults.DEVELOPMENT_SECRET_KEY},
            "kernodeck.E003",
            id="development-key",
        ),
        pytest.param({"KERNODECK_DEBUG": "on"}, "kernodeck.E004", id="debug"),
        pytest.param({"KERNODECK_HTTPS": "off"}, "kernodeck.E005", id="https-off"),
        pytest.param(
            {"KERNODECK_FIELD_KEYS": f"{GOOD_FIELD_KEY},{defaults.DEVELOPMENT_FIELD_KEY}"},
            "kernodeck.E006",
            id="development-field-key",
        ),
        pytest.param({"KERNODECK_DEMO": "1"}, "kernodeck.E007", id="demo"),
        pytest.param({"KERNODECK_THROTTLE": "off"}, "kernodeck.E008", id="no-throttle"),
        pytest.param({"KERNODECK_FIELD_KEYS": UNSET}, "provisioning.E001", id="no-field-keys"),
    ],
)
def test_each_unsafe_setting_fails_the_deploy_check(tmp_path, changes, check_id):
    result = check_deploy(tmp_path, **changes)

    assert result.returncode == 1, result.stdout + result.stderr
    assert f"({check_id})" in result.stderr
    assert "Traceback" not in result.stderr


def test_https_off_with_a_stated_reason_passes_and_shows_the_reason(tmp_path):
    result = check_deploy(
        tmp_path,
        KERNODECK_HTTPS="off",
        KERNODECK_HTTPS_OFF_REASON="internal network only, reached over WireGuard",
    )

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "(kernodeck.I001)" in output
    assert "internal network only, reached over WireGuard" in output
    assert "kernodeck.E005" not in output


def test_the_readme_lists_every_deploy_check():
    source = (ROOT / "kernodeck" / "core" / "checks.py").read_text()
    source += (ROOT / "kernodeck" / "provisioning" / "checks.py").read_text()
    ids = set(re.findall(r'id="([a-z]+\.[EWI]\d{3})"', source))
    readme = (ROOT / "README.md").read_text()

    assert len(ids) >= 10
    assert sorted(i for i in ids if f"`{i}`" not in readme) == []
