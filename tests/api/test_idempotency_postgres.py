"""`Idempotency-Key` on PostgreSQL: concurrent retries and dropped connections never write twice.

The concurrent requests run on real connections of their own; the dropped connections are
the request's own backend terminated from a second connection (what a restart does), before
the write and at the moment it commits."""

import threading

import pytest
from django.db import connection, connections
from django.db.models.signals import post_save
from django.test import Client

from kernodeck.core.models import IdempotentAnswer
from kernodeck.ledger.models import EntryKind, LedgerEntry, TopUp
from tests.api.test_database_dropped import _terminate_our_backend
from tests.api.test_idempotency import TOPUP, bearer, post
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


def test_eight_concurrent_retries_with_one_key_write_one_top_up_and_answer_alike(
    configured, fresh_rates
):
    api = bearer()
    token = api.defaults["HTTP_AUTHORIZATION"]
    start = threading.Barrier(8)
    answers = []

    def send():
        try:
            client = Client(HTTP_AUTHORIZATION=token, raise_request_exception=False)
            start.wait()
            answers.append(post(client, "/topups", TOPUP, key="burst"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert [a.status_code for a in answers] == [201] * 8
    assert len({a.content for a in answers}) == 1
    assert sum(a.get("Idempotent-Replayed") == "true" for a in answers) == 7
    assert TopUp.objects.filter(account=api.user).count() == 1


def test_concurrent_balance_payments_with_one_key_charge_once():
    api = bearer()
    token = api.defaults["HTTP_AUTHORIZATION"]
    funded_account(api.user, "500", make_user(staff=True))
    order = make_order(owner=api.user, offer=make_offer(prices={3: "40", 7: "80", 30: "300"}))
    start = threading.Barrier(6)
    answers = []

    def send():
        try:
            client = Client(HTTP_AUTHORIZATION=token, raise_request_exception=False)
            start.wait()
            answers.append(post(client, f"/orders/{order.reference}/pay-with-balance", key="p"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert [a.status_code for a in answers] == [200] * 6
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE).count() == 1


def test_a_connection_dropped_before_the_write_says_nothing_changed_and_the_retry_writes(
    configured, fresh_rates
):
    api = bearer()
    api.get("/api/v1/auth/me")
    _terminate_our_backend()

    dropped = post(api, "/topups", TOPUP, key="after-drop")
    retried = post(api, "/topups", TOPUP, key="after-drop")
    again = post(api, "/topups", TOPUP, key="after-drop")

    assert dropped.status_code == 503
    assert dropped["Retry-After"] == "5"
    assert "nothing was changed" in dropped.json()["detail"]
    assert retried.status_code == 201
    assert again.content == retried.content
    assert TopUp.objects.filter(account=api.user).count() == 1


def test_a_connection_dropped_as_the_write_commits_says_so_and_the_retry_learns_the_outcome(
    configured, fresh_rates
):
    api = bearer()
    cut = {"once": True}

    def drop_before_commit(sender, instance, **kwargs):
        # The answer is stored: the next statement is the commit, on a dead connection.
        if instance.status and cut.pop("once", False):
            _terminate_our_backend()

    post_save.connect(drop_before_commit, sender=IdempotentAnswer)
    try:
        dropped = post(api, "/topups", TOPUP, key="at-commit")
    finally:
        post_save.disconnect(drop_before_commit, sender=IdempotentAnswer)
    retried = post(api, "/topups", TOPUP, key="at-commit")
    again = post(api, "/topups", TOPUP, key="at-commit")

    assert dropped.status_code == 503
    assert "could not confirm whether it was done" in dropped.json()["detail"]
    assert retried.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert TopUp.objects.filter(account=api.user).count() == 1
