"""Address polling in turns, by property.

The round (`rotation.turn_take`): whatever intents come and go, a pass takes its share
(all of them when they are fewer), the newest recent ones first for up to half of it, and
an intent that stays pending is taken within ceil((pending then + arrivals since) / the
round's least share) passes.

The books: Hypothesis writes a story on a loopback Bitcoin chain (payments of every size,
blocks, reorgs, replaced transactions, "I paid", new instructions, passes going by every
KERNODECK_WATCH_INTERVAL up to and past the expiry), played twice from the same start:
polling one open address a pass in turn, and polling every open address on every pass.
Both must end with the same statuses, amounts and transfers: none is seen late by the
turn, none is missed.
"""

import math
from collections import namedtuple
from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kernodeck.core import clock
from kernodeck.payments import services, watching
from kernodeck.payments.models import PaymentIntent, Rate, Transfer
from kernodeck.payments.watching import rotation
from tests.loopback import LoopbackServer
from tests.payments.esplora_chain import EsploraChain
from tests.payments.test_watching import btc_intent

Row = namedtuple("Row", "pk created_at")
START = datetime(2026, 12, 1, tzinfo=UTC)
INTERVAL = 30

passes = st.lists(
    st.tuples(
        st.lists(st.uuids(), max_size=3, unique=True),  # new intents before the pass
        st.lists(st.integers(0, 50), max_size=2),  # pending ones that leave (paid, expired)
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(steps=passes, share=st.integers(1, 6), start_after=st.one_of(st.none(), st.uuids()))
def test_the_round_takes_its_share_and_reaches_every_pending_intent(steps, share, start_after):
    pending: dict = {}
    after = start_after
    least = share - share // 2  # what the round takes at least, besides the recent ones
    history = []  # per pass: the pending pks, the arrivals, the taken pks
    for number, (arrivals, leaving) in enumerate(steps):
        now = START + timedelta(seconds=INTERVAL * number)
        new = [pk for pk in arrivals if pk not in pending]
        for pk in new:
            pending[pk] = Row(pk, now)
        for index in leaving:
            if pending:
                pending.pop(sorted(pending)[index % len(pending)])
        rows = list(pending.values())
        recent_since = now - timedelta(seconds=rotation.RECENT_SECONDS)
        taken = rotation.turn_take(rows, share=share, after=after, recent_since=recent_since)
        pks = [row.pk for row in taken.rows]

        assert len(pks) == len(set(pks)) <= share
        assert set(pks) <= set(pending)
        assert len(pks) == min(share, len(rows))  # the whole share, when there are enough
        recent = sorted(
            (r for r in rows if r.created_at > recent_since),
            key=lambda r: (r.created_at, r.pk),
            reverse=True,
        )
        assert {r.pk for r in recent[: share // 2]} <= set(pks)  # the newest, on every pass
        after = taken.after
        history.append((set(pending), len(new), set(pks)))

    for first, (waiting, _new, _taken) in enumerate(history):
        for pk in waiting:
            arrived = 0
            for last in range(first, len(history)):
                still, new_count, taken_then = history[last]
                if pk not in still:
                    break
                if last > first:
                    arrived += new_count
                if pk in taken_then:
                    assert last - first + 1 <= math.ceil((len(waiting) + arrived) / least)
                    break
            else:
                if pk in history[-1][0] and pk not in history[-1][2]:
                    assert len(history) - first < math.ceil((len(waiting) + arrived) / least)


# -- the books, with and without turns ----------------------------------------------------

INTENTS = 4
EXPIRY = 250  # seconds: between the eighth and ninth pass; a round may take longer
AMOUNTS = {"exact": 1.0, "half": 0.5, "over": 1.5, "dust": 0.001}

stories = st.lists(
    st.one_of(
        st.tuples(st.just("pay"), st.integers(0, 5), st.sampled_from(sorted(AMOUNTS))),
        st.tuples(st.just("mine"), st.integers(1, 3)),
        st.tuples(st.just("reorg"), st.integers(1, 3), st.booleans()),
        st.tuples(st.just("drop"), st.integers(0, 5)),
        st.tuples(st.just("passes"), st.integers(1, 6)),
        st.tuples(st.just("declare"), st.integers(0, 5)),
        st.tuples(st.just("new intent")),
    ),
    min_size=1,
    max_size=10,
)


def play(story, *, budget: int, settings_, start) -> dict:
    """Run `story` from `start` with KERNODECK_WATCH_POLL_BUDGET = `budget`, a pass every
    INTERVAL seconds; return what the books hold at its end (every write rolled back)."""
    settings_.KERNODECK_WATCH_POLL_BUDGET = budget
    cache.clear()  # the throttles' counts of the previous run
    clock.freeze(start)
    with LoopbackServer() as server, transaction.atomic():
        settings_.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        chain = EsploraChain(server, at=start - timedelta(minutes=10))
        intents = [btc_intent() for _ in range(INTENTS)]
        rate = Rate.objects.filter(asset="BTC").latest("fetched_at").usd_per_coin
        sent = []

        def watch(count=1):
            for _ in range(count):
                clock.freeze(clock.now() + timedelta(seconds=INTERVAL))
                report = watching.watch_network("bitcoin")
                assert "error" not in report, report

        watch()
        for step in story:
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
            elif step[0] == "declare":
                intent = PaymentIntent.objects.get(pk=intents[step[1] % len(intents)].pk)
                services.payment_intent_declare(intent=intent, actor=intent.owner)
            elif step[0] == "new intent" and len(intents) < INTENTS + 3:
                Rate.objects.create(
                    asset="BTC", usd_per_coin=rate, source="kraken", fetched_at=clock.now()
                )
                intents.append(btc_intent())
            watch(step[1] if step[0] == "passes" else 1)
        # The end: whatever waits is mined and buried, and passes enough for a whole
        # round and a late poll.
        chain.mine(at=clock.now(), count=3)
        watch(len(intents) + 300 // INTERVAL + 2)
        books = {
            "intents": [
                PaymentIntent.objects.values_list(
                    "status", "received_base", "confirmed_base", "review_reason"
                ).get(pk=intent.pk)
                for intent in intents
            ],
            # A transaction replaced before the turn reached its address is never seen
            # there: only what is still on the chain is compared.
            "transfers": sorted(
                Transfer.objects.filter(disappeared_at__isnull=True).values_list(
                    "txid", "index", "amount_base", "kind", "confirmations", "block_height"
                )
            ),
        }
        transaction.set_rollback(True)
    return books


@pytest.mark.django_db
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(story=stories)
# Payments in the last passes before the expiry, to addresses the turn may not reach by
# then: only the passes of the expiry window see them in time.
@example(
    story=[
        ("passes", 4),
        ("pay", 0, "exact"),
        ("pay", 1, "half"),
        ("pay", 2, "exact"),
        ("pay", 3, "over"),
        ("pay", 1, "half"),
    ]
)
def test_polling_in_turns_settles_what_polling_every_address_settles(
    configured, fresh_rates, settings, story
):
    settings.KERNODECK_WATCH_BLOCK_SCAN = False
    settings.KERNODECK_WATCH_INTERVAL = INTERVAL
    settings.KERNODECK_WATCH_LATE_INTERVAL = 300
    settings.KERNODECK_PAYMENT_EXPIRY_SECONDS = EXPIRY
    start = fresh_rates["BTC"].fetched_at.replace(microsecond=0) + timedelta(seconds=1)

    every_address = play(story, budget=0, settings_=settings, start=start)
    in_turns = play(story, budget=1, settings_=settings, start=start)

    assert in_turns == every_address
