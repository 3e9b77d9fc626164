import pytest

from tests.loopback import LoopbackServer


@pytest.fixture
def loopback():
    """A loopback HTTP server for the test, shut down (handler threads joined) after it."""
    with LoopbackServer() as server:
        yield server
    assert not server.handler_errors, server.handler_errors


@pytest.fixture
def sleeps():
    """The waits an adapter asked for, recorded instead of slept: pass `sleep=sleeps.append`."""
    return []
