import pytest
from django.core.cache import cache

from kernodeck.core import clock


@pytest.fixture(autouse=True)
def _fresh_state():
    """Throttle counters live in the cache and the clock may be frozen: reset both."""
    cache.clear()
    clock.freeze(None)
    yield
    cache.clear()
    clock.freeze(None)


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
