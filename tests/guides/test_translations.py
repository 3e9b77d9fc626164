"""The Spanish catalogue is complete, and the compiled .mo is the one of the .po."""

import shutil
import subprocess
from pathlib import Path

import pytest

LOCALE = Path(__file__).resolve().parents[2] / "kernodeck" / "locale" / "es" / "LC_MESSAGES"

pytestmark = pytest.mark.skipif(
    not shutil.which("msgfmt"), reason="needs GNU gettext's msgfmt (apt-get install gettext)"
)


def test_every_message_is_translated(tmp_path):
    result = subprocess.run(
        [
            "msgfmt",
            "--check",
            "--statistics",
            "-o",
            str(tmp_path / "django.mo"),
            str(LOCALE / "django.po"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )

    assert "untranslated" not in result.stderr
    assert "fuzzy" not in result.stderr


def test_the_committed_mo_is_compiled_from_the_po(tmp_path):
    subprocess.run(
        ["msgfmt", "-o", str(tmp_path / "django.mo"), str(LOCALE / "django.po")], check=True
    )

    assert (tmp_path / "django.mo").read_bytes() == (LOCALE / "django.mo").read_bytes()
