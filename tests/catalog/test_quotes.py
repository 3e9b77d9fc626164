from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernodeck.catalog.quotes import PriceSheet, quote, quote_errors
from kernodeck.core.errors import InvalidInput
from kernodeck.demo.catalog import demo_offers

DEMO_SHEETS = [
    PriceSheet(
        slug=o["slug"],
        gpu_model=o["gpu_model"],
        gpus_per_unit=o["gpus_per_unit"],
        unit_prices=o["prices"],
        preparations=tuple(o["preparations"]),
    )
    for o in demo_offers()
]

prices = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("99999.99"), places=2)
sheets = st.builds(
    PriceSheet,
    slug=st.just("gpu"),
    gpu_model=st.just("GPU"),
    gpus_per_unit=st.integers(min_value=1, max_value=8),
    unit_prices=st.fixed_dictionaries({3: prices, 7: prices, 30: prices}),
    preparations=st.just(("python", "pytorch")),
)


@given(
    sheet=st.one_of(st.sampled_from(DEMO_SHEETS), sheets),
    days=st.sampled_from([3, 7, 30]),
    units=st.integers(min_value=1, max_value=10),
)
def test_total_is_unit_price_times_units_and_gpus_follow_units(sheet, days, units):
    result = quote(sheet, days=days, units=units, preparation=sheet.preparations[0])

    assert result.unit_price_usd == sheet.unit_prices[days]
    assert result.total_usd == sheet.unit_prices[days] * units
    assert result.total_usd.as_tuple().exponent == -2
    assert result.gpus == sheet.gpus_per_unit * units


@given(days=st.integers().filter(lambda d: d not in (3, 7, 30)))
def test_any_other_duration_is_refused(days):
    with pytest.raises(InvalidInput) as refused:
        quote(DEMO_SHEETS[0], days=days, units=1, preparation="python")
    assert refused.value.field == "days"


@given(units=st.integers().filter(lambda u: not 1 <= u <= 10))
def test_units_outside_one_to_ten_are_refused(units):
    with pytest.raises(InvalidInput) as refused:
        quote(DEMO_SHEETS[0], days=7, units=units, preparation="python")
    assert refused.value.field == "units"


def test_two_b200_units_are_four_gpus():
    b200 = next(sheet for sheet in DEMO_SHEETS if sheet.slug == "b200-180gb")

    result = quote(b200, days=7, units=2, preparation="pytorch")

    assert (result.units, result.gpus) == (2, 4)
    assert result.total_usd == b200.unit_prices[7] * 2


@pytest.mark.parametrize(
    ("days", "units", "preparation", "field", "message"),
    [
        (5, 1, "python", "days", "Choose a duration of 3, 7 or 30 days."),
        ("seven", 1, "python", "days", "Choose a duration of 3, 7 or 30 days."),
        (7, 0, "python", "units", "Choose between 1 and 10 units."),
        (7, 11, "python", "units", "Choose between 1 and 10 units."),
        (7, "2.5", "python", "units", "Choose between 1 and 10 units."),
        (7, True, "python", "units", "Choose between 1 and 10 units."),
        (7, 1, "notebook", "preparation", "This GPU offers these preparations: python, pytorch."),
    ],
)
def test_invalid_input_names_the_field(days, units, preparation, field, message):
    amd = next(sheet for sheet in DEMO_SHEETS if sheet.slug == "mi325x-256gb")

    with pytest.raises(InvalidInput) as refused:
        quote(amd, days=days, units=units, preparation=preparation)

    assert (refused.value.field, refused.value.message) == (field, message)


def test_quote_errors_lists_every_field_at_fault():
    errors = quote_errors(DEMO_SHEETS[0], days=5, units=11, preparation="cobol")

    assert [error.field for error in errors] == ["days", "units", "preparation"]


def test_demo_prices_follow_the_2026_market_with_a_30_day_discount():
    by_slug = {sheet.slug: sheet for sheet in DEMO_SHEETS}
    rtx4090 = by_slug["rtx-4090"].unit_prices
    b200 = by_slug["b200-180gb"].unit_prices

    assert rtx4090[3] == Decimal("32.40")  # 0.45 USD/GPU-h x 72 h
    assert b200[3] == Decimal("936.00")  # 6.50 USD/GPU-h x 72 h x 2 GPUs
    for sheet in DEMO_SHEETS:
        per_day = {days: price / days for days, price in sheet.unit_prices.items()}
        assert per_day[30] < per_day[7] < per_day[3]
