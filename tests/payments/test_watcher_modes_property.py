"""Block scanning and address polling settle the same payments on the same chain.

Hypothesis writes a story on a loopback Bitcoin chain (payments of every size into the
mempool, blocks, reorgs that return or drop transactions, replaced transactions, time
passing beyond the expiry so that payments come late, instructions created on the way),
and the story is played twice from the same start: once with the watcher polling each
address, once with it scanning blocks, with a pass after every step. Both must end with
the same statuses, amounts and transfers.
"""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kernodeck.core import clock
from kernodeck.payments import watching
from kernodeck.payments.models import MempoolMemory, PaymentIntent, Rate, Transfer
from tests.loopback import LoopbackServer
from tests.payments.esplora_chain import EsploraChain
from tests.payments.test_watching import btc_intent

pytestmark = pytest.mark.django_db

INTENTS = 3
AMOUNTS = {"exact": 1.0, "half": 0.5, "over": 1.5, "dust": 0.001}

steps = st.lists(
    st.one_of(
        st.tuples(st.just("pay"), st.integers(0, INTENTS - 1), st.sampled_from(sorted(AMOUNTS))),
        st.tuples(st.just("mine"), st.integers(1, 3)),
        st.tuples(st.just("reorg"), st.integers(1, 3), st.booleans()),
        st.tuples(st.just("drop"), st.integers(0, 5)),
        st.tuples(st.just("wait"), st.integers(1, 40)),
        st.tuples(st.just("new intent")),
    ),
    min_size=1,
    max_size=12,
)


def play(story, *, block_scan: bool, settings_, start) -> dict:
    """Run `story` from `start` in one mode; return what the books hold at its end. Every
    write is rolled back, so the second run starts from the same database (and gets the
    same addresses)."""
    settings_.KERNODECK_WATCH_BLOCK_SCAN = block_scan
    cache.clear()  # the throttles' counts of the instructions made by the previous run
    MempoolMemory.objects.all().delete()  # the block scan's memory of the mempool
    clock.freeze(start)
    with LoopbackServer() as server, transaction.atomic():
        settings_.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        chain = EsploraChain(server, at=start - timedelta(minutes=10))
        intents = [btc_intent() for _ in range(INTENTS)]
        rate = Rate.objects.filter(asset="BTC").latest("fetched_at").usd_per_coin
        sent = []

        def watch():
            report = watching.watch_network("bitcoin")
            assert "error" not in report, report

        watch()
        for step in story:
            clock.freeze(clock.now() + timedelta(seconds=30))
            if step[0] == "pay":
                intent = intents[step[1] % len(intents)]
                amount = max(1, int(intent.amount_units * AMOUNTS[step[2]]))
                sent.append(chain.pay(intent.address, amount))
            elif step[0] == "mine":
                chain.mine(at=clock.now(), count=step[1])
            elif step[0] == "reorg":
                returned = chain.reorg(step[1])
                if step[2] and returned:
                    chain.drop(returned[0])  # double-spent by the replacing chain
                chain.mine(at=clock.now(), count=step[1] + 1, include=False)
            elif step[0] == "drop" and sent:
                chain.drop(sent[step[1] % len(sent)])
            elif step[0] == "wait":
                clock.freeze(clock.now() + timedelta(minutes=step[1]))
            elif step[0] == "new intent" and len(intents) < INTENTS + 3:
                # The same price, fetched now (the clock may have left the first one stale).
                Rate.objects.create(
                    asset="BTC", usd_per_coin=rate, source="kraken", fetched_at=clock.now()
                )
                intents.append(btc_intent())  # watched from the next pass on
            watch()
        # The end: whatever waits is mined and buried, and every address looked at again.
        clock.freeze(clock.now() + timedelta(minutes=1))
        chain.mine(at=clock.now(), count=3)
        watch()
        clock.freeze(clock.now() + timedelta(minutes=1))
        watch()
        books = {
            "intents": [
                PaymentIntent.objects.values_list(
                    "status", "received_base", "confirmed_base", "review_reason"
                ).get(pk=intent.pk)
                for intent in intents
            ],
            "transfers": sorted(
                Transfer.objects.values_list(
                    "txid",
                    "index",
                    "amount_base",
                    "kind",
                    "confirmations",
                    "block_height",
                    "disappeared_at",
                )
            ),
        }
        transaction.set_rollback(True)
    return books


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(story=steps)
# Found by this test: a payment dropped from the mempool, then a new one of the same amount
# before the expiry, seen by polling only once mined (a stale Esplora cursor).
@example(
    story=[("pay", 0, "dust"), ("pay", 1, "dust"), ("wait", 27), ("drop", 1), ("pay", 1, "dust")]
)
def test_block_scanning_and_address_polling_settle_the_same(
    configured, fresh_rates, settings, story
):
    settings.KERNODECK_WATCH_LATE_INTERVAL = 0  # address polling looks at every address
    # Every example starts where the rates are fresh (the clock moved in the last one).
    start = fresh_rates["BTC"].fetched_at.replace(microsecond=0) + timedelta(seconds=1)

    by_address = play(story, block_scan=False, settings_=settings, start=start)
    by_blocks = play(story, block_scan=True, settings_=settings, start=start)

    assert by_blocks == by_address
