"""Concurrent wrong passwords for one account: no more password checks than the limit.

Real concurrent HTTP requests (one test client per thread) against real PostgreSQL
connections and the configured cache (Redis in CI, local memory otherwise).
"""

import threading

import pytest
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.db import connection, connections
from django.test import Client
from django.urls import reverse

from kernodeck.core.models import AuditEvent
from tests.factories import make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

RACERS = 40


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


class _CountingHasher:
    """Counts password verifications, the slow step the throttle must keep bounded."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = 0

    def install(self, monkeypatch):
        # Stored hashes say "argon2"; Django verifies them with the Argon2 hasher class
        # (the suite's fast variant subclasses it), so count there.
        original = Argon2PasswordHasher.verify

        def verify(hasher, password, encoded):
            with self.lock:
                self.calls += 1
            return original(hasher, password, encoded)

        monkeypatch.setattr(Argon2PasswordHasher, "verify", verify)


def _race(target):
    start = threading.Barrier(RACERS)
    statuses = []

    def run(n):
        try:
            start.wait()
            statuses.append(target(n))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(statuses)


def test_concurrent_wrong_passwords_for_one_account_get_at_most_the_limit(settings, monkeypatch):
    settings.KERNODECK_THROTTLE_SIGNIN_ACCOUNT = (5, 900)
    settings.KERNODECK_THROTTLE_SIGNIN_IP = (1000, 900)
    user = make_user(email="target@example.org")
    counter = _CountingHasher()
    counter.install(monkeypatch)

    def attempt(n):
        response = Client().post(
            reverse("accounts:signin"),
            {"email": "target@example.org", "password": f"wrong guess number {n:03d}"},
            REMOTE_ADDR=f"10.50.{n}.1",
        )
        return response.status_code

    statuses = _race(attempt)

    assert statuses == [200] * 5 + [429] * (RACERS - 5)
    assert counter.calls == 5
    assert (
        AuditEvent.objects.filter(action="account.signin_failed", target_id=str(user.pk)).count()
        == 5
    )


def test_concurrent_wrong_passwords_from_one_address_get_at_most_the_limit(settings, monkeypatch):
    settings.KERNODECK_THROTTLE_SIGNIN_ACCOUNT = (1000, 900)
    settings.KERNODECK_THROTTLE_SIGNIN_IP = (5, 900)
    for n in range(RACERS):
        make_user(email=f"spray{n}@example.org")
    counter = _CountingHasher()
    counter.install(monkeypatch)

    def attempt(n):
        response = Client().post(
            "/api/v1/auth/token",
            {"email": f"spray{n}@example.org", "password": "a wrong password here"},
            content_type="application/json",
            REMOTE_ADDR="10.60.0.1",
        )
        return response.status_code

    statuses = _race(attempt)

    assert statuses == [401] * 5 + [429] * (RACERS - 5)
    assert counter.calls == 5
