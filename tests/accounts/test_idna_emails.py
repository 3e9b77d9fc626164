"""An address with an international domain and its punycode form are one account."""

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.accounts.models import User, normalize_email
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

UNICODE = "ana@café.example"
PUNYCODE = "ana@xn--caf-dma.example"


def test_normalisation_maps_the_domain_to_idna_and_keeps_ascii_as_is():
    assert normalize_email(" Ana@CAFÉ.example ") == PUNYCODE
    assert normalize_email(PUNYCODE) == PUNYCODE
    assert normalize_email("Ada@Example.org") == "ada@example.org"
    # Not a domain IDNA can encode: left for the validator to refuse.
    assert normalize_email("a@\u200b.example") == "a@\u200b.example"


@pytest.mark.parametrize(("first", "second"), [(UNICODE, PUNYCODE), (PUNYCODE, UNICODE)])
def test_registering_both_forms_makes_one_account(client, first, second):
    body = {"first_name": "Ana", "last_name": "B", "password": PASSWORD}

    created = client.post("/api/v1/auth/register", {**body, "email": first}, "application/json")
    again = client.post("/api/v1/auth/register", {**body, "email": second}, "application/json")

    assert created.status_code == again.status_code == 202
    assert created.json() == again.json()
    assert User.objects.get().email == PUNYCODE


@pytest.mark.parametrize("typed", [UNICODE, PUNYCODE, "ANA@CAFÉ.EXAMPLE"])
def test_either_form_signs_in_on_the_web_and_the_api(typed):
    User.objects.create_user(UNICODE, PASSWORD, first_name="Ana", last_name="B")

    web = Client().post(reverse("accounts:signin"), {"email": typed, "password": PASSWORD})
    api = Client().post(
        "/api/v1/auth/token", {"email": typed, "password": PASSWORD}, "application/json"
    )

    assert web.status_code == 302
    assert api.status_code == 200
