"""Tron's block scan in the watcher: passes read the blocks since the cursor instead of two
lists per address, settle what polling settles, follow forks, resume from the cursor after
a crash, fall back to polling by cost or on nonsense, and sweep a few addresses a pass for
what blocks do not show."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernodeck.payments import services, watching
from kernodeck.payments.chains.tron import FALLBACK_OVERLAP
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    Transfer,
    TransferKind,
)
from tests.factories import make_offer, make_order
from tests.loopback import LoopbackServer
from tests.payments.tron_chain import BATCHER, LOOKALIKE, TronChain

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = True
    settings.KERNODECK_TRON_SWEEP_ADDRESSES = 0  # no sweep unless a test asks
    with LoopbackServer() as server:
        settings.KERNODECK_TRON_API_URL = server.url
        yield server


@pytest.fixture
def chain(server):
    return TronChain(server)


def tron_intent(method_code: str = "trx-tron") -> PaymentIntent:
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code=method_code, actor=order.owner
    )


def a_pass(server) -> tuple[dict, list[str]]:
    before = len(server.requests)
    report = watching.watch_network("tron")
    assert "error" not in report, report
    return report, [request.path for request in server.requests[before:]]


def status(intent) -> str:
    return PaymentIntent.objects.get(pk=intent.pk).status


def cursor() -> int | None:
    return ChainState.objects.get(network="tron").cursor


def test_the_first_pass_polls_then_blocks_are_read_and_a_trx_payment_settles(
    configured, fresh_rates, server, chain
):
    intent = tron_intent()
    report, paths = a_pass(server)
    assert report["mode"] == "addresses"
    assert f"/v1/accounts/{intent.address}/transactions" in paths
    assert cursor() == chain.solidified + 1 - FALLBACK_OVERLAP

    chain.pay_trx(intent.address, intent.amount_units)
    chain.mine()
    report, paths = a_pass(server)
    assert report["mode"] == "blocks" and report["transfers"] == 1
    assert not any(path.startswith("/v1/") for path in paths)
    assert paths.count("/wallet/getblockbylimitnext") == 3  # 200 overlap blocks and more
    assert status(intent) == IntentStatus.DETECTED
    assert cursor() == chain.solidified + 1  # the blocks not solidified are read again

    chain.mine(19)  # the method's confirmations
    report, paths = a_pass(server)
    assert paths.count("/wallet/getblockbylimitnext") == 1
    transfer = Transfer.objects.get()
    assert (transfer.confirmations, transfer.kind) == (20, TransferKind.MATCHED)
    assert status(intent) == IntentStatus.ALLOCATED


def test_usdt_settles_a_failed_trx_and_another_contracts_token_never_count(
    configured, fresh_rates, server, chain
):
    usdt, trx = tron_intent("usdt-tron"), tron_intent()
    a_pass(server)
    chain.pay_token(usdt.address, usdt.amount_units)
    chain.pay_token(usdt.address, 10**12, contract=LOOKALIKE)
    chain.pay_trx(trx.address, trx.amount_units, result="OUT_OF_ENERGY")
    chain.mine(25)
    a_pass(server)

    kinds = dict(Transfer.objects.values_list("token_contract", "kind"))
    assert kinds == {
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t": TransferKind.MATCHED,
        LOOKALIKE: TransferKind.SPOOFED,  # stored and shown, never counted
        "": TransferKind.FAILED,
    }
    assert (status(usdt), status(trx)) == (IntentStatus.ALLOCATED, IntentStatus.PENDING)


def test_a_payment_in_a_block_a_fork_replaced_stops_counting(
    configured, fresh_rates, server, chain
):
    intent = tron_intent()
    a_pass(server)
    chain.pay_trx(intent.address, intent.amount_units)
    chain.mine(3)
    a_pass(server)
    assert status(intent) == IntentStatus.DETECTED

    chain.reorg(3)  # not solidified: the fork without it won
    chain.mine()
    a_pass(server)
    assert Transfer.objects.get().disappeared_at is not None
    assert status(intent) == IntentStatus.PENDING


def test_a_pass_that_crashes_while_applying_keeps_the_cursor_and_the_next_one_credits_once(
    configured, fresh_rates, server, chain, monkeypatch
):
    intent = tron_intent()
    a_pass(server)
    a_pass(server)
    stored = cursor()
    chain.mine(30)
    chain.pay_trx(intent.address, intent.amount_units)
    chain.mine(25)

    def reconcile(*, intent_id):
        raise ZeroDivisionError("a bug after observing")

    monkeypatch.setattr(watching, "payment_intent_reconcile", reconcile)
    with pytest.raises(ZeroDivisionError):
        watching.watch_network("tron")
    assert cursor() == stored
    monkeypatch.undo()

    before = len(server.requests)
    a_pass(server)
    asked = [r.json()["startNum"] for r in server.requests[before:] if r.path.endswith("next")]
    assert asked[0] == stored  # resumed from the cursor
    assert Transfer.objects.count() == 1
    assert status(intent) == IntentStatus.ALLOCATED
    assert cursor() == chain.solidified + 1


def test_nonsense_blocks_make_the_pass_poll_and_keep_the_cursor(
    configured, fresh_rates, server, chain
):
    intent = tron_intent()
    a_pass(server)
    a_pass(server)
    stored = cursor()
    chain.pay_trx(intent.address, intent.amount_units)
    chain.mine()
    chain.override("/wallet/getblockbylimitnext", {"block": [{"blockID": "\x00" * 64}]})

    report, paths = a_pass(server)
    assert (report["mode"], report["fallback"]) == ("addresses", "the scan failed")
    assert f"/v1/accounts/{intent.address}/transactions" in paths
    assert status(intent) == IntentStatus.DETECTED  # found by polling
    assert cursor() == stored and ChainState.objects.get(network="tron").last_error == ""

    chain.override("/wallet/getblockbylimitnext", None)
    report, _paths = a_pass(server)
    assert report["mode"] == "blocks" and Transfer.objects.count() == 1


def test_far_behind_polling_is_chosen_when_it_costs_fewer_requests(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_TRON_SCAN_MAX_BLOCKS = 150
    intent = tron_intent()
    a_pass(server)
    a_pass(server)
    chain.pay_trx(intent.address, intent.amount_units)
    chain.mine(400)  # 4 requests of blocks, 2 of lists

    report, paths = a_pass(server)
    assert report["mode"] == "addresses" and "more requests than polling (2)" in report["fallback"]
    assert "/wallet/getblockbylimitnext" not in paths
    assert status(intent) == IntentStatus.ALLOCATED
    assert cursor() == chain.solidified + 1 - FALLBACK_OVERLAP


def test_the_sweep_finds_a_token_another_contract_moved_and_blocks_do_not_undo_it(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_TRON_SWEEP_ADDRESSES = 1
    paid, idle = tron_intent("usdt-tron"), tron_intent("usdt-tron")
    a_pass(server)
    a_pass(server)
    chain.pay_token(paid.address, paid.amount_units, contract=BATCHER, call="c0ffee00")
    chain.mine(2)

    found = False
    for _ in range(2):  # one address a pass, the one swept longest ago first
        report, paths = a_pass(server)
        assert report["mode"] == "blocks" and report["polled"] == 1
        found = found or f"/v1/accounts/{paid.address}/transactions/trc20" in paths
    assert found and status(paid) == IntentStatus.DETECTED
    assert status(idle) == IntentStatus.PENDING

    chain.mine(3)  # its block is read again while not solidified: still there
    a_pass(server)
    assert Transfer.objects.get().disappeared_at is None
    assert status(paid) == IntentStatus.DETECTED

    # A list that no longer shows it (a lagging TronGrid node) does not outweigh the blocks.
    empty = {"data": [], "success": True, "meta": {"at": 1, "page_size": 0}}
    chain.override(f"/v1/accounts/{paid.address}/transactions/trc20", empty)
    swept = False
    for _ in range(2):
        _report, paths = a_pass(server)
        swept = swept or f"/v1/accounts/{paid.address}/transactions/trc20" in paths
    assert swept and Transfer.objects.get().disappeared_at is None


def test_a_rescan_request_polls_that_address_in_the_block_pass(
    configured, fresh_rates, server, chain
):
    intent = tron_intent("usdt-tron")
    a_pass(server)
    PaymentIntent.objects.filter(pk=intent.pk).update(rescan_requested_at=intent.created_at)
    report, paths = a_pass(server)
    assert report["polled"] == 1 and f"/v1/accounts/{intent.address}/transactions" in paths
    assert PaymentIntent.objects.get(pk=intent.pk).rescan_requested_at is None


def test_block_scan_off_polls_each_address(configured, fresh_rates, server, chain, settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False
    intent = tron_intent()
    a_pass(server)
    chain.pay_trx(intent.address, intent.amount_units)
    chain.mine()
    report, paths = a_pass(server)
    assert "mode" not in report and "/wallet/getblockbylimitnext" not in paths
    assert f"/v1/accounts/{intent.address}/transactions" in paths
    assert status(intent) == IntentStatus.DETECTED


def test_an_idle_block_pass_costs_the_same_statements_at_any_number_of_intents(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_TRON_SWEEP_ADDRESSES = 2

    def statements_of_a_pass() -> int:
        chain.mine()
        with CaptureQueriesContext(connection) as queries:
            report, _paths = a_pass(server)
        assert report["mode"] == "blocks"
        return len(queries)

    tron_intent()
    a_pass(server)
    a_pass(server)
    few = statements_of_a_pass()
    for _ in range(6):
        tron_intent()
    for _ in range(4):
        a_pass(server)  # the new ones' first sweeps (two a pass) store their cursors
    assert statements_of_a_pass() == few
