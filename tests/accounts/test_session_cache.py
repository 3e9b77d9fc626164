"""The cached session engine (accounts/cached_sessions.py): a signed-in request reads its
session from the cache, and a session that ended, whichever way it ended, signs nobody in.

Each test runs on the local-memory cache and, where KERNODECK_REDIS_URL is set, on Redis
(`[redis]` in the id); transactional, so commits and their callbacks happen as in
production.
"""

import os
import threading

import pytest
import redis
from django.contrib.auth.tokens import default_token_generator
from django.db import connection, connections, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from kernodeck.accounts import cached_sessions, services
from kernodeck.accounts.models import Session
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db(transaction=True)

CACHED = "kernodeck.accounts.cached_sessions"
NEW_PASSWORD = "a much longer passphrase 42"

_BACKENDS = {"locmem": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
if os.environ.get("KERNODECK_REDIS_URL"):
    _BACKENDS["redis"] = {
        "BACKEND": "kernodeck.core.redis_cache.RedisCache",
        "LOCATION": os.environ["KERNODECK_REDIS_URL"],
    }


@pytest.fixture(params=sorted(_BACKENDS), autouse=True)
def cached_engine(request, settings):
    settings.CACHES = {"default": _BACKENDS[request.param]}
    settings.SESSION_ENGINE = CACHED
    from django.core.cache import cache

    cache.clear()
    yield request.param
    cache.clear()


def sign_in(email, **extra):
    browser = Client(**extra)
    response = browser.post(reverse("accounts:signin"), {"email": email, "password": PASSWORD})
    assert response.status_code == 302
    assert signed_in(browser)  # the session is now in the cache too
    return browser


def signed_in(browser) -> bool:
    return browser.get(reverse("accounts:account")).status_code == 200


def session_queries(browser) -> list[str]:
    """The session queries of a signed-in page that lists no sessions (My orders)."""
    with CaptureQueriesContext(connection) as queries:
        assert browser.get(reverse("orders:list")).status_code == 200
    return [q["sql"] for q in queries if "accounts_session" in q["sql"]]


def test_a_signed_in_page_reads_its_session_from_the_cache():
    make_user(email="ada@example.org")
    browser = sign_in("ada@example.org")

    assert session_queries(browser) == []
    key = browser.cookies["sessionid"].value
    assert cached_sessions.SessionStore(key).load()["_auth_user_id"]


def test_a_session_of_the_database_engine_reads_the_same(settings):
    """The class keeps its name: the signing salt, derived from it, is the same, and the
    sessions that exist when the engine changes stay signed in."""
    make_user(email="ada@example.org")
    settings.SESSION_ENGINE = "kernodeck.accounts.sessions"
    browser = sign_in("ada@example.org")
    settings.SESSION_ENGINE = CACHED

    assert signed_in(Client(HTTP_COOKIE=f"sessionid={browser.cookies['sessionid'].value}"))
    assert cached_sessions.SessionStore().key_salt == "django.contrib.sessions.SessionStore"


def test_signing_out_ends_the_cached_session():
    make_user(email="ada@example.org")
    browser = sign_in("ada@example.org")
    copy = Client(HTTP_COOKIE=f"sessionid={browser.cookies['sessionid'].value}")
    assert signed_in(copy)

    browser.post(reverse("accounts:signout"))

    assert not signed_in(copy)
    assert not signed_in(browser)


def test_ending_the_other_sessions_signs_them_out():
    make_user(email="ada@example.org")
    other = sign_in("ada@example.org")
    this = sign_in("ada@example.org")

    this.post(reverse("accounts:sessions_end_others"))

    assert not signed_in(other)
    assert signed_in(this)
    assert session_queries(this) == []


def test_a_password_change_signs_the_other_browsers_out():
    make_user(email="ada@example.org")
    other = sign_in("ada@example.org")
    this = sign_in("ada@example.org")

    response = this.post(
        reverse("accounts:password"),
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD},
    )

    assert response.status_code == 302
    assert not signed_in(other)
    assert signed_in(this)


