"""The settings module as a process sees it: run in subprocesses with a clean environment."""

import os
import subprocess
import sys
from pathlib import Path

from kernodeck.core.defaults import default_var_dir

ROOT = Path(__file__).resolve().parents[2]


def run_kernodeck(tmp_path, *args, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("KERNODECK_", "DJANGO_"))}
    clean.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        KERNODECK_VAR_DIR=str(tmp_path),
        KERNODECK_DATABASE_URL=f"sqlite:///{tmp_path / 'settings-test.db'}",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "kernodeck", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=clean,
        timeout=120,
    )


def test_production_mode_without_a_secret_key_refuses_to_start(tmp_path):
    result = run_kernodeck(tmp_path, "check", KERNODECK_ALLOWED_HOSTS="example.org")

    assert result.returncode == 2
    assert "KERNODECK_SECRET_KEY is required when KERNODECK_DEBUG is off" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_field_key_that_is_not_a_fernet_key_stops_the_process(tmp_path):
    result = run_kernodeck(tmp_path, "check", KERNODECK_DEBUG="1", KERNODECK_FIELD_KEYS="short")

    assert result.returncode != 0
    assert "KERNODECK_FIELD_KEYS must be comma-separated Fernet keys" in result.stderr


def test_bad_boolean_is_a_clear_configuration_error(tmp_path):
    result = run_kernodeck(tmp_path, "check", KERNODECK_DEBUG="maybe")

    assert result.returncode == 2
    assert "KERNODECK_DEBUG must be on or off" in result.stderr


def test_tron_block_scan_settings_out_of_range_stop_the_process(tmp_path):
    result = run_kernodeck(
        tmp_path, "check", KERNODECK_DEBUG="1", KERNODECK_TRON_BLOCKS_PER_CALL="101"
    )

    assert result.returncode != 0
    assert "KERNODECK_TRON_BLOCKS_PER_CALL must be 1 to 100" in result.stderr


def test_production_hashes_passwords_with_argon2_first():
    from config import settings as production

    assert production.PASSWORD_HASHERS[0] == "django.contrib.auth.hashers.Argon2PasswordHasher"


def test_a_private_extended_key_stops_the_process_at_start_up(tmp_path):
    # BIP32 test vector 1's master private key: public knowledge, never a real wallet.
    xprv = (
        "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPG"
        "JxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"
    )
    result = run_kernodeck(tmp_path, "check", KERNODECK_DEBUG="1", KERNODECK_XPUB_BITCOIN=xprv)

    assert result.returncode == 2
    assert "private" in result.stderr.lower()
    assert xprv not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_source_checkout_keeps_its_state_in_its_own_var_folder(tmp_path):
    # Run from another folder: the default does not depend on the working directory.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KERNODECK_", "DJANGO_"))}
    env.update(PYTHONPATH=str(ROOT), KERNODECK_DEBUG="1")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from config import settings; print(settings.VAR_DIR); print(settings.DATABASE_URL)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        str(ROOT / "var"),
        f"sqlite:///{ROOT / 'var' / 'kernodeck.db'}",
    ]


def test_an_installed_package_keeps_its_state_under_the_working_directory(tmp_path, monkeypatch):
    site_packages = tmp_path / "site-packages"  # no pyproject.toml: not a checkout
    site_packages.mkdir()
    monkeypatch.chdir(tmp_path)

    assert default_var_dir(site_packages) == tmp_path.resolve() / "var"
    (site_packages / "pyproject.toml").write_text("[project]\n")
    assert default_var_dir(site_packages) == site_packages / "var"
