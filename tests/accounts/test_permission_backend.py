"""Operators' permissions in one query per request (accounts/backends.py), same answers.

An operator who is not a superuser is refused without the permission and let in with it,
whether it is held directly or through a group; a permission withdrawn counts at the next
request (nothing is kept across requests); a wrong password is still refused."""

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.factories import make_user

pytestmark = pytest.mark.django_db

OUTBOX = "/backoffice/outbox/?status=sent"


def permission(codename):
    return Permission.objects.get(codename=codename)


def signed_in(user):
    client = Client()
    client.force_login(user)
    return client


def permission_queries(captured):
    return [q["sql"] for q in captured.captured_queries if '"auth_permission"' in q["sql"]]


def test_operator_without_the_permission_is_refused():
    operator = make_user(staff=True)
    operator.user_permissions.add(permission("operate_rentals"))  # an unrelated one
    assert signed_in(operator).get(OUTBOX).status_code == 403


def test_operator_with_the_permission_gets_in_with_one_permission_query():
    operator = make_user(staff=True)
    operator.user_permissions.add(permission("view_outbox"))
    client = signed_in(operator)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(OUTBOX).status_code == 200
    assert len(permission_queries(captured)) == 1


def test_operator_with_the_permission_through_a_group_gets_in():
    operator = make_user(staff=True)
    group = Group.objects.create(name="outbox readers")
    group.permissions.add(permission("view_outbox"))
    operator.groups.add(group)
    assert signed_in(operator).get(OUTBOX).status_code == 200
    assert operator.get_all_permissions() >= {"notifications.view_outbox"}


def test_a_withdrawn_permission_counts_at_the_next_request():
    operator = make_user(staff=True)
    operator.user_permissions.add(permission("view_outbox"))
    client = signed_in(operator)
    assert client.get(OUTBOX).status_code == 200
    operator.user_permissions.clear()
    assert client.get(OUTBOX).status_code == 403


def test_an_inactive_operator_holds_nothing():
    operator = make_user(staff=True)
    operator.user_permissions.add(permission("view_outbox"))
    operator.is_active = False
    operator.save()
    assert operator.get_all_permissions() == set()
    assert not operator.has_perm("notifications.view_outbox")


def test_sign_in_still_checks_the_password():
    user = make_user()
    user.set_password("right horse battery staple")
    user.save()
    assert authenticate(email=user.email, password="wrong") is None
    assert authenticate(email=user.email, password="right horse battery staple") == user