def test_a_password_reset_by_staff_signs_every_browser_out():
    user = make_user(email="ada@example.org")
    browsers = [sign_in("ada@example.org"), sign_in("ada@example.org")]

    services.password_reset_by_staff(user=user, actor=make_user(staff=True))

    assert not any(signed_in(browser) for browser in browsers)
    assert not Session.objects.filter(user=user).exists()


def test_a_password_set_with_a_link_signs_every_browser_out():
    user = make_user(email="ada@example.org")
    browser = sign_in("ada@example.org")
    user.refresh_from_db()  # the token covers the sign-in's last_login

    services.password_set_with_link(
        uidb64=urlsafe_base64_encode(force_bytes(user.pk)),
        token=default_token_generator.make_token(user),
        new_password=NEW_PASSWORD,
        ip_address="10.1.1.1",
    )

    assert not signed_in(browser)


def test_a_disabled_account_is_signed_out():
    user = make_user(email="ada@example.org")
    browser = sign_in("ada@example.org")

    user.is_active = False
    user.save(update_fields=["is_active"])

    assert not signed_in(browser)


def test_an_end_that_rolls_back_still_signs_out():
    """The ended mark is written at once and never taken back: the safe way to be wrong."""
    user = make_user(email="ada@example.org")
    other = sign_in("ada@example.org")
    this = sign_in("ada@example.org")

    with pytest.raises(RuntimeError), transaction.atomic():
        services.sessions_end_others(
            user=user, current_session_key=this.cookies["sessionid"].value
        )
        raise RuntimeError("rolled back")

    assert Session.objects.filter(user=user).count() == 2
    assert not signed_in(other)
    assert signed_in(this)


def test_a_cache_that_fails_ends_nothing_and_says_so():
    """Marked before the rows are deleted: a cache that cannot take the marks leaves every
    session as it was (row and copy) and the action fails, instead of copies that would
    outlive their rows once the cache is back (a Redis on a closed port)."""
    from django.test.utils import override_settings

    user = make_user(email="ada@example.org")
    other = sign_in("ada@example.org")
    this = sign_in("ada@example.org")
    dead = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:9/0",
    }

    with override_settings(CACHES={"default": dead}):
        with pytest.raises(redis.exceptions.ConnectionError):
            services.sessions_end_others(
                user=user, current_session_key=this.cookies["sessionid"].value
            )
        with pytest.raises(redis.exceptions.ConnectionError):
            this.post(reverse("accounts:signout"))

    assert Session.objects.filter(user=user).count() == 2
    assert signed_in(other)
    assert signed_in(this)


class SessionStore(cached_sessions.SessionStore):
    """The cached store with a pause between reading the row and writing its copy. Named
    as the real one, at module level: the class's qualified name salts the session data."""

    pause = None

    def _get_session_from_db(self):
        row = super()._get_session_from_db()
        row_read, ended = self.pause
        row_read.set()
        assert ended.wait(10)
        return row


@pytest.mark.postgres
def test_a_copy_written_back_after_the_end_signs_nobody_in(cached_engine):
    """A request that read the row just before "sign out everywhere else" committed puts
    its copy into the cache after the end: the ended mark refuses it (real PostgreSQL
    connections, the request in another thread)."""
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")
    user = make_user(email="ada@example.org")
    other = sign_in("ada@example.org")
    this = sign_in("ada@example.org")
    other_key = other.cookies["sessionid"].value
    from django.core.cache import cache

    cache.delete(cached_sessions.DATA_PREFIX + other_key)  # its next read misses the cache
    row_read, ended = threading.Event(), threading.Event()
    SessionStore.pause = (row_read, ended)
    loaded = {}

    def late_request():
        try:
            loaded["data"] = SessionStore(other_key).load()
        finally:
            connections.close_all()

    thread = threading.Thread(target=late_request)
    thread.start()
    assert row_read.wait(10)
    services.sessions_end_others(user=user, current_session_key=this.cookies["sessionid"].value)
    ended.set()
    thread.join(10)

    # The late request had read the row: it ran as it began, and wrote its copy back.
    assert loaded["data"]["_auth_user_id"] == str(user.pk)
    assert cache.get(cached_sessions.DATA_PREFIX + other_key) is not None
    assert cached_sessions.SessionStore(other_key).load() == {}
    assert not signed_in(other)
    assert signed_in(this)
