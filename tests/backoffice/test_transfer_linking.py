"""Linking a stray transfer offers the candidate payments (the one at its address first,
then open ones on its network in its asset) instead of a pasted id; a payment whose order
is already settled is then offered crediting the balance, never "accept and settle"."""

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.orders.models import PaymentState
from kernodeck.payments import services, watching
from kernodeck.payments.models import Resolution, Transfer, TransferKind
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = pytest.mark.django_db


def _intent(method_code="usdt-tron", *, offer=None):
    order = make_order(offer=offer or make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code=method_code, actor=order.owner
    )


def _stray(intent, *, amount_base=209_960_000):
    """A confirmed USDT transfer at `intent`'s address that no payment took."""
    now = clock.now()
    return Transfer.objects.create(
        network="tron",
        txid="ab" * 32,
        index=0,
        address=intent.address,
        asset="USDT",
        amount_base=Decimal(amount_base),
        confirmations=40,
        final=True,
        first_seen_at=now,
        last_seen_at=now,
        kind="unallocated",
    )


def _operator(language="en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_user(staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize(
    ("language", "at_address", "none"),
    [
        ("en", "(at this address)", "None: close the case with the note only"),
        ("es", "(en esta dirección)", "Ninguno: cerrar el caso solo con la nota"),
    ],
)
def test_the_transfer_page_offers_the_candidate_payments(
    configured, fresh_rates, language, at_address, none
):
    here = _intent()
    other = _intent()  # open, same network and asset
    bitcoin = _intent("btc-bitcoin")  # another network: never offered
    transfer = _stray(here)

    html = _operator(language).get(reverse("backoffice:transfer_case", args=[transfer.pk]))
    html = html.content.decode()

    assert f'value="{here.pk}"' in html and f'value="{other.pk}"' in html
    assert f'value="{bitcoin.pk}"' not in html
    assert html.index(f'value="{here.pk}"') < html.index(f'value="{other.pk}"')
    assert at_address in html and none in html
    assert here.order.reference in html
    assert '<input type="text" name="intent"' not in html  # no id to paste


def test_choosing_the_payment_attaches_the_transfer_and_settles_the_order(configured, fresh_rates):
    intent = _intent()
    transfer = _stray(intent)

    response = _operator().post(
        reverse("backoffice:transfer_case", args=[transfer.pk]),
        {"intent": str(intent.pk), "note": "the customer's payment"},
    )

    assert response.status_code == 302
    transfer.refresh_from_db()
    intent.order.refresh_from_db()
    assert transfer.intent_id == intent.pk and transfer.review_resolved_at is not None
    assert intent.order.payment_state == PaymentState.SETTLED


def test_a_payment_not_offered_is_refused(configured, fresh_rates):
    intent = _intent()
    transfer = _stray(intent)
    bitcoin = _intent("btc-bitcoin")

    response = _operator().post(
        reverse("backoffice:transfer_case", args=[transfer.pk]),
        {"intent": str(bitcoin.pk), "note": "wrong"},
    )

    assert response.status_code == 200
    transfer.refresh_from_db()
    assert transfer.intent_id is None and transfer.review_resolved_at is None


@pytest.mark.parametrize(
    ("language", "note"),
    [
        ("en", "is already settled by other means, so this payment is extra"),
        ("es", "ya está liquidado por otra vía, así que este pago sobra"),
    ],
)
def test_a_settled_orders_payment_is_offered_crediting_not_settling(
    configured, fresh_rates, language, note
):
    intent = _intent()
    order = intent.order
    operator = make_user(staff=True)
    funded_account(order.owner, "500.00", operator)
    settlement_orders.order_pay_with_balance(order=order, actor=order.owner)
    transfer = _stray(intent)
    client = _operator(language)
    client.post(
        reverse("backoffice:transfer_case", args=[transfer.pk]),
        {"intent": str(intent.pk), "note": "paid twice"},
    )
    case = reverse("backoffice:intent_case", args=[intent.pk])

    html = client.get(case).content.decode()
    assert 'value="settle"' not in html
    assert 'value="credit"' in html and 'value="refunded"' in html
    assert note in html

    refused = client.post(case, {"form": "decision", "action": "settle", "reason": "x"})
    assert refused.status_code == 200
    intent.refresh_from_db()
    assert intent.resolution == ""

    client.post(case, {"form": "decision", "action": "credit", "reason": "paid twice"})
    intent.refresh_from_db()
    assert intent.resolution == Resolution.CREDITED
    # 500 funded - 210 charged + 209.96 USDT at 1.0002 (210.00) credited.
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("500.00")


@pytest.mark.parametrize(
    ("language", "kind"), [("en", "Unexplained balance"), ("es", "Saldo sin explicar")]
)
def test_an_unexplained_balance_is_a_case_in_the_queue_and_attaching_it_counts_it(
    configured, fresh_rates, language, kind
):
    intent = _intent("eth-ethereum")
    watching.unexplained_balances_record(
        "ethereum", {intent.address: int(intent.amount_units)}, [intent], block=1234
    )
    [case] = Transfer.objects.filter(kind=TransferKind.UNEXPLAINED)
    operator = _operator(language)

    queue = operator.get(reverse("backoffice:review_queue")).content.decode()
    page = operator.get(reverse("backoffice:transfer_case", args=[case.pk])).content.decode()

    assert kind in queue and f"balance-{intent.address}"[:17] in queue
    assert kind in page
    operator.post(
        reverse("backoffice:transfer_case", args=[case.pk]),
        {"intent": str(intent.pk), "note": "forwarded by a contract wallet"},
    )
    intent.refresh_from_db()
    assert intent.status in {"confirmed", "allocated"}
