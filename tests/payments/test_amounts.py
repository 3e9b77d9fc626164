from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernodeck.payments.amounts import crypto_amount, units_to_decimal
from kernodeck.payments.methods import METHODS

totals = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("1000000"), places=2)
rates = st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("500000"), places=10)


@given(total=totals, rate=rates, method=st.sampled_from(METHODS))
def test_rounding_never_undercharges_and_overcharges_by_less_than_one_quantum(total, rate, method):
    units = crypto_amount(total, rate, decimals=method.decimals, precision=method.precision)

    coins = units_to_decimal(units, method.decimals)
    quantum = Decimal(1).scaleb(-method.precision)
    assert coins * rate >= total
    assert (coins - quantum) * rate < total
    assert units % 10 ** (method.decimals - method.precision) == 0


def test_exact_amounts_are_not_rounded_up():
    assert crypto_amount(Decimal("100.00"), Decimal("1"), decimals=6, precision=2) == 100_000_000
    assert crypto_amount(Decimal("97000.00"), Decimal("97000"), decimals=8, precision=8) == 10**8


def test_a_third_rounds_up():
    # 100 / 3 = 33.333… -> 33.34 USDT at two decimals, 33340000 base units.
    assert crypto_amount(Decimal("100.00"), Decimal("3"), decimals=6, precision=2) == 33_340_000


@pytest.mark.parametrize(("amount", "rate"), [(Decimal(0), Decimal(1)), (Decimal(1), Decimal(0))])
def test_zero_is_refused(amount, rate):
    with pytest.raises(ValueError):
        crypto_amount(amount, rate, decimals=8, precision=8)
