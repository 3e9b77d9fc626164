import threading

import pytest

from kernodeck.demo.profile import simulator_environment
from kernodeck.demo.simulator import make_server


@pytest.fixture
def simulator(tmp_path):
    """The demo's chain simulator on a free loopback port, its state under tmp_path."""
    server = make_server(tmp_path / "chain-simulator.json")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    thread.join()
    server.server_close()


@pytest.fixture
def demo_chains(simulator, settings):
    """Demo mode on, every watcher and the demo panel pointed at the simulator."""
    settings.KERNODECK_DEMO = True
    for name, value in simulator_environment(simulator.url).items():
        setattr(settings, name, value)
    return simulator
