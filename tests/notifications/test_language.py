"""The account's e-mail language follows the language it uses on the site."""

import pytest
from django.urls import reverse

from kernodeck.accounts.models import User
from kernodeck.core.models import AuditEvent
from tests.factories import PASSWORD, api_post, make_user

pytestmark = pytest.mark.django_db


def test_registering_in_english_keeps_english(client):
    response = client.post(
        reverse("accounts:register"),
        {
            "first_name": "Grace",
            "last_name": "Hopper",
            "email": "grace@example.org",
            "password": "compiler nanoseconds cobol 1952",
        },
        HTTP_ACCEPT_LANGUAGE="en",
    )

    assert response.status_code == 302
    assert User.objects.get(email="grace@example.org").preferred_language == "en"


def test_registering_in_spanish_through_the_api_keeps_spanish(client):
    response = client.post(
        "/api/v1/auth/register",
        {
            "first_name": "Grace",
            "last_name": "Hopper",
            "email": "grace@example.org",
            "password": "compiler nanoseconds cobol 1952",
        },
        content_type="application/json",
        HTTP_ACCEPT_LANGUAGE="es-ES,es;q=0.9",
    )

    assert response.status_code == 202
    assert User.objects.get(email="grace@example.org").preferred_language == "es"


def test_signing_in_records_the_language_in_use(client):
    user = make_user(email="ada@example.org", preferred_language="es")

    client.post(
        reverse("accounts:signin"),
        {"email": "ada@example.org", "password": PASSWORD},
        HTTP_ACCEPT_LANGUAGE="en",
    )

    user.refresh_from_db()
    assert user.preferred_language == "en"
    event = AuditEvent.objects.get(action="account.language_changed")
    assert (event.before, event.after) == (
        {"preferred_language": "es"},
        {"preferred_language": "en"},
    )


def test_the_language_switch_is_remembered_for_a_signed_in_account(client):
    user = make_user(preferred_language="en")
    client.force_login(user)

    response = client.post(reverse("set_language"), {"language": "es", "next": "/"})

    assert response.status_code == 302
    assert response.cookies["django_language"].value == "es"
    user.refresh_from_db()
    assert user.preferred_language == "es"


@pytest.mark.parametrize("language", ["fr", "", "e\x00s", "٣", "x" * 5000])
def test_the_switch_ignores_a_language_we_do_not_offer(client, language):
    user = make_user(preferred_language="en")
    client.force_login(user)

    response = client.post(reverse("set_language"), {"language": language, "next": "/"})

    # A NUL byte is refused at the edge (core.middleware.InputGuardMiddleware) with 400.
    assert response.status_code == (400 if "\x00" in language else 302)
    user.refresh_from_db()
    assert user.preferred_language == "en"
    assert not AuditEvent.objects.filter(action="account.language_changed").exists()


def test_the_switch_still_works_signed_out(client):
    response = client.post(reverse("set_language"), {"language": "es", "next": "/"})

    assert response.status_code == 302
    assert response.cookies["django_language"].value == "es"


def test_api_tokens_do_not_change_the_language(client):
    user = make_user(email="ada@example.org", preferred_language="es")

    response = api_post(client, "/auth/token", {"email": "ada@example.org", "password": PASSWORD})

    assert response.status_code == 200
    user.refresh_from_db()
    assert user.preferred_language == "es"
