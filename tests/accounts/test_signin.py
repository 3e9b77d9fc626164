import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.accounts.models import Session
from kernodeck.core.models import AuditEvent
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db


def sign_in(client, email, password=PASSWORD, ip="10.1.1.1"):
    return client.post(
        reverse("accounts:signin"), {"email": email, "password": password}, REMOTE_ADDR=ip
    )


def test_sign_in_with_email_in_any_case(client):
    make_user(email="ada@example.org")

    response = sign_in(client, " ADA@example.org")

    assert response.status_code == 302
    assert client.get(reverse("accounts:account")).status_code == 200


def test_wrong_password_is_refused_and_audited(client):
    user = make_user(email="ada@example.org")

    response = sign_in(client, "ada@example.org", "not the password at all")

    assert "The email or the password is not correct." in response.content.decode()
    assert "_auth_user_id" not in client.session
    event = AuditEvent.objects.get(action="account.signin_failed")
    assert event.target_id == str(user.pk)


def test_account_is_locked_after_too_many_failures_even_with_the_right_password(client, settings):
    settings.KERNODECK_THROTTLE_SIGNIN_ACCOUNT = (3, 900)
    make_user(email="ada@example.org")
    for n in range(3):
        sign_in(client, "ada@example.org", f"wrong password number {n}", ip=f"10.2.0.{n}")

    response = sign_in(client, "ada@example.org", PASSWORD, ip="10.2.0.99")

    assert response.status_code == 429
    body = response.content.decode()
    assert "Too many failed sign-ins for this account." in body
    assert "Try again in 15 minutes." in body
    assert "_auth_user_id" not in client.session


def test_address_is_locked_after_too_many_failures_across_accounts(client, settings):
    settings.KERNODECK_THROTTLE_SIGNIN_IP = (3, 900)
    make_user(email="victim@example.org")
    for n in range(3):
        sign_in(client, f"guess{n}@example.org", "wrong password", ip="10.3.3.3")

    locked = sign_in(client, "victim@example.org", PASSWORD, ip="10.3.3.3")
    elsewhere = sign_in(Client(), "victim@example.org", PASSWORD, ip="10.4.4.4")

    assert locked.status_code == 429
    assert "from your network" in locked.content.decode()
    assert elsewhere.status_code == 302


def test_throttle_off_switch_lets_every_attempt_through(client, settings):
    settings.KERNODECK_THROTTLE = False
    settings.KERNODECK_THROTTLE_SIGNIN_ACCOUNT = (1, 900)
    make_user(email="ada@example.org")
    sign_in(client, "ada@example.org", "wrong password")
    sign_in(client, "ada@example.org", "wrong password")

    assert sign_in(client, "ada@example.org").status_code == 302


def test_sign_out_needs_post_and_ends_the_session(client):
    user = make_user()
    client.force_login(user)

    assert client.get(reverse("accounts:signout")).status_code == 405
    client.post(reverse("accounts:signout"))

    assert client.get(reverse("accounts:account")).status_code == 302


def test_sessions_are_listed_and_others_can_be_ended(client):
    make_user(email="ada@example.org")
    other_browser = Client(HTTP_USER_AGENT="OtherBrowser/1.0")
    sign_in(other_browser, "ada@example.org")
    client.defaults["HTTP_USER_AGENT"] = "ThisBrowser/2.0"
    sign_in(client, "ada@example.org")

    page = client.get(reverse("accounts:account")).content.decode()
    assert "OtherBrowser/1.0" in page
    assert "ThisBrowser/2.0" in page
    assert Session.objects.filter(user__email="ada@example.org").count() == 2

    client.post(reverse("accounts:sessions_end_others"))

    assert Session.objects.filter(user__email="ada@example.org").count() == 1
    assert other_browser.get(reverse("accounts:account")).status_code == 302
    assert client.get(reverse("accounts:account")).status_code == 200


def test_same_account_from_two_browsers(client):
    make_user(email="ada@example.org", first_name="Ada")
    second = Client()
    sign_in(client, "ada@example.org")
    sign_in(second, "ada@example.org")

    assert "ada@example.org" in client.get(reverse("accounts:account")).content.decode()
    assert "ada@example.org" in second.get(reverse("accounts:account")).content.decode()


def test_next_parameter_is_followed_only_within_the_site(client):
    make_user(email="ada@example.org")

    response = client.post(
        reverse("accounts:signin") + "?next=https://evil.example/",
        {"email": "ada@example.org", "password": PASSWORD},
    )

    assert response.url == reverse("accounts:account")


def test_backoffice_login_goes_through_the_throttled_sign_in(client):
    response = client.get("/backoffice/login/?next=/backoffice/")

    assert response.status_code == 302
    assert response.url.startswith(reverse("accounts:signin"))
