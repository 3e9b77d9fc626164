"""The panel's "less" and "more" always land outside the tolerance, whatever is due."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from kernodeck.demo.payments import send_amount
from kernodeck.payments import reconciliation as r

EXPIRY = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def due_for(usd: Decimal, usd_per_coin: Decimal, decimals: int) -> r.Due:
    base = int((usd / usd_per_coin * Decimal(10) ** decimals).to_integral_value()) or 1
    return r.Due(
        amount_base=base,
        amount_usd=usd,
        usd_per_coin=usd_per_coin,
        decimals=decimals,
        expires_at=EXPIRY,
    )


dues = st.builds(
    due_for,
    usd=st.decimals(min_value="5", max_value="100000", places=2),
    usd_per_coin=st.sampled_from(
        [Decimal("1"), Decimal("97000"), Decimal("3.1"), Decimal("0.27")]
    ),
    decimals=st.sampled_from([6, 8, 9, 18]),
)


def status_after(due, amount, confirmations):
    policy = r.Policy(confirmations=confirmations)
    seen = [r.Seen(amount_base=amount, confirmations=confirmations, seen_at=EXPIRY)]
    return r.reconcile(due, seen, now=EXPIRY + timedelta(seconds=1), policy=policy).status


@given(due=dues, confirmations=st.integers(1, 32))
def test_each_send_action_reaches_the_case_it_names(due, confirmations):
    exact = send_amount(due=due, confirmations=confirmations, action="exact")
    less = send_amount(due=due, confirmations=confirmations, action="less")
    more = send_amount(due=due, confirmations=confirmations, action="more")

    assert exact == due.amount_base
    assert 0 < less < due.amount_base < more
    assert status_after(due, exact, confirmations) == r.CONFIRMED
    assert status_after(due, less, confirmations) == r.UNDERPAID
    assert status_after(due, more, confirmations) == r.OVERPAID
