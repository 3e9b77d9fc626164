"""Tron's block scan and its address polling settle the same payments on the same chain.

Hypothesis writes a story on a loopback TRON node (TRX and USDT payments of every size,
failed ones, another contract's look-alike token, blocks, forks that replace blocks not
solidified yet, time passing), played twice from the same start with a pass after every
step: once polling TronGrid's lists address by address, once reading blocks. Both must end
with the same statuses, amounts and transfers.
"""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernodeck.core import clock
from kernodeck.payments import watching
from kernodeck.payments.models import PaymentIntent, Transfer
from tests.loopback import LoopbackServer
from tests.payments.test_watcher_tron_blocks import tron_intent
from tests.payments.tron_chain import LOOKALIKE, TronChain

pytestmark = pytest.mark.django_db

AMOUNTS = {"exact": 1.0, "half": 0.5, "over": 1.5}
METHODS = ("trx-tron", "usdt-tron", "usdt-tron")

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("pay"),
            st.integers(0, len(METHODS) - 1),
            st.sampled_from(sorted(AMOUNTS)),
            st.sampled_from(["SUCCESS", "SUCCESS", "REVERT"]),
            st.booleans(),  # a look-alike token instead of USDT
        ),
        st.tuples(st.just("mine"), st.integers(1, 25)),
        st.tuples(st.just("reorg"), st.integers(1, 5)),
        st.tuples(st.just("wait"), st.integers(1, 40)),
    ),
    min_size=1,
    max_size=10,
)


def play(story, *, block_scan: bool, settings_, start) -> dict:
    """Run `story` from `start` in one mode; what the books hold at its end (every write
    rolled back, so the second run starts from the same database and addresses)."""
    settings_.KERNODECK_WATCH_BLOCK_SCAN = block_scan
    cache.clear()
    clock.freeze(start)
    with LoopbackServer() as server, transaction.atomic():
        settings_.KERNODECK_TRON_API_URL = server.url
        chain = TronChain(server)
        intents = [tron_intent(method) for method in METHODS]

        def watch():
            report = watching.watch_network("tron")
            assert "error" not in report, report

        watch()
        for step in story:
            clock.freeze(clock.now() + timedelta(seconds=30))
            if step[0] == "pay":
                _pay, which, size, result, lookalike = step
                intent = intents[which]
                amount = max(1, int(intent.amount_units * AMOUNTS[size]))
                if intent.method.asset == "TRX":
                    chain.pay_trx(intent.address, amount, result=result)
                else:
                    contract = LOOKALIKE if lookalike else "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
                    chain.pay_token(intent.address, amount, contract=contract, result=result)
                chain.mine()
            elif step[0] == "mine":
                chain.mine(step[1])
            elif step[0] == "reorg":
                chain.reorg(step[1])
            elif step[0] == "wait":
                clock.freeze(clock.now() + timedelta(minutes=step[1]))
            watch()
        chain.mine(25)  # the end: everything solidified, every address looked at again
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
                    "asset",
                    "amount_base",
                    "kind",
                    "failed",
                    "confirmations",
                    "block_height",
                    "disappeared_at",
                )
            ),
        }
        transaction.set_rollback(True)
    return books


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(story=steps)
def test_tron_block_scan_and_address_polling_settle_the_same(
    configured, fresh_rates, settings, story
):
    settings.KERNODECK_WATCH_LATE_INTERVAL = 0  # address polling looks at every address
    settings.KERNODECK_TRON_SWEEP_ADDRESSES = 2
    start = fresh_rates["TRX"].fetched_at.replace(microsecond=0) + timedelta(seconds=1)

    by_address = play(story, block_scan=False, settings_=settings, start=start)
    by_blocks = play(story, block_scan=True, settings_=settings, start=start)

    assert by_blocks == by_address
    assert by_blocks["transfers"] or not any(step[0] == "pay" for step in story)
