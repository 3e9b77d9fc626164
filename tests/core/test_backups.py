"""`kernodeck backup` then `kernodeck restore` gives back every row, on both databases;
backup files are readable by their owner only.

On PostgreSQL these tests run pg_dump/pg_restore, and are skipped where the client tools
are not installed.
"""

import os
import shutil
import stat

import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import override_settings

from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _client_tools():
    if connection.vendor == "postgresql" and not shutil.which("pg_dump"):
        pytest.skip("pg_dump is not installed (Debian: apt-get install postgresql-client)")


@pytest.fixture
def open_umask():
    """A umask that lets every new file be read by everyone, as on many hosts (022) and
    worse (000): the backup must not depend on it."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def every_row() -> dict[str, list[tuple]]:
    """Every row of every table Django manages, in primary-key order."""
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values_list())
        for model in apps.get_models()
        if model._meta.managed and not model._meta.proxy
    }


def test_a_backup_restores_every_row_exactly(tmp_path):
    customer = make_user()
    offer = make_offer(units_total=4)
    make_order(owner=customer, offer=offer, units=2)
    cancelled = make_order(owner=customer, offer=offer, units=1)
    settlement_orders.order_cancel(order=cancelled, actor=customer)
    before = every_row()
    assert sum(len(rows) for rows in before.values()) > 10

    destination = tmp_path / "kernodeck.backup"
    call_command("backup", str(destination))
    assert destination.stat().st_size > 0

    # Life goes on after the backup: new rows, changed rows.
    make_order(owner=make_user(), offer=offer, units=1)
    offer.gpu_model = "changed after the backup"
    offer.save(update_fields=["gpu_model"])
    assert every_row() != before

    call_command("restore", str(destination), "--yes")

    assert every_row() == before


def test_restore_needs_an_explicit_yes(tmp_path):
    make_user()
    destination = tmp_path / "kernodeck.backup"
    call_command("backup", str(destination))
    before = every_row()

    with pytest.raises(CommandError, match="--yes"):
        call_command("restore", str(destination))

    assert every_row() == before


def test_restore_refuses_a_file_that_is_not_a_backup(tmp_path):
    make_user()
    before = every_row()
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not a database\n" * 100)

    with pytest.raises(CommandError):
        call_command("restore", str(bogus), "--yes")

    assert every_row() == before


def test_restore_of_a_missing_file_says_so(tmp_path):
    with pytest.raises(CommandError, match="No backup file"):
        call_command("restore", str(tmp_path / "missing"), "--yes")


def test_the_default_backup_is_private_in_a_private_folder(tmp_path, open_umask):
    make_user()
    var = tmp_path / "var"
    with override_settings(VAR_DIR=var):
        call_command("backup")

    folder = var / "backups"
    (backup,) = folder.iterdir()
    assert backup.stat().st_size > 0
    assert mode(backup) == 0o600
    assert mode(folder) == 0o700
    assert mode(var) == 0o700  # created by the backup, so private too


def test_an_older_default_folder_is_made_private(tmp_path, open_umask):
    folder = tmp_path / "var" / "backups"
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)
    with override_settings(VAR_DIR=tmp_path / "var"):
        call_command("backup")

    assert mode(folder) == 0o700
    assert [mode(path) for path in folder.iterdir()] == [0o600]


def test_a_named_file_is_private_and_its_existing_folder_keeps_its_mode(tmp_path, open_umask):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    old = shared / "kernodeck.backup"
    old.write_text("an older file, readable by all")
    old.chmod(0o644)
    fresh = tmp_path / "new" / "nested" / "kernodeck.backup"

    call_command("backup", str(old))
    call_command("backup", str(fresh))

    assert mode(old) == 0o600
    assert old.read_bytes() != b"an older file, readable by all"
    assert mode(shared) == 0o755  # the operator's folder: not ours to change
    assert sorted(p.name for p in shared.iterdir()) == ["kernodeck.backup"]  # no leftovers
    assert mode(fresh) == 0o600
    assert mode(fresh.parent) == 0o700
    assert mode(fresh.parent.parent) == 0o700
