"""`kernodeck backup` then `kernodeck restore` gives back every row, on both databases."""

import pytest
from django.apps import apps
from django.core.management import call_command
from django.core.management.base import CommandError

from kernodeck.orders import services as order_services
from tests.factories import make_offer, make_order, make_user

pytestmark = pytest.mark.django_db(transaction=True)


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
    order_services.order_cancel(order=cancelled, actor=customer)
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
