"""Every constraint of accounts that a write can hit, and what answers when it does.

constraint                       kind      write path → answer
-------------------------------  --------  ---------------------------------------------------
User.email unique                race      services.account_register (web, API): a second
                                           registration of one address at the same moment
                                           gets the answer of a taken address (no account,
                                           nothing said), never an error
accounts_user_email_normalised   value     account_register stores normalize_email(...)
ApiToken.digest unique           internal  api_token_create: SHA-256 of 256 random bits
SshKey (user, fingerprint)       race      services.ssh_key_add (web, API): the same key
                                           added at the same moment → Conflict 409 "This key
                                           is already on your account."
"""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from kernodeck.accounts import services
from kernodeck.accounts.models import ApiToken, SshKey, User
from kernodeck.core.errors import Conflict
from tests.constraint_races import needs_postgres, race, unexpected
from tests.factories import PASSWORD, make_user


def _public_key():
    return (
        ed25519.Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )


def _register(email):
    return services.account_register(
        first_name="Ada", last_name="L", email=email, password=PASSWORD, ip_address="10.0.0.1"
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_registrations_of_one_address_at_the_same_moment_make_one_account():
    needs_postgres()
    outcomes = race(lambda i: _register("same@example.org"), 4)
    assert unexpected(outcomes) == []
    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert sum(isinstance(o, User) for o in outcomes) == 1
    assert User.objects.filter(email="same@example.org").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_key_added_at_the_same_moment_is_stored_once_and_the_rest_409():
    needs_postgres()
    user, key = make_user(), _public_key()
    outcomes = race(lambda i: services.ssh_key_add(user=user, public_key=key), 4)
    assert unexpected(outcomes) == []
    assert sum(isinstance(o, SshKey) for o in outcomes) == 1
    for refusal in (o for o in outcomes if not isinstance(o, SshKey)):
        assert isinstance(refusal, Conflict) and refusal.field == "public_key"
        assert "already on your account" in refusal.message
    assert SshKey.objects.filter(user=user).count() == 1


@pytest.mark.django_db
def test_the_same_key_twice_is_a_conflict_with_the_reason():
    user, key = make_user(), _public_key()
    services.ssh_key_add(user=user, public_key=key)
    with pytest.raises(Conflict) as refused:
        services.ssh_key_add(user=user, public_key=key, name="again")
    assert "already on your account" in refused.value.message
    assert SshKey.objects.filter(user=user).count() == 1


@pytest.mark.django_db
def test_an_address_is_stored_normalised_whatever_was_typed():
    user = _register("  Mixed.Case@Example.ORG ")
    assert user.email == "mixed.case@example.org"
    assert _register("MIXED.case@example.org") is None  # the same address: taken
    assert User.objects.filter(email="mixed.case@example.org").count() == 1


@pytest.mark.django_db
def test_token_digests_never_collide():
    user = make_user()
    for n in range(20):
        services.api_token_create(user=user, name=f"t{n}")
    digests = list(ApiToken.objects.filter(user=user).values_list("digest", flat=True))
    assert len(set(digests)) == len(digests) == 20
