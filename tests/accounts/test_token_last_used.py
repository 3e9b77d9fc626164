"""API token `last_used_at`: written at most once a minute, by one conditional UPDATE."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from kernodeck.accounts import services
from kernodeck.accounts.models import ApiToken
from kernodeck.core import clock
from tests.factories import make_user

T0 = datetime(2026, 12, 1, 4, 0, 0, tzinfo=UTC)


@pytest.fixture
def token(db):
    token, raw = services.api_token_create(user=make_user(), name="ci")
    token.raw = raw
    return token


def _last_used(token):
    return ApiToken.objects.values_list("last_used_at", flat=True).get(pk=token.pk)


def test_first_use_is_written_then_at_most_once_a_minute(token):
    clock.freeze(T0)
    assert services.api_token_authenticate(token.raw) == token.user
    assert _last_used(token) == T0

    # A burst within the minute leaves the first time in place.
    for seconds in (1, 30, 59, 60):
        clock.freeze(T0 + timedelta(seconds=seconds))
        assert services.api_token_authenticate(token.raw) == token.user
        assert _last_used(token) == T0
    # Strictly more than a minute later it moves.
    clock.freeze(T0 + timedelta(seconds=61))
    assert services.api_token_authenticate(token.raw) == token.user
    assert _last_used(token) == T0 + timedelta(seconds=61)


def test_an_older_time_never_overwrites_a_newer_one(token):
    clock.freeze(T0)
    assert services.api_token_mark_used(token_id=token.pk) is True
    clock.freeze(T0 - timedelta(minutes=5))  # a request that read the clock earlier
    assert services.api_token_mark_used(token_id=token.pk) is False
    assert _last_used(token) == T0


def test_within_the_minute_authentication_is_one_select_and_no_write(token):
    clock.freeze(T0)
    services.api_token_authenticate(token.raw)
    clock.freeze(T0 + timedelta(seconds=10))
    with CaptureQueriesContext(connection) as queries:
        assert services.api_token_authenticate(token.raw) == token.user
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 1 and statements[0].startswith("SELECT"), statements
    assert _last_used(token) == T0


def test_after_the_minute_one_conditional_update_writes_without_reading_again(token):
    clock.freeze(T0)
    services.api_token_authenticate(token.raw)
    clock.freeze(T0 + timedelta(seconds=90))
    with CaptureQueriesContext(connection) as queries:
        assert services.api_token_authenticate(token.raw) == token.user
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 2, statements
    assert statements[0].startswith("SELECT")
    update = statements[1]
    assert update.startswith("UPDATE") and "last_used_at" in update.split("WHERE", 1)[1]
    assert _last_used(token) == T0 + timedelta(seconds=90)


def test_api_requests_within_a_minute_do_not_move_last_used(client, token):
    clock.freeze(T0)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token.raw}"}
    assert client.get("/api/v1/auth/me", **headers).status_code == 200
    clock.freeze(T0 + timedelta(seconds=45))
    assert client.get("/api/v1/auth/me", **headers).status_code == 200
    assert _last_used(token) == T0
    clock.freeze(T0 + timedelta(minutes=2))
    assert client.get("/api/v1/auth/me", **headers).status_code == 200
    assert _last_used(token) == T0 + timedelta(minutes=2)


def test_a_revoked_token_is_not_marked(token):
    clock.freeze(T0)
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=T0)
    assert services.api_token_authenticate(token.raw) is None
    assert _last_used(token) is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_write_the_row_once():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL (SQLite serialises writers)")
    token, _raw = services.api_token_create(user=make_user(), name="burst")
    clock.freeze(T0)
    racers = 8
    start = threading.Barrier(racers)
    written = []

    def use():
        try:
            start.wait()
            written.append(services.api_token_mark_used(token_id=token.pk))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=use) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(written) == [False] * (racers - 1) + [True]
    assert _last_used(token) == T0
