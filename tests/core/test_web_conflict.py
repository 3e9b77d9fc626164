"""The web's net: an IntegrityError escaping a page's view is a 409 page, never a 500.

Services map the constraints they know to a precise 409 (tests/<app>/test_constraints.py);
this is the net under them. The write here is real: the profile form's service, made to
lose a race no service expected, inserts an account whose address another already has,
and the database's unique constraint on `accounts_user.email` refuses it.
"""

import logging

import pytest
from django.db import transaction
from django.test import Client

from kernodeck.accounts import views as account_views
from kernodeck.accounts.models import User
from tests.factories import make_user


def _losing_write(taken_email):
    def profile_update(*, user, first_name, last_name):
        with transaction.atomic():
            user.save(update_fields=["first_name", "last_name"])
            User.objects.create(email=taken_email, first_name=first_name, last_name=last_name)

    return profile_update


@pytest.fixture
def signed_in(monkeypatch):
    other = make_user(email="taken@example.org")
    user = make_user(email="racer@example.org", preferred_language="")
    monkeypatch.setattr(account_views.services, "profile_update", _losing_write(other.email))
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client, user


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "heading", "advice"),
    [
        ("es", "Este cambio ha chocado con otro hecho en el mismo", "No se ha guardado nada"),
        ("en", "This change conflicted with another made at the same", "Nothing was saved"),
    ],
)
def test_a_constraint_refusing_a_web_write_answers_a_409_page(
    signed_in, caplog, language, heading, advice
):
    client, user = signed_in
    with caplog.at_level(logging.WARNING, logger="kernodeck.core.middleware"):
        response = client.post(
            "/account/profile/",
            {"first_name": "Grace", "last_name": "Hopper"},
            HTTP_ACCEPT_LANGUAGE=language,
            HTTP_REFERER="http://testserver/account/",
        )

    assert response.status_code == 409
    page = response.content.decode()
    assert heading in page
    assert advice in page
    assert 'href="http://testserver/account/"' in page  # back to the form's page
    assert any(
        r.levelno == logging.WARNING and "/account/profile/" in r.getMessage()
        for r in caplog.records
    )
    # The view's transaction rolled back: nothing of the change was kept.
    user.refresh_from_db()
    assert user.first_name != "Grace"
    assert User.objects.filter(email="taken@example.org").count() == 1


@pytest.mark.django_db
def test_a_referer_from_another_site_is_not_offered_as_the_reload_link(signed_in):
    client, _user = signed_in
    response = client.post(
        "/account/profile/",
        {"first_name": "Grace", "last_name": "Hopper"},
        HTTP_REFERER="https://evil.example/phish",
    )
    assert response.status_code == 409
    assert "evil.example" not in response.content.decode()


@pytest.mark.django_db
def test_other_errors_in_a_web_view_are_still_500(monkeypatch):
    user = make_user()

    def broken(**kwargs):
        raise RuntimeError("not a constraint")

    monkeypatch.setattr(account_views.services, "profile_update", broken)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    response = client.post("/account/profile/", {"first_name": "G", "last_name": "H"})
    assert response.status_code == 500
