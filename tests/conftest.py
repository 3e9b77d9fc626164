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
