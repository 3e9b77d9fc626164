import hashlib
import re

import pytest
from django.urls import reverse

from kernodeck.accounts import services
from kernodeck.accounts.models import ApiToken
from kernodeck.core.models import AuditEvent
from tests.factories import make_user

pytestmark = pytest.mark.django_db

TOKEN_RE = re.compile(r'<code class="secret" id="new-token">(kd_[A-Za-z0-9_-]+)</code>')


def test_token_is_shown_once_and_stored_hashed(client):
    user = make_user()
    client.force_login(user)

    client.post(reverse("accounts:token_create"), {"name": "laptop"})
    first_view = client.get(reverse("accounts:account")).content.decode()
    second_view = client.get(reverse("accounts:account")).content.decode()

    raw = TOKEN_RE.search(first_view).group(1)
    assert raw not in second_view
    token = ApiToken.objects.get(user=user)
    assert token.name == "laptop"
    assert token.digest == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in {token.digest, token.prefix}
    assert not ApiToken.objects.filter(digest=raw).exists()
    assert AuditEvent.objects.filter(action="account.token_created").count() == 1


def test_token_authenticates_api_calls_and_records_last_use(client):
    user = make_user()
    token, raw = services.api_token_create(user=user, name="ci")
    assert token.last_used_at is None

    assert services.api_token_authenticate(raw) == user

    token.refresh_from_db()
    assert token.last_used_at is not None


def test_revoked_token_is_refused(client):
    user = make_user()
    token, raw = services.api_token_create(user=user, name="old")
    client.force_login(user)

    confirm = client.get(reverse("accounts:token_revoke", args=[token.pk]))
    assert "Revoke this token?" in confirm.content.decode()
    client.post(reverse("accounts:token_revoke", args=[token.pk]))

    token.refresh_from_db()
    assert token.revoked_at is not None
    assert services.api_token_authenticate(raw) is None


def test_another_account_cannot_revoke_my_token(client):
    owner = make_user()
    token, _raw = services.api_token_create(user=owner, name="mine")
    client.force_login(make_user())

    assert client.get(reverse("accounts:token_revoke", args=[token.pk])).status_code == 404
    assert client.post(reverse("accounts:token_revoke", args=[token.pk])).status_code == 404

    token.refresh_from_db()
    assert token.revoked_at is None


def test_token_needs_a_name(client):
    user = make_user()
    client.force_login(user)

    response = client.post(reverse("accounts:token_create"), {"name": "   "})

    assert response.status_code == 200
    assert not ApiToken.objects.exists()
