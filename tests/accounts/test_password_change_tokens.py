"""A password change ends the account's API tokens too, unless the customer keeps them."""

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.accounts import services
from kernodeck.accounts.models import ApiToken
from kernodeck.core.models import AuditEvent
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a brand new passphrase for 2026"


def _works(raw: str) -> bool:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/v1/auth/me").status_code == 200


def test_changing_the_password_revokes_every_api_token(client):
    user = make_user()
    _t1, first = services.api_token_create(user=user, name="laptop")
    _t2, second = services.api_token_create(user=user, name="ci")
    stranger = make_user()
    _t3, theirs = services.api_token_create(user=stranger, name="other")
    assert _works(first) and _works(second)
    client.force_login(user)

    response = client.post(
        reverse("accounts:password"),
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        follow=True,
    )

    assert response.status_code == 200
    assert "2 API tokens have been revoked" in response.content.decode()
    assert not _works(first) and not _works(second)
    assert _works(theirs)  # another account's token is untouched
    assert ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() == 0
    event = AuditEvent.objects.get(action="account.password_changed", target_id=str(user.pk))
    assert event.data["api_tokens_revoked"] == 2


def test_the_form_can_keep_the_tokens(client):
    user = make_user()
    _token, raw = services.api_token_create(user=user, name="laptop")
    client.force_login(user)

    client.post(
        reverse("accounts:password"),
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD, "keep_api_tokens": "on"},
    )

    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert _works(raw)


def test_a_refused_change_revokes_nothing(client):
    user = make_user()
    _token, raw = services.api_token_create(user=user, name="laptop")
    client.force_login(user)
    client.post(
        reverse("accounts:password"),
        {"current_password": "not my password!!", "new_password": NEW_PASSWORD},
    )
    assert _works(raw)


def test_the_account_page_offers_the_choice_in_spanish(client):
    user = make_user()
    client.force_login(user)
    page = client.get(reverse("accounts:account"), HTTP_ACCEPT_LANGUAGE="es")
    assert 'name="keep_api_tokens"' in page.content.decode()
    assert "Mantener mis tokens de API" in page.content.decode()
