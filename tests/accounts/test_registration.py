import pytest
from django.contrib.auth.hashers import identify_hasher
from django.urls import reverse

from kernodeck.accounts import services
from kernodeck.accounts.models import User
from kernodeck.core.errors import InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.notifications.models import OutboxMessage
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

RULE = "Your password must be 15 to 128 characters long."


def register(client, **overrides):
    data = {
        "first_name": "Grace",
        "last_name": "Hopper",
        "email": "grace@example.org",
        "password": "compiler nanoseconds cobol 1952",
    }
    data.update(overrides)
    return client.post(reverse("accounts:register"), data)


def password_of(length: int) -> str:
    # Varied characters so only the length rule can object.
    return ("Kx7!mq2Zt9wPv4Lr" * 10)[:length]


@pytest.mark.parametrize("length", [15, 128])
def test_password_at_the_length_limits_is_accepted(client, length):
    response = register(client, password=password_of(length))

    assert response.status_code == 302
    assert User.objects.filter(email="grace@example.org").exists()


@pytest.mark.parametrize("length", [14, 129])
def test_password_outside_the_length_limits_is_refused_with_the_rule(client, length):
    response = register(client, password=password_of(length))

    assert response.status_code == 200
    assert RULE in response.content.decode()
    assert not User.objects.exists()


def test_common_password_is_refused(client):
    response = register(client, password="1q2w3e4r5t6y7u8i9o0p")

    assert "too common" in response.content.decode()
    assert not User.objects.exists()


def test_password_similar_to_the_email_is_refused(client):
    response = register(
        client, email="grace.hopper.navy@example.org", password="grace.hopper.navy"
    )

    assert "too similar" in response.content.decode()
    assert not User.objects.exists()


def test_registration_hashes_with_argon2id_and_the_new_account_then_signs_in(client):
    response = register(client)

    user = User.objects.get()
    assert identify_hasher(user.password).algorithm == "argon2"
    assert user.password.startswith("argon2$argon2id$")
    # Registering signs nobody in (a taken address could not be told apart otherwise)...
    assert response["Location"] == reverse("accounts:signin")
    assert "_auth_user_id" not in client.session
    # ...and the password just chosen does.
    signed_in = client.post(
        reverse("accounts:signin"),
        {"email": "grace@example.org", "password": "compiler nanoseconds cobol 1952"},
    )
    assert signed_in.status_code == 302
    assert client.get(reverse("accounts:account")).status_code == 200


def test_the_next_page_survives_registration_and_sign_in(client):
    target = "/orders/new/?offer=b200&days=30"

    response = client.post(
        reverse("accounts:register") + "?next=" + target.replace("&", "%26"),
        {
            "first_name": "Grace",
            "last_name": "Hopper",
            "email": "grace@example.org",
            "password": "compiler nanoseconds cobol 1952",
            "next": target,
        },
    )

    assert response["Location"].startswith(reverse("accounts:signin") + "?next=")
    signed_in = client.post(
        response["Location"],
        {"email": "grace@example.org", "password": "compiler nanoseconds cobol 1952"},
    )
    assert signed_in["Location"] == target


def _answer(response) -> str:
    """The page without what differs between any two responses (the CSRF token)."""
    import re

    return re.sub(r"[A-Za-z0-9]{64}", "<csrf>", response.content.decode())


def test_registration_with_an_existing_email_answers_like_a_new_one(client):
    from django.test import Client

    owner = make_user(email="ada@example.org", first_name="Ada")
    before = owner.password

    taken, new = Client(), Client()
    taken_first = register(taken, email="ADA@example.org ", password=PASSWORD)
    new_first = register(new, email="grace@example.org")
    taken_page = taken.get(taken_first["Location"])
    new_page = new.get(new_first["Location"])

    assert taken_first.status_code == new_first.status_code == 302
    assert taken_first["Location"] == new_first["Location"] == reverse("accounts:signin")
    assert taken_page.status_code == new_page.status_code == 200
    assert _answer(taken_page) == _answer(new_page)
    assert "If this address is new, your account is ready" in _answer(new_page)
    # Neither is signed in, no e-mail is queued for either, the account is untouched.
    assert "_auth_user_id" not in taken.session and "_auth_user_id" not in new.session
    assert OutboxMessage.objects.count() == 0
    owner.refresh_from_db()
    assert (owner.password, owner.first_name) == (before, "Ada")
    assert User.objects.count() == 2
    assert AuditEvent.objects.filter(action="account.register_taken").count() == 1


def test_email_is_trimmed_and_compared_without_case(client):
    make_user(email="Ada@Example.org")

    response = register(client, email="  ada@example.ORG ")

    assert response.status_code == 302
    assert User.objects.count() == 1


def test_a_taken_address_changes_nothing_with_or_without_the_right_password():
    owner = make_user(email="ada@example.org")

    right = services.account_register(
        first_name="X",
        last_name="Y",
        email="ADA@example.org",
        password=PASSWORD,
        ip_address="10.0.0.1",
    )
    wrong = services.account_register(
        first_name="X",
        last_name="Y",
        email="ada@example.org",
        password="some other long password 99",
        ip_address="10.0.0.1",
    )

    assert right is None and wrong is None
    owner.refresh_from_db()
    assert owner.first_name != "X"
    assert owner.check_password(PASSWORD)
    assert User.objects.count() == 1


def test_a_taken_address_still_has_its_password_checked(client):
    make_user(email="ada@example.org")

    response = register(client, email="ada@example.org", password=password_of(14))

    assert response.status_code == 200
    assert RULE in response.content.decode()


def test_duplicate_registration_through_the_web_grants_no_access(client):
    make_user(email="ada@example.org")

    response = register(client, email="ada@example.org", password=PASSWORD)

    assert response.status_code == 302
    assert "_auth_user_id" not in client.session
    assert client.get(reverse("accounts:account")).status_code == 302


def test_database_refuses_an_address_not_in_normalised_form():
    from django.db import IntegrityError, transaction

    make_user(email="ada@example.org")
    for raw in ["ADA@EXAMPLE.ORG", " ada@example.org", "Other@example.org"]:
        with pytest.raises(IntegrityError), transaction.atomic():
            User(email=raw, first_name="A", last_name="B").save()


def test_database_refuses_the_same_address_twice():
    from django.db import IntegrityError, transaction

    make_user(email="ada@example.org")
    with pytest.raises(IntegrityError), transaction.atomic():
        User(email="ada@example.org", first_name="A", last_name="B").save()


def test_registration_writes_an_audit_event():
    user = services.account_register(
        first_name="Grace",
        last_name="Hopper",
        email="grace@example.org",
        password="compiler nanoseconds cobol 1952",
        ip_address="10.0.0.2",
    )

    event = AuditEvent.objects.get(action="account.registered")
    assert event.target_id == str(user.pk)
    assert event.ip_address == "10.0.0.2"


def test_blank_names_are_refused_by_the_service():
    with pytest.raises(InvalidInput) as refused:
        services.account_register(
            first_name="  ",
            last_name="Hopper",
            email="grace@example.org",
            password="compiler nanoseconds cobol 1952",
            ip_address="10.0.0.2",
        )
    assert refused.value.field == "first_name"
    assert not User.objects.exists()


def test_registration_is_throttled_per_address(client, settings):
    settings.KERNODECK_THROTTLE_REGISTER_IP = (2, 3600)
    register(client, email="one@example.org")
    register(client, email="two@example.org")

    response = register(client, email="three@example.org")

    assert response.status_code == 429
    assert "Too many registrations" in response.content.decode()
    assert not User.objects.filter(email="three@example.org").exists()
