"""Every Spanish catalogue is complete, and each compiled .mo is the one of its .po.

The project's catalogue lives in kernodeck/locale; a newer app keeps its own in
kernodeck/<app>/locale, and every one of them is checked here.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

KERNODECK = Path(__file__).resolve().parents[2] / "kernodeck"
CATALOGUES = sorted(KERNODECK.glob("**/locale/es/LC_MESSAGES/django.po"))

pytestmark = pytest.mark.skipif(
    not shutil.which("msgfmt"), reason="needs GNU gettext's msgfmt (apt-get install gettext)"
)


def _name(po: Path) -> str:
    return str(po.relative_to(KERNODECK).parents[2])


def test_the_project_and_app_catalogues_are_found():
    names = {_name(po) for po in CATALOGUES}

    assert {
        "locale",
        "demo/locale",
        "notifications/locale",
        "provisioning/locale",
        "sizing/locale",
        "support/locale",
    } <= names


@pytest.mark.parametrize("po", CATALOGUES, ids=_name)
def test_every_message_is_translated(po, tmp_path):
    result = subprocess.run(
        ["msgfmt", "--check", "--statistics", "-o", str(tmp_path / "django.mo"), str(po)],
        capture_output=True,
        text=True,
        check=True,
    )

    assert "untranslated" not in result.stderr
    assert "fuzzy" not in result.stderr


@pytest.mark.parametrize("po", CATALOGUES, ids=_name)
def test_the_committed_mo_is_compiled_from_the_po(po, tmp_path):
    subprocess.run(["msgfmt", "-o", str(tmp_path / "django.mo"), str(po)], check=True)

    assert (tmp_path / "django.mo").read_bytes() == po.with_suffix(".mo").read_bytes()
