"""Every network degrades alone, in time too (issue 22, item 9): a chain API that drips its
answers or hangs fails its own network's pass by the pass deadline, and the others, each
under its own lock, on its own thread (the command) or task (the workers), do not wait."""

import threading
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from kernodeck.payments import tasks, watching
from kernodeck.payments.models import ChainState
from tests.loopback import LoopbackServer, Reply

TIP = "/blocks/tip/height"


@pytest.fixture
def apis(settings):
    """Loopback Esplora APIs for Bitcoin and Litecoin, polled address by address."""
    settings.KERNODECK_WATCH_BLOCK_SCAN = False
    with LoopbackServer() as bitcoin, LoopbackServer() as litecoin:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = bitcoin.url
        settings.KERNODECK_LITECOIN_ESPLORA_URL = litecoin.url
        litecoin.route("GET", TIP, body="2800000")
        yield bitcoin, litecoin


@pytest.mark.django_db
def test_an_api_that_drips_fails_its_pass_at_the_pass_deadline(apis, settings):
    bitcoin, _litecoin = apis
    settings.KERNODECK_WATCH_PASS_DEADLINE = 0.5
    # Each byte comes well within the HTTP timeout (10 s); the answer would take 5 s.
    bitcoin.route("GET", TIP, Reply(body="870000" + " " * 44, drip=0.1))

    report = watching.watch_network_isolated("bitcoin")

    assert "deadline" in report["error"]
    state = ChainState.objects.get(network="bitcoin")
    assert "deadline" in state.last_error and state.last_success_at is None
    assert len(bitcoin.requests) == 1  # not asked again once the deadline came


@pytest.mark.django_db
def test_each_network_has_its_own_lock_and_task(apis):
    with tasks.network_lock("bitcoin"):  # a worker's bitcoin pass is running
        tasks.watch_chains.call_local()  # the tick: one task per network

    assert not ChainState.objects.filter(network="bitcoin").exists()  # skipped
    assert ChainState.objects.get(network="litecoin").tip == 2_800_000


@pytest.mark.django_db(transaction=True)  # the command watches each network on a thread
def test_a_hung_api_delays_only_its_own_network(apis, monkeypatch):
    bitcoin, _litecoin = apis
    release = threading.Event()
    litecoin_done = threading.Event()

    def hang(request):
        release.wait(20)  # a guard: the test releases it once Litecoin's pass has ended
        return 200, {"Content-Type": "text/plain"}, "870000"

    bitcoin.route("GET", TIP, handler=hang)
    real = watching.watch_network_isolated

    def observed(network):
        report = real(network)
        if network == "litecoin":
            litecoin_done.set()
        return report

    monkeypatch.setattr(watching, "watch_network_isolated", observed)
    out = StringIO()

    def run_command():
        try:
            call_command("watch_chains", "--once", stdout=out)
        finally:
            connection.close()  # this thread's own (the test database is dropped at the end)

    command = threading.Thread(target=run_command)
    command.start()
    try:
        # Bitcoin's API answers nothing until released: Litecoin's pass ends meanwhile.
        assert litecoin_done.wait(20), "Litecoin's pass waited for Bitcoin's hung API"
        assert command.is_alive()  # Bitcoin's pass still waits for its answer
    finally:
        release.set()
        command.join(20)

    lines = out.getvalue().splitlines()
    assert lines[5].startswith("network=bitcoin watched=0")
    assert lines[6].startswith("network=litecoin watched=0")
    assert ChainState.objects.get(network="litecoin").tip == 2_800_000
    assert ChainState.objects.get(network="bitcoin").tip == 870_000
