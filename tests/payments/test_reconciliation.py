"""Properties of the pure reconciliation function."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from kernodeck.payments import reconciliation as r

EXPIRES = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
POLICY = r.Policy(confirmations=3)
DUE = r.Due(
    amount_base=1_000_000,  # 1.000000 USDT
    amount_usd=Decimal("1000.00"),
    usd_per_coin=Decimal("1000"),  # so the 1 USD floor is 1000 base units
    decimals=6,
    expires_at=EXPIRES,
)
# Tolerance: max(0.5 % of 1 000 000 = 5 000, 1 USD = 1 000) = 5 000 base units.
MINIMUM = DUE.amount_base - 5_000

offsets = st.integers(min_value=-3600, max_value=3 * 3600)
seen = st.builds(
    r.Seen,
    amount_base=st.integers(min_value=1, max_value=1_200_000),
    confirmations=st.integers(min_value=0, max_value=10),
    seen_at=offsets.map(lambda s: EXPIRES + timedelta(seconds=s)),
    final=st.booleans(),
)
clocks = offsets.map(lambda s: EXPIRES + timedelta(seconds=s))


@given(transfers=st.lists(seen, max_size=6), now=clocks)
def test_never_settles_below_the_minimum_due_nor_with_anything_late_or_unconfirmed(transfers, now):
    outcome = r.reconcile(DUE, transfers, now=now, policy=POLICY)

    if outcome.settles:
        timely = [t for t in transfers if t.seen_at <= EXPIRES]
        assert sum(t.amount_base for t in timely) >= MINIMUM
        assert all(t.final or t.confirmations >= 3 for t in timely)
        assert not any(t.seen_at > EXPIRES for t in transfers)
        assert sum(t.amount_base for t in transfers) <= DUE.amount_base + 5_000


@given(transfers=st.lists(seen, max_size=6), now=clocks, data=st.data())
def test_order_of_transfers_and_replays_change_nothing(transfers, now, data):
    first = r.reconcile(DUE, transfers, now=now, policy=POLICY)
    shuffled = data.draw(st.permutations(transfers))

    assert r.reconcile(DUE, shuffled, now=now, policy=POLICY) == first
    assert r.reconcile(DUE, transfers, now=now, policy=POLICY) == first


@given(transfers=st.lists(seen, min_size=1, max_size=6), now=clocks)
def test_exceptions_are_never_the_settling_status(transfers, now):
    outcome = r.reconcile(DUE, transfers, now=now, policy=POLICY)

    if outcome.status in {r.UNDERPAID, r.OVERPAID, r.LATE}:
        assert not outcome.settles and outcome.reason


@given(amount=st.integers(min_value=MINIMUM, max_value=DUE.amount_base + 5_000))
def test_a_timely_confirmed_payment_within_tolerance_settles(amount):
    transfer = r.Seen(amount, 3, EXPIRES - timedelta(minutes=5))

    assert r.reconcile(DUE, [transfer], now=EXPIRES + timedelta(hours=1), policy=POLICY).settles


def test_the_remainder_may_follow_before_the_expiry():
    part = r.Seen(600_000, 5, EXPIRES - timedelta(minutes=20))
    rest = r.Seen(400_000, 5, EXPIRES - timedelta(minutes=1))

    before = r.reconcile(DUE, [part], now=EXPIRES - timedelta(minutes=10), policy=POLICY)
    after_expiry = r.reconcile(DUE, [part], now=EXPIRES + timedelta(minutes=1), policy=POLICY)
    complete = r.reconcile(DUE, [part, rest], now=EXPIRES, policy=POLICY)

    assert before.status == r.DETECTED
    assert after_expiry.status == r.UNDERPAID
    assert complete.status == r.CONFIRMED


def test_timeliness_is_judged_by_when_it_was_seen_not_when_the_watcher_ran():
    paid_in_time = r.Seen(1_000_000, 3, EXPIRES - timedelta(seconds=1))

    outcome = r.reconcile(DUE, [paid_in_time], now=EXPIRES + timedelta(hours=5), policy=POLICY)

    assert outcome.status == r.CONFIRMED


def test_late_overpaid_and_nothing_at_all():
    late = r.Seen(1_000_000, 3, EXPIRES + timedelta(minutes=1))
    over = r.Seen(1_100_000, 3, EXPIRES - timedelta(minutes=1))
    now = EXPIRES + timedelta(hours=1)

    assert r.reconcile(DUE, [late], now=now, policy=POLICY).status == r.LATE
    assert r.reconcile(DUE, [over], now=now, policy=POLICY).status == r.OVERPAID
    assert r.reconcile(DUE, [], now=now, policy=POLICY).status == r.EXPIRED
    assert (
        r.reconcile(DUE, [], now=EXPIRES - timedelta(seconds=1), policy=POLICY).status == r.PENDING
    )


def test_confirmations_never_zero():
    import pytest

    with pytest.raises(ValueError):
        r.Policy(confirmations=0)
