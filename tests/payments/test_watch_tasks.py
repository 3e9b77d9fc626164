"""Watcher passes never overlap per network: a pass over a network that starts while
another over the same network runs is skipped; other networks are not held."""

import threading

import pytest

from kernodeck.payments import tasks, watching


@pytest.fixture
def slow_pass(monkeypatch):
    """watch_network_isolated that waits for `release`, counting its runs."""
    state = {"calls": [], "started": threading.Event(), "release": threading.Event()}

    def run(network):
        state["calls"].append(network)
        state["started"].set()
        state["released"] = state["release"].wait(10)  # checked by the test, in its thread
        return {"network": network}

    monkeypatch.setattr(watching, "watch_network_isolated", run)
    yield state
    state["release"].set()


def test_a_pass_started_while_another_runs_is_skipped_not_queued(slow_pass):
    first = threading.Thread(target=tasks.watch_network.call_local, args=("bitcoin",))
    first.start()
    assert slow_pass["started"].wait(5)

    returned = []

    def next_passes():
        tasks.watch_network.call_local("bitcoin")  # an early pass after "I have paid"
        returned.append(tasks.watch_exclusively("bitcoin"))

    others = threading.Thread(target=next_passes)
    others.start()
    others.join(10)  # only a guard against a hang: a pass that waited would never return

    # They came back while the first pass still runs (it waits for `release`), without
    # running: skipped, not queued behind it.
    assert returned == [None], "a pass waited for the running one instead of being skipped"
    assert first.is_alive()
    assert slow_pass["calls"] == ["bitcoin"]

    # Another network is not held by it.
    slow_pass["release"].set()  # (the litecoin pass must not wait: release it at once)
    assert tasks.watch_exclusively("litecoin") == {"network": "litecoin"}

    first.join(5)
    assert slow_pass["calls"] == ["bitcoin", "litecoin"]
    assert slow_pass["released"]  # ran to the end once released, not given up

    tasks.watch_network.call_local("bitcoin")  # the lock was released
    assert slow_pass["calls"] == ["bitcoin", "litecoin", "bitcoin"]


def test_a_pass_that_fails_releases_the_lock(monkeypatch):
    def broken(network):
        raise ConnectionError("database restarting")

    monkeypatch.setattr(watching, "watch_network_isolated", broken)
    with pytest.raises(ConnectionError):
        tasks.watch_network.call_local("bitcoin")
    assert not tasks.network_lock("bitcoin").is_locked()


@pytest.mark.django_db(transaction=True)  # the command watches each network on a thread
def test_the_watch_command_skips_a_network_while_a_worker_runs_its_pass(settings, monkeypatch):
    from io import StringIO

    from django.core.management import call_command

    settings.KERNODECK_BITCOIN_ESPLORA_URL = "http://127.0.0.1:9/api"
    settings.KERNODECK_LITECOIN_ESPLORA_URL = "http://127.0.0.1:9/api"
    calls = []
    monkeypatch.setattr(
        watching, "watch_network_isolated", lambda network: calls.append(network) or {}
    )
    out = StringIO()
    with tasks.network_lock("bitcoin"):
        call_command("watch_chains", "--once", stdout=out)

    assert calls == ["litecoin"]
    assert "network=bitcoin skipped=another watcher pass is running" in out.getvalue()
