"""Watcher passes never overlap: a pass that starts while another runs is skipped."""

import threading

import pytest

from kernodeck.payments import tasks, watching


@pytest.fixture
def slow_pass(monkeypatch):
    """watch_all and watch_network_isolated that wait for `release`, counting their runs."""
    state = {"calls": [], "started": threading.Event(), "release": threading.Event()}

    def run(*args):
        state["calls"].append(args)
        state["started"].set()
        state["released"] = state["release"].wait(10)  # checked by the test, in its thread
        return []

    monkeypatch.setattr(watching, "watch_all", run)
    monkeypatch.setattr(watching, "watch_network_isolated", run)
    yield state
    state["release"].set()


def test_a_pass_started_while_another_runs_is_skipped_not_queued(slow_pass):
    first = threading.Thread(target=tasks.watch_chains.call_local)
    first.start()
    assert slow_pass["started"].wait(5)

    returned = []

    def next_passes():
        tasks.watch_chains.call_local()  # the next tick's pass
        tasks.watch_network.call_local("bitcoin")  # an early pass after "I have paid"
        returned.append(tasks.watch_exclusively(watching.watch_all))

    others = threading.Thread(target=next_passes)
    others.start()
    others.join(10)  # only a guard against a hang: a pass that waited would never return

    # They came back while the first pass still runs (it waits for `release`), without
    # running: skipped, not queued behind it.
    assert returned == [False], "a pass waited for the running one instead of being skipped"
    assert first.is_alive()
    assert slow_pass["calls"] == [()]

    slow_pass["release"].set()
    first.join(5)
    assert slow_pass["calls"] == [()]  # ran once
    assert slow_pass["released"]  # ran to the end once released, not given up

    tasks.watch_chains.call_local()  # the lock was released
    assert slow_pass["calls"] == [(), ()]


def test_a_pass_that_fails_releases_the_lock(monkeypatch):
    def broken():
        raise ConnectionError("database restarting")

    monkeypatch.setattr(watching, "watch_all", broken)
    with pytest.raises(ConnectionError):
        tasks.watch_chains.call_local()
    assert not tasks.WATCH_LOCK.is_locked()


@pytest.mark.django_db
def test_the_watch_command_skips_a_pass_while_a_worker_runs_one(monkeypatch):
    from io import StringIO

    from django.core.management import call_command

    calls = []
    monkeypatch.setattr(watching, "watch_all", lambda: calls.append(1) or [])
    out = StringIO()
    with tasks.WATCH_LOCK:
        call_command("watch_chains", "--once", stdout=out)

    assert calls == []
    assert "skipped: another watcher pass is running" in out.getvalue()
