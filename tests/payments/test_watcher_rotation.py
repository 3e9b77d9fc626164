"""Address polling in turns (KERNODECK_WATCH_POLL_BUDGET, `watching.rotation`): a polling
pass of Bitcoin polls at most the budget of open addresses, covers every one in a round,
and still sees a payment made before the expiry before it, on a loopback Esplora chain;
Tron's polling does the same, and its block scan's fallback still polls every open one."""

import logging
import math
from datetime import timedelta
from decimal import Decimal

import pytest

from kernodeck.core import clock
from kernodeck.payments import services, watching
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    Rate,
    Transfer,
    TransferKind,
)
from kernodeck.payments.watching import rotation
from tests.loopback import LoopbackServer
from tests.payments.esplora_chain import EsploraChain
from tests.payments.test_watcher_tron_blocks import tron_intent
from tests.payments.test_watching import btc_intent
from tests.payments.tron_chain import TronChain

pytestmark = pytest.mark.django_db

INTERVAL = 30


@pytest.fixture
def server(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False  # address by address
    settings.KERNODECK_WATCH_INTERVAL = INTERVAL
    settings.KERNODECK_WATCH_LATE_INTERVAL = 300
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


@pytest.fixture
def chain(server):
    return EsploraChain(server, at=clock.now() - timedelta(minutes=10))


def polled_by_a_pass(server, *, wait: int = INTERVAL) -> list[str]:
    """The addresses whose history one pass read, `wait` seconds after the last one."""
    clock.freeze(clock.now() + timedelta(seconds=wait))
    before = len(server.requests)
    report = watching.watch_network("bitcoin")
    assert "error" not in report, report
    paths = [request.path for request in server.requests[before:]]
    histories = [path.split("/")[2] for path in paths if path.endswith("/txs")]
    assert len(histories) == len(set(histories))  # each address asked once
    return histories


def open_intents(count: int) -> list[PaymentIntent]:
    """`count` open BTC instructions, then the clock a few minutes on: none is recent."""
    # The price fetched now: the clock may have left the fixture's stale.
    Rate.objects.create(
        asset="BTC", usd_per_coin=Decimal(97_000), source="kraken", fetched_at=clock.now()
    )
    intents = [btc_intent() for _ in range(count)]
    clock.freeze(clock.now() + timedelta(seconds=rotation.RECENT_SECONDS + 60))
    return intents


def test_a_pass_polls_at_most_the_budget_and_a_round_covers_every_address(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_WATCH_POLL_BUDGET = 6
    intents = open_intents(20)
    # The round's order: by id, going on after the last one it polled.
    order = [intent.address for intent in sorted(intents, key=lambda intent: intent.pk)]

    passes = [set(polled_by_a_pass(server)) for _ in range(5)]

    assert [len(polled) for polled in passes] == [6] * 5
    assert passes[:3] == [set(order[0:6]), set(order[6:12]), set(order[12:18])]
    assert passes[3] == set(order[18:20] + order[0:4])  # every address once, then again
    assert passes[4] == set(order[4:10])  # those polled longest ago first
    clock.freeze(clock.now() + timedelta(seconds=INTERVAL))
    report = watching.watch_network("bitcoin")
    assert (report["watched"], report["polled"], report["in_turn"], report["waiting"]) == (
        20,
        6,
        6,
        14,
    )


def test_no_budget_polls_every_open_address_on_every_pass(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_WATCH_POLL_BUDGET = 0
    intents = open_intents(8)

    for _ in range(2):
        assert sorted(polled_by_a_pass(server)) == sorted(i.address for i in intents)
    assert "in_turn" not in watching.watch_network("bitcoin")


def test_a_payment_before_expiry_outside_the_turn_is_matched_not_late(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_WATCH_POLL_BUDGET = 2
    late_in_round = btc_intent()  # expires 10 minutes before the others
    clock.freeze(clock.now() + timedelta(minutes=10))
    others = open_intents(19)
    clock.freeze(late_in_round.expires_at - timedelta(minutes=3, seconds=50))
    polled_by_a_pass(server, wait=0)
    # The round goes on after it: it is the last of the 20, ten passes (5 minutes) away,
    # after its expiry.
    ChainState.objects.filter(network="bitcoin").update(rotation_after=late_in_round.pk)

    chain.pay(late_in_round.address, late_in_round.amount_units)  # into the mempool
    seen_at = []
    for _ in range(20):  # the round would reach it in ten
        polled = polled_by_a_pass(server)
        assert len(polled) <= 2 or late_in_round.address in polled
        seen_at.append(clock.now())
        if Transfer.objects.exists():
            break

    window = rotation.EXPIRY_PASSES * INTERVAL
    # Not seen by the turn (4 passes of 2 others), but by the first pass within its window.
    assert len(seen_at) == 4 + 1
    assert seen_at[-1] >= late_in_round.expires_at - timedelta(seconds=window)
    transfer = Transfer.objects.get()
    assert transfer.first_seen_at < late_in_round.expires_at
    assert transfer.kind == TransferKind.MATCHED

    # Past the expiry, mined: paid in time, settled (never late).
    clock.freeze(late_in_round.expires_at + timedelta(minutes=1))
    chain.mine(at=clock.now(), count=2)
    polled_by_a_pass(server, wait=0)
    assert PaymentIntent.objects.get(pk=late_in_round.pk).status == IntentStatus.ALLOCATED
    assert Transfer.objects.get().kind == TransferKind.MATCHED
    assert {i.status for i in PaymentIntent.objects.filter(pk__in=[o.pk for o in others])} == {
        IntentStatus.PENDING
    }


def test_the_same_payment_is_late_without_the_expiry_window(
    configured, fresh_rates, server, chain, settings, monkeypatch
):
    """What the window is for: with it closed, the round reaches the address only after
    its expiry, and the payment made almost four minutes before it is taken for a late
    one."""
    monkeypatch.setattr(rotation, "EXPIRY_PASSES", 0)
    settings.KERNODECK_WATCH_POLL_BUDGET = 2
    late_in_round = btc_intent()
    clock.freeze(clock.now() + timedelta(minutes=10))
    open_intents(19)
    clock.freeze(late_in_round.expires_at - timedelta(minutes=3, seconds=50))
    polled_by_a_pass(server, wait=0)
    ChainState.objects.filter(network="bitcoin").update(rotation_after=late_in_round.pk)

    chain.pay(late_in_round.address, late_in_round.amount_units)
    for _ in range(20):
        polled_by_a_pass(server)
        if Transfer.objects.exists():
            break

    assert clock.now() > late_in_round.expires_at
    assert Transfer.objects.get().kind == TransferKind.LATE


def test_a_declared_payment_and_a_detected_one_are_polled_on_every_pass(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_WATCH_POLL_BUDGET = 3
    paid, declared, *rest = open_intents(12)
    chain.pay(paid.address, paid.amount_units)
    for _ in range(math.ceil(12 / 3)):  # a round: it reaches the paid one
        polled_by_a_pass(server)
    assert PaymentIntent.objects.get(pk=paid.pk).status == IntentStatus.DETECTED

    services.payment_intent_declare(intent=declared, actor=declared.owner)
    first = polled_by_a_pass(server)
    assert paid.address in first and declared.address in first
    assert len(first) == 3  # the two, and one in turn
    # Looked at once: the request is answered, and it goes back to its turn.
    assert PaymentIntent.objects.get(pk=declared.pk).rescan_requested_at is None

    in_turn = set()
    for _ in range(math.ceil(11 / 2) + 1):
        polled = polled_by_a_pass(server)
        assert paid.address in polled  # detected: followed on every pass
        assert len(polled) == 3
        in_turn |= set(polled) - {paid.address}
    assert in_turn == {i.address for i in [declared, *rest]}


def test_new_instructions_come_first_in_the_turn(configured, fresh_rates, server, chain, settings):
    settings.KERNODECK_WATCH_POLL_BUDGET = 4
    open_intents(10)
    new = [btc_intent(), btc_intent()]

    # Half of the turn goes to the two new ones on every pass while they are recent.
    for _ in range(rotation.RECENT_SECONDS // INTERVAL - 1):
        polled = polled_by_a_pass(server)
        assert {new[0].address, new[1].address} <= set(polled)
        assert len(polled) == 4
    clock.freeze(new[1].created_at + timedelta(seconds=rotation.RECENT_SECONDS))
    counts = {}
    for _ in range(math.ceil(12 / 4)):
        for address in polled_by_a_pass(server, wait=1):
            counts[address] = counts.get(address, 0) + 1
    assert len(counts) == 12 and set(counts.values()) == {1}  # then a round like the others


def test_instructions_near_their_expiry_are_all_polled_past_the_budget(
    configured, fresh_rates, server, chain, settings, caplog
):
    settings.KERNODECK_WATCH_POLL_BUDGET = 4
    closing = open_intents(6)
    clock.freeze(clock.now() + timedelta(minutes=10))
    later = open_intents(4)
    window = timedelta(seconds=rotation.EXPIRY_PASSES * INTERVAL)
    clock.freeze(closing[-1].expires_at - window)

    with caplog.at_level(logging.WARNING, logger="kernodeck.payments.watching.rotation"):
        polled = polled_by_a_pass(server, wait=0)

    # All six, past the budget of 4, and the turn still moves: a quarter of the budget.
    assert len(polled) == 6 + 1
    assert {i.address for i in closing} < set(polled)
    assert set(polled) - {i.address for i in closing} <= {i.address for i in later}
    assert "6 payment instructions need a poll this pass" in caplog.text


def test_the_late_window_is_still_polled_on_its_interval(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_WATCH_POLL_BUDGET = 2
    expired = open_intents(3)
    clock.freeze(clock.now() + timedelta(minutes=20))
    fresh = open_intents(6)
    clock.freeze(expired[-1].expires_at + timedelta(seconds=1))
    first = polled_by_a_pass(server, wait=0)  # expires them; the late interval starts
    assert set(first) >= {i.address for i in expired}
    assert len(first) == 3 + 1  # past the budget: a quarter of it in turn

    between = [polled_by_a_pass(server) for _ in range(3)]
    assert all(len(polled) == 2 for polled in between)
    assert not {i.address for i in expired} & {a for polled in between for a in polled}
    assert {a for polled in [first, *between] for a in polled} == {
        i.address for i in [*expired, *fresh]
    }

    after_interval = polled_by_a_pass(server, wait=300 - 3 * INTERVAL)
    assert set(after_interval) >= {i.address for i in expired}
    assert {i.status for i in PaymentIntent.objects.filter(pk__in=[e.pk for e in expired])} == {
        IntentStatus.EXPIRED
    }


# -- Tron: two lists an address, in turns when polling; every open one when its block scan
# falls back (the polls cover the blocks its cursor skips) ---------------------------------


def tron_lists_of_a_pass(server) -> dict:
    """Per address, the TronGrid lists one Tron pass read."""
    clock.freeze(clock.now() + timedelta(seconds=INTERVAL))
    before = len(server.requests)
    report = watching.watch_network("tron")
    assert "error" not in report, report
    lists: dict = {}
    for request in server.requests[before:]:
        if request.path.startswith("/v1/accounts/"):
            lists.setdefault(request.path.split("/")[3], []).append(request.path)
    return lists


@pytest.mark.parametrize("block_scan", [False, True])
def test_tron_polls_in_turns_and_its_fallback_polls_every_open_address(
    configured, fresh_rates, settings, block_scan
):
    settings.KERNODECK_WATCH_BLOCK_SCAN = block_scan
    settings.KERNODECK_TRON_SWEEP_ADDRESSES = 0
    settings.KERNODECK_WATCH_INTERVAL = INTERVAL
    settings.KERNODECK_WATCH_POLL_BUDGET = 2
    intents = [tron_intent() for _ in range(5)]
    clock.freeze(clock.now() + timedelta(seconds=rotation.RECENT_SECONDS + 60))
    with LoopbackServer() as server:
        settings.KERNODECK_TRON_API_URL = server.url
        TronChain(server)
        first = tron_lists_of_a_pass(server)
        second = tron_lists_of_a_pass(server)

    assert all(len(paths) == 2 for paths in [*first.values(), *second.values()])
    if block_scan:
        # The first pass falls back to polling: every open address, whatever the budget.
        assert set(first) == {intent.address for intent in intents}
        assert second == {}  # then blocks, and no sweep asked for
    else:
        assert len(first) == len(second) == 2
        assert not set(first) & set(second)


def test_the_expiry_window_widens_when_passes_come_late_not_after_failed_ones(
    configured, fresh_rates, server, chain, settings
):
    settings.KERNODECK_WATCH_POLL_BUDGET = 2
    intents = open_intents(8)
    polled_by_a_pass(server)
    # The API failed for ten minutes, a pass every 30 s: the window stays three passes
    # wide (from the last success, it would take in every one of them).
    clock.freeze(clock.now() + timedelta(minutes=10))
    ChainState.objects.filter(network="bitcoin").update(last_error_at=clock.now())
    assert len(polled_by_a_pass(server)) == 2

    # No pass at all for 10 minutes (a stopped worker, cron): whatever may expire within
    # three such gaps is polled now, all of them here.
    assert len(polled_by_a_pass(server, wait=600)) == len(intents)
    assert len(polled_by_a_pass(server)) == 2
