"""Issue 23, item 16: every page writes amounts, counts and states in the one form of its
language (core/money.py, payments/vocabulary.py), and each refusal names what it keeps."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import translation

from kernodeck.core import clock
from kernodeck.core.errors import Unavailable
from kernodeck.ledger.models import TopUp
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import Purpose
from kernodeck.payments.services import rate_for_instructions
from kernodeck.payments.vocabulary import intent_state
from kernodeck.settlement import topups as settlement_topups
from tests.factories import make_offer, make_order, make_user

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}


@pytest.fixture(autouse=True)
def _back_to_the_default_language():
    """A request's language stays active in the thread: later tests expect the default."""
    yield
    translation.deactivate()


@pytest.mark.parametrize(
    ("language", "amounts"),
    [
        (EN, ["100 USD", "500 USD", "2,000 USD", "10,000 USD"]),
        (ES, ["100 USD", "500 USD", "2\u00a0000 USD", "10\u00a0000 USD"]),
    ],
)
def test_the_top_up_choices_follow_the_language(
    client, configured, fresh_rates, language, amounts
):
    client.force_login(make_user())

    page = client.get(reverse("ledger:balance"), **language).content.decode()

    for amount in amounts:
        assert f" {amount}</label>" in page
    assert "2 000 USD" not in page


@pytest.mark.parametrize(
    ("language", "total"), [(EN, "{:,.2f} USD"), (ES, None)], ids=["en", "es"]
)
def test_the_sizing_offers_write_their_totals_as_money(client, language, total):
    make_offer(
        slug="h100",
        gpu_model="H100 80 GB",
        memory_gib=80,
        prices={3: "1234.50", 7: "2934.50", 30: "9000.00"},
    )
    workload = {
        "preset": "llama-3.1-8b",
        "mode": "training",
        "precision": "bf16",
        "batch_size": "1",
        "sequence_length": "2048",
        "optimizer": "adamw",
        "finetune": "full",
        "gpus": "1",
    }

    response = client.get(reverse("sizing:estimate"), workload, **language)

    page = response.content.decode()
    amounts = [r.total_usd for r, _ in response.context["offers"] if r.total_usd is not None]
    assert amounts and all(amount >= 1000 for amount in amounts)
    for amount in amounts:
        if total:
            written = total.format(amount)
        else:
            whole, cents = f"{amount:.2f}".split(".")
            written = f"{int(whole):,}".replace(",", "\u00a0") + f",{cents} USD"
        assert f">{written}</td>" in page
        assert f"{amount:.2f} USD" not in page  # never the raw Decimal


def test_my_orders_say_units_times_gpus_per_unit(client):
    owner = make_user()
    single = make_order(owner=owner, offer=make_offer(slug="h100"), units=3)
    quad = make_order(owner=owner, offer=make_offer(slug="b200", gpus_per_unit=4), units=2)
    client.force_login(owner)

    english = client.get(reverse("orders:list"), **EN).content.decode()
    spanish = client.get(reverse("orders:list"), **ES).content.decode()

    assert single.gpus == 3 and quad.gpus == 8
    assert '>3 <span class="muted">\u00d7 1 GPU</span>' in english
    assert '>2 <span class="muted">\u00d7 4 GPUs</span>' in english
    assert '>2 <span class="muted">\u00d7 4 GPU</span>' in spanish
    assert "(3 GPU)" not in english


@pytest.mark.parametrize(
    ("language", "declared"),
    [(EN, "Declared by you, awaiting verification"), (ES, "Declarado por ti")],
)
def test_the_payment_ticket_names_each_payment_in_the_payment_pages_words(
    client, demo_mode, language, declared
):
    owner = make_user()
    order = make_order(owner=owner)
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=owner
    )
    payment_services.payment_intent_declare(intent=intent, actor=owner)
    intent.refresh_from_db()
    client.force_login(owner)

    form = client.get(reverse("support:new") + "?kind=payment", **language).content.decode()
    pay_page = client.get(reverse("payments:detail", args=[intent.pk]), **language)

    option = form[form.index(f'<option value="{intent.pk}"') :].split("</option>")[0]
    assert declared in option
    assert declared in pay_page.content.decode()
    assert intent_state(intent).key == "declared"
    assert "Pending" not in option and "Pendiente" not in option


def test_a_stale_rate_on_a_top_up_speaks_of_the_balance(configured, fresh_rates, settings):
    account = make_user()
    clock.freeze(clock.now() + timedelta(seconds=settings.KERNODECK_RATE_MAX_AGE + 1))

    with translation.override("en"), pytest.raises(Unavailable) as refused:
        settlement_topups.topup_create(
            account=account, amount_usd="100", method_code="btc-bitcoin"
        )

    assert "exchange rate is out of date" in refused.value.message
    assert "your balance is unchanged" in refused.value.message
    assert "order" not in refused.value.message
    assert not TopUp.objects.exists()


@pytest.mark.parametrize(
    ("purpose", "en", "es"),
    [
        (Purpose.ORDER, "Your order is safe", "Tu pedido está a salvo"),
        (Purpose.TOPUP, "your balance is unchanged", "tu saldo no ha cambiado"),
        (Purpose.EXTENSION, "The extension offer is unchanged", "La oferta de prolongación"),
    ],
)
def test_each_purpose_has_its_own_stale_rate_words(configured, purpose, en, es):
    for language, words in (("en", en), ("es", es)):
        with translation.override(language), pytest.raises(Unavailable) as refused:
            rate_for_instructions("BTC", purpose=purpose)
        assert words in refused.value.message


def test_money_reads_decimal_input():
    from kernodeck.core.money import money

    assert money(Decimal("5869"), language="en") == "5,869.00 USD"
    assert money(Decimal("5869"), language="es") == "5\u00a0869,00 USD"
