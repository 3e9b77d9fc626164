import pytest

from tests.loopback import LoopbackServer


@pytest.fixture
def loopback():
    """A loopback HTTP server for the test, shut down (handler threads joined) after it;
    a handler that failed in the server's thread fails the test there (HandlerError)."""
    with LoopbackServer() as server:
        yield server
