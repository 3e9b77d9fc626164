import pytest
from django.contrib.auth.hashers import identify_hasher
from django.urls import reverse

from kernodeck.accounts import services
from kernodeck.accounts.models import User
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.models import AuditEvent
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


def test_registration_signs_in_and_hashes_with_argon2id(client):
    register(client)

    user = User.objects.get()
    assert identify_hasher(user.password).algorithm == "argon2"
    assert user.password.startswith("argon2$argon2id$")
    assert client.get(reverse("accounts:account")).status_code == 200


def test_email_is_trimmed_and_compared_without_case(client):
    make_user(email="Ada@Example.org")

    response = register(client, email="  ada@example.ORG ")

    assert "An account with this email already exists" in response.content.decode()
    assert User.objects.count() == 1


def test_duplicate_refusal_is_worded_the_same_with_or_without_the_right_password(client):
    owner = make_user(email="ada@example.org")

    with pytest.raises(Conflict) as right:
        services.account_register(
            first_name="X",
            last_name="Y",
            email="ADA@example.org",
            password=PASSWORD,
            ip_address="10.0.0.1",
        )
    with pytest.raises(Conflict) as wrong:
        services.account_register(
            first_name="X",
            last_name="Y",
            email="ada@example.org",
            password="some other long password 99",
            ip_address="10.0.0.1",
        )

    assert right.value.message == wrong.value.message
    owner.refresh_from_db()
    assert owner.first_name != "X"
    assert User.objects.count() == 1


def test_duplicate_registration_through_the_web_grants_no_access(client):
    make_user(email="ada@example.org")

    response = register(client, email="ada@example.org", password=PASSWORD)

    assert response.status_code == 200
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
    client.post(reverse("accounts:signout"))
    register(client, email="two@example.org")
    client.post(reverse("accounts:signout"))

    response = register(client, email="three@example.org")

    assert response.status_code == 429
    assert "Too many registrations" in response.content.decode()
    assert not User.objects.filter(email="three@example.org").exists()
