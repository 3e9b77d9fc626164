"""The attempt counter itself: atomic on the local-memory cache and on Redis."""

import os
import threading
import time

import pytest
from django.test import override_settings

from kernodeck.accounts import throttle
from kernodeck.core.errors import Throttled

BACKENDS = {"locmem": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
if os.environ.get("KERNODECK_REDIS_URL"):
    BACKENDS["redis"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ["KERNODECK_REDIS_URL"],
    }


@pytest.fixture(params=sorted(BACKENDS))
def backend(request, settings):
    settings.KERNODECK_THROTTLE_SIGNIN_ACCOUNT = (5, 900)
    with override_settings(CACHES={"default": BACKENDS[request.param]}):
        throttle.reset("signin_account", "race@example.org")
        yield request.param
        throttle.reset("signin_account", "race@example.org")


def test_forty_threads_at_once_get_exactly_the_limit_through(backend):
    start = threading.Barrier(40)
    outcomes = []

    def run():
        start.wait()
        try:
            throttle.attempt("signin_account", "race@example.org", message="no")
            outcomes.append("through")
        except Throttled:
            outcomes.append("refused")

    threads = [threading.Thread(target=run) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert outcomes.count("through") == 5
    assert outcomes.count("refused") == 35


def test_refusal_says_when_to_try_again_and_refund_gives_an_attempt_back(backend):
    for _ in range(5):
        throttle.attempt("signin_account", "race@example.org", message="Locked.")
    with pytest.raises(Throttled) as refused:
        throttle.attempt("signin_account", "race@example.org", message="Locked.")
    assert refused.value.message == "Locked. Try again in 15 minutes."
    assert 890 <= refused.value.retry_after <= 900

    throttle.refund("signin_account", "race@example.org")
    throttle.refund("signin_account", "race@example.org")
    throttle.attempt("signin_account", "race@example.org", message="Locked.")
    with pytest.raises(Throttled):
        throttle.attempt("signin_account", "race@example.org", message="Locked.")


def test_a_new_window_starts_when_the_old_one_expires(backend, settings):
    settings.KERNODECK_THROTTLE_SIGNIN_ACCOUNT = (1, 1)
    throttle.attempt("signin_account", "race@example.org", message="Locked.")
    with pytest.raises(Throttled):
        throttle.attempt("signin_account", "race@example.org", message="Locked.")
    time.sleep(1.2)
    throttle.attempt("signin_account", "race@example.org", message="Locked.")
