"""One written form of USD amounts per language (issue 12): pages, e-mails and API messages."""

from decimal import Decimal

import pytest
from django.template import Context, Template
from django.utils import translation
from hypothesis import given
from hypothesis import strategies as st

from kernodeck.core.money import money, money_figure, rate_figure


@pytest.mark.parametrize(
    ("value", "en", "es"),
    [
        ("0", "0.00 USD", "0,00 USD"),
        ("73.33", "73.33 USD", "73,33 USD"),
        ("2000", "2,000.00 USD", "2\u00a0000,00 USD"),
        ("23868.005", "23,868.01 USD", "23\u00a0868,01 USD"),
        ("1234567.5", "1,234,567.50 USD", "1\u00a0234\u00a0567,50 USD"),
        ("-73.33", "-73.33 USD", "-73,33 USD"),
    ],
)
def test_money_per_language(value, en, es):
    assert money(Decimal(value), language="en") == en
    assert money(Decimal(value), language="es") == es


def test_the_active_language_is_used_and_whole_amounts_may_drop_cents():
    with translation.override("es"):
        assert money(10000, places=0) == "10\u00a0000 USD"
        assert money_figure("2000") == "2\u00a0000,00"
    with translation.override("en"):
        assert money(10000, places=0) == "10,000 USD"


def test_rates_keep_four_places_below_one_dollar():
    assert rate_figure(Decimal("97000"), language="es") == "97\u00a0000,00"
    assert rate_figure(Decimal("0.2412"), language="en") == "0.2412"


def test_floats_are_refused():
    with pytest.raises(TypeError):
        money(1.5, language="en")


def test_template_filters_follow_the_language():
    template = Template("{% load money %}{{ a|money }} / {{ a|money_figure }} USD")
    with translation.override("es"):
        assert template.render(Context({"a": Decimal("4236.96")})) == (
            "4\u00a0236,96 USD / 4\u00a0236,96 USD"
        )
    with translation.override("en"):
        assert template.render(Context({"a": Decimal("4236.96")})) == "4,236.96 USD / 4,236.96 USD"


@given(cents=st.integers(min_value=-(10**12), max_value=10**12))
def test_both_forms_read_back_to_the_same_amount(cents):
    value = Decimal(cents).scaleb(-2)
    en = money(value, language="en").removesuffix(" USD")
    es = money(value, language="es").removesuffix(" USD")
    assert Decimal(en.replace(",", "")) == value
    assert Decimal(es.replace("\u00a0", "").replace(",", ".")) == value
    assert " " not in es  # the figure never breaks across lines


def test_api_refusals_use_the_same_money_format_as_the_pages():
    from kernodeck.ledger.services import InsufficientBalance

    with translation.override("es"):
        spanish = InsufficientBalance(available=Decimal("0"), needed=Decimal("2000")).message
    with translation.override("en"):
        english = InsufficientBalance(available=Decimal("0"), needed=Decimal("2000")).message

    assert spanish.startswith(
        "Tu saldo disponible es de 0,00 USD; este pedido requiere 2\u00a0000,00 USD."
    )
    assert english.startswith("Your available balance is 0.00 USD; this order needs 2,000.00 USD.")


@pytest.mark.parametrize(
    ("units", "decimals", "en", "es"),
    [
        (123_450_000, 8, "1.2345", "1,2345"),
        (100_000_000, 6, "100", "100"),
        (1_234_560_000, 6, "1,234.56", "1\u00a0234,56"),
        (1, 18, "0.000000000000000001", "0,000000000000000001"),
        (0, 8, "0", "0"),
    ],
)
def test_coin_amounts_are_exact_in_each_language(units, decimals, en, es):
    from kernodeck.core.money import coin, coin_figure

    assert coin_figure(units, decimals, language="en") == en
    assert coin_figure(units, decimals, language="es") == es
    assert coin(units, decimals, "BTC", language="es") == f"{es} BTC"
