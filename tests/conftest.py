import os

import pytest
from django.core.cache import cache
from django.test.utils import setup_databases, teardown_databases
from django.utils import translation

from kernodeck.core import clock
from tests import databases, logsecrets

# The fixtures through which a test reaches the database (pytest-django refuses database
# access to every other test).
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}


def touches_the_database(item) -> bool:
    """Whether the test reaches the database, or the Redis cache CI gives PostgreSQL's pass
    (the cache tests run once per backend, `[redis]` in their id)."""
    return (
        item.get_closest_marker("django_db") is not None
        or bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))
        or "redis" in item.nodeid.lower()
    )


def pytest_configure(config):
    """Every test's log lines are also written as JSON and checked at the end of the run
    (tests/logsecrets.py)."""
    config.pluginmanager.register(logsecrets, "kernodeck-logsecrets")


def runs_outside_software(item) -> bool:
    """Whether the test drives software of its own beside the suite: chromium (the `browser`
    marker), sshd test hosts (the `ssh_lab` fixture), a real chain node (the `outside`
    marker: litecoind, ganache)."""
    return (
        item.get_closest_marker("browser") is not None
        or item.get_closest_marker("outside") is not None
        or "ssh_lab" in getattr(item, "fixturenames", ())
    )


def _switched_on(name: str) -> bool:
    return os.environ.get(name, "").lower() in {"1", "on", "true"}


def pytest_collection_modifyitems(config, items):
    """CI's two passes split the suite (`.ci/run`); a plain run keeps every test.

    KERNODECK_TESTS_DATABASE_ONLY=1 (the PostgreSQL pass) keeps the tests that reach the
    database, which run on both databases, and every test that drives outside software,
    which runs once, on the production database. KERNODECK_TESTS_OUTSIDE_LATER=1 (the SQLite
    pass before it) leaves those out: their cost is the software they drive, and their
    database work is the same services' that the other tests run on both databases."""
    database_only = _switched_on("KERNODECK_TESTS_DATABASE_ONLY")
    outside_later = _switched_on("KERNODECK_TESTS_OUTSIDE_LATER")
    if not database_only and not outside_later:
        return
    kept, dropped = [], []
    for item in items:
        outside = runs_outside_software(item)
        keep = (outside or touches_the_database(item)) if database_only else not outside
        (kept if keep else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def django_db_setup(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_modify_db_settings,  # pytest-django's per-worker names, for --reuse-db
    tmp_path_factory,
):
    """The database migrated once per run and copied to each xdist worker (tests/databases.py);
    Django's plain set-up without xdist or with --reuse-db."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker or request.config.getvalue("reuse_db"):
        keep = bool(request.config.getvalue("reuse_db"))
        with django_db_blocker.unblock():
            created = setup_databases(
                verbosity=0, interactive=False, keepdb=keep, aliases={"default"}
            )
        yield
        if not keep:
            with django_db_blocker.unblock():
                teardown_databases(created, verbosity=0)
        return
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's
    with django_db_blocker.unblock():
        original = databases.set_up(worker=worker, shared=shared)
    yield
    with django_db_blocker.unblock():
        databases.tear_down(original=original)


def pytest_sessionfinish(session):
    """The controller of an xdist run drops the PostgreSQL template its workers made (its
    base temporary folder, as pytest's tmp_path_factory fixture reads it, is the workers'
    shared one)."""
    if not hasattr(session.config, "workerinput") and hasattr(session.config, "_tmp_path_factory"):
        databases.drop_template(session.config._tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def _fresh_state():
    """Throttle counters live in the cache and the clock may be frozen: reset both. A page
    answered in Spanish leaves Spanish active in the thread (LocaleMiddleware activates it
    per request and nothing deactivates it): every test starts in the default language."""
    cache.clear()
    clock.freeze(None)
    translation.deactivate()
    yield
    cache.clear()
    clock.freeze(None)
    translation.deactivate()


@pytest.fixture
def api(client):
    """A test client that sends a bearer token of a fresh customer (`api.user`)."""
    from kernodeck.accounts import services as account_services
    from tests.factories import make_user

    user = make_user()
    _token, raw = account_services.api_token_create(user=user, name="tests")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    client.user = user
    return client
