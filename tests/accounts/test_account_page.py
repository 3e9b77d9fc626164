import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.core.models import AuditEvent
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a brand new passphrase for 2026"


def test_password_change_asks_for_the_current_one(client):
    user = make_user()
    client.force_login(user)

    response = client.post(
        reverse("accounts:password"),
        {"current_password": "not my password!!", "new_password": NEW_PASSWORD},
    )

    assert "Your current password is not correct." in response.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    assert not AuditEvent.objects.filter(action="account.password_changed").exists()


def test_password_change_keeps_this_browser_and_signs_out_the_others(client):
    user = make_user()
    other = Client()
    other.force_login(user)
    client.force_login(user)

    response = client.post(
        reverse("accounts:password"),
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD},
    )

    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert client.get(reverse("accounts:account")).status_code == 200
    assert other.get(reverse("accounts:account")).status_code == 302
    assert AuditEvent.objects.filter(
        action="account.password_changed", target_id=str(user.pk)
    ).exists()


def test_new_password_follows_the_length_rule(client):
    user = make_user()
    client.force_login(user)

    response = client.post(
        reverse("accounts:password"), {"current_password": PASSWORD, "new_password": "short"}
    )

    assert "Your password must be 15 to 128 characters long." in response.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_profile_update_is_audited_with_before_and_after(client):
    user = make_user(first_name="Ada", last_name="Byron")
    client.force_login(user)

    client.post(reverse("accounts:profile"), {"first_name": "Ada", "last_name": "Lovelace"})

    user.refresh_from_db()
    assert user.last_name == "Lovelace"
    event = AuditEvent.objects.get(action="account.profile_changed")
    assert event.before == {"first_name": "Ada", "last_name": "Byron"}
    assert event.after == {"first_name": "Ada", "last_name": "Lovelace"}


def test_account_page_needs_sign_in(client):
    response = client.get(reverse("accounts:account"))

    assert response.status_code == 302
    assert response.url.startswith(reverse("accounts:signin"))
