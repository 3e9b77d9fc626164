"""Look-alike addresses are one account: the local part is NFKC-composed and case-folded.
Existing look-alikes are reported by the data migration, never merged."""

import importlib

import pytest
from django.apps import apps
from django.test import Client
from django.urls import reverse

from kernodeck.accounts.models import User, normalize_email
from kernodeck.core.models import AuditEvent
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

LONG_S = "\u017fam@example.org"  # long s: the validator accepts it
FULL_WIDTH = "\uff53\uff41\uff4d@example.org"  # full-width sam


@pytest.mark.parametrize("typed", [LONG_S, FULL_WIDTH, "SAM@Example.org", " sam@example.org "])
def test_look_alikes_normalise_to_one_address(typed):
    assert normalize_email(typed) == "sam@example.org"


def test_other_scripts_are_kept_but_folded():
    assert normalize_email("ÁNA@example.org") == "ána@example.org"
    assert normalize_email("STRASSE@example.org") == normalize_email("straße@example.org")


@pytest.mark.parametrize("lookalike", [LONG_S, FULL_WIDTH])
def test_a_look_alike_cannot_register_beside_the_account(client, lookalike):
    make_user(email="sam@example.org")
    body = {"first_name": "S", "last_name": "B", "password": PASSWORD, "email": lookalike}
    api = client.post("/api/v1/auth/register", body, content_type="application/json")
    assert api.status_code == 202  # the same answer as for a new address
    web = Client().post(
        reverse("accounts:register"),
        {**body, "password1": PASSWORD, "password2": PASSWORD, "accept_terms": "on"},
    )
    assert web.status_code in {200, 302}
    assert User.objects.count() == 1


def test_the_look_alike_signs_in_to_the_one_account():
    make_user(email="sam@example.org")
    api = Client().post(
        "/api/v1/auth/token", {"email": LONG_S, "password": PASSWORD}, "application/json"
    )
    assert api.status_code == 200


def _migration():
    return importlib.import_module("kernodeck.accounts.migrations.0005_email_local_part_folded")


def test_the_migration_folds_lone_addresses_and_reports_collisions_without_merging(caplog):
    sam = make_user(email="sam@example.org")
    twin = make_user(email="other@example.org")
    lone = make_user(email="someone@example.org")
    # Stored as the old rule kept them (lower-case only).
    User.objects.filter(pk=twin.pk).update(email=LONG_S)
    User.objects.filter(pk=lone.pk).update(email="\uff41\uff4e\uff41@example.org")  # wide ana

    _migration().forwards(apps, None)

    assert User.objects.get(pk=lone.pk).email == "ana@example.org"
    assert User.objects.get(pk=sam.pk).email == "sam@example.org"
    assert User.objects.get(pk=twin.pk).email == LONG_S  # not merged, not changed
    reports = AuditEvent.objects.filter(action="accounts.email_lookalike")
    assert sorted(int(e.target_id) for e in reports) == sorted([sam.pk, twin.pk])
    assert reports.first().data["folded"] == "sam@example.org"
    assert "left unchanged, not merged" in caplog.text
    assert User.objects.count() == 3
