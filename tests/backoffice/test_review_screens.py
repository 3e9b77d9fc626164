"""The review screens speak the operator's language: reasons translated, amounts in coins,
payment methods by name, confirmations counted from the chain's stored tip, and crediting
money short of its confirmations needs an explicit confirmation."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.core.models import AuditEvent
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.payments import reconciliation, review_selectors, services, watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import ChainState, IntentStatus, Resolution, Transfer
from kernodeck.settlement import allocation
from tests.factories import make_offer, make_order, make_user

pytestmark = pytest.mark.django_db


def _underpaid_usdt(*, confirmations=1, height=1000, tip=1011):
    """209.96 USDT due on Tron (19 confirmations), 100 USDT received in block `height`
    while the stored count stayed at `confirmations`; the watcher's tip is `tip`."""
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}))
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    watching.transfer_record(
        ObservedTransfer(
            network="tron",
            txid="cd" * 32,
            index=0,
            address=intent.address,
            asset="USDT",
            amount_base=100_000_000,
            confirmations=confirmations,
            block_height=height,
        ),
        intent=intent,
    )
    ChainState.objects.update_or_create(network="tron", defaults={"tip": tip})
    clock.freeze(intent.expires_at + timedelta(minutes=1))
    intent = watching.payment_intent_reconcile(intent_id=intent.pk)
    assert intent.status == IntentStatus.UNDERPAID
    return intent


def _operator(language="es") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_user(staff=True, is_superuser=True))
    return client


def test_every_stored_reason_reads_back_as_it_was_made():
    for code, template in reconciliation.REASONS.items():
        names = [part for i, part in enumerate(template.split("{")) if i][:]
        amounts = {name.split("}")[0]: 1234 + i for i, name in enumerate(names)}
        text = reconciliation.reason_text(code, **amounts)
        assert reconciliation.reason_parse(text) == (code, amounts)
    assert reconciliation.reason_parse("typed by hand") is None


@pytest.mark.parametrize(
    ("language", "reason", "method", "amount"),
    [
        (
            "es",
            "Recibido 100 USDT de 209,96 USDT antes del vencimiento.",
            "USDT en Tron (TRC-20)",
            "100 USDT",
        ),
        (
            "en",
            "Received 100 USDT of 209.96 USDT before the expiry.",
            "USDT on Tron (TRC-20)",
            "100 USDT",
        ),
    ],
)
def test_the_queue_and_the_case_show_reasons_amounts_and_methods_in_words(
    configured, fresh_rates, language, reason, method, amount
):
    intent = _underpaid_usdt()
    client = _operator(language)

    queue = client.get(reverse("backoffice:review_queue")).content.decode()
    assert reason in queue
    assert f">{method}</a>" in queue
    assert "usdt-tron</a>" not in queue
    assert "base units" not in queue and "unidades base" not in queue

    case = client.get(reverse("backoffice:intent_case", args=[intent.pk])).content.decode()
    assert reason in case
    assert f'<td class="num">{amount}</td>' in case
    assert "100000000" not in case


def test_a_stray_transfer_shows_its_amount_in_coins(configured, fresh_rates):
    stray = Transfer.objects.create(
        network="bitcoin",
        txid="ef" * 32,
        index=1,
        address="bc1qstray",
        asset="BTC",
        amount_base=Decimal(123_450_000),
        confirmations=3,
        first_seen_at=clock.now(),
        last_seen_at=clock.now(),
        kind="unallocated",
    )
    client = _operator("es")
    queue = client.get(reverse("backoffice:review_queue")).content.decode()
    assert ">1,2345 BTC</td>" in queue
    case = client.get(reverse("backoffice:transfer_case", args=[stray.pk])).content.decode()
    assert "1,2345 BTC" in case and "123450000" not in case


def test_confirmations_are_counted_from_the_stored_tip(configured, fresh_rates):
    intent = _underpaid_usdt(confirmations=1, height=1000, tip=1011)
    transfer = review_selectors.with_chain_tip(intent.transfers.all()).get()

    assert review_selectors.confirmations_now(transfer) == 12
    ChainState.objects.filter(network="tron").delete()
    transfer = review_selectors.with_chain_tip(intent.transfers.all()).get()
    assert review_selectors.confirmations_now(transfer) == 1  # no tip stored: as stored
    ChainState.objects.create(network="tron", tip=1011)
    html = _operator("en").get(reverse("backoffice:intent_case", args=[intent.pk]))
    assert "<td>12 of 19</td>" in html.content.decode()
    stray = _operator("en").get(reverse("backoffice:transfer_case", args=[transfer.pk]))
    assert "12 of 19" in stray.content.decode()


@pytest.mark.parametrize(
    ("language", "warning"),
    [
        ("es", "Una transferencia de este pago tiene 12 de las 19 confirmaciones"),
        ("en", "A transfer of this payment has 12 of the 19 confirmations"),
    ],
)
def test_crediting_before_the_confirmations_warns_and_needs_an_explicit_yes(
    configured, fresh_rates, language, warning
):
    intent = _underpaid_usdt()
    client = _operator(language)
    case = reverse("backoffice:intent_case", args=[intent.pk])

    page = client.get(case).content.decode()
    assert warning in page
    assert 'name="accept_unconfirmed"' in page

    refused = client.post(case, {"form": "decision", "action": "credit", "reason": "ok"})
    assert refused.status_code == 200
    assert ("12 de las 19" if language == "es" else "12 of the 19") in refused.content.decode()
    intent.refresh_from_db()
    assert intent.resolution == ""
    assert ledger_selectors.balance_available(account=intent.owner) == Decimal("0.00")
    assert not AuditEvent.objects.filter(action="payment.review_credited").exists()

    accepted = client.post(
        case,
        {"form": "decision", "action": "credit", "reason": "ok", "accept_unconfirmed": "on"},
    )
    assert accepted.status_code == 302
    intent.refresh_from_db()
    assert intent.resolution == Resolution.CREDITED
    assert ledger_selectors.balance_available(account=intent.owner) == Decimal("100.02")
    event = AuditEvent.objects.get(action="payment.review_credited")
    assert event.after["unconfirmed_accepted"] == "12/19"


def test_a_confirmed_payment_needs_no_extra_confirmation(configured, fresh_rates):
    intent = _underpaid_usdt(confirmations=1, height=1000, tip=1018)  # 19 of 19 now
    page = _operator("en").get(reverse("backoffice:intent_case", args=[intent.pk]))
    assert 'name="accept_unconfirmed"' not in page.content.decode()

    allocation.review_credit_balance(intent_id=intent.pk, actor=make_user(staff=True), reason="x")
    assert ledger_selectors.balance_available(account=intent.owner) == Decimal("100.02")


def test_the_services_refuse_unconfirmed_money_without_the_flag(configured, fresh_rates):
    intent = _underpaid_usdt()
    operator = make_user(staff=True)
    for decide in (allocation.review_credit_balance, allocation.review_accept_and_settle):
        with pytest.raises(Conflict, match="12 of the 19"):
            decide(intent_id=intent.pk, actor=operator, reason="x")
    intent.refresh_from_db()
    assert intent.resolution == "" and intent.order.payment_state == "awaiting_payment"
