"""Issue 23, item 1, on the pages: an order with money under review says so at the top,
offers neither "Get payment instructions" nor the balance, and gives new instructions only
after "I understand, this is a different payment"."""

import pytest
from django.urls import reverse

from kernodeck.orders.models import PaymentState
from kernodeck.payments.models import PaymentIntent
from tests.factories import make_user
from tests.ledger.helpers import funded_account
from tests.payments.test_money_seen import overpaid_usdc

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}


def test_the_order_page_says_the_money_is_checked_and_offers_no_second_payment(
    client, configured, fresh_rates
):
    order, intent = overpaid_usdc()
    funded_account(order.owner, "1000", make_user(staff=True))
    client.force_login(order.owner)

    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()

    assert "A payment is being checked" in page
    assert "on Ethereum (ERC-20); it is being checked." in page
    assert "Payment being checked" in page
    assert "Awaiting payment" not in page
    assert "Get payment instructions" not in page
    assert "from my balance" not in page
    assert reverse("pay_with_balance", args=[order.reference]) not in page
    assert "I am making a different payment" in page
    # The notice comes before the payment card.
    assert page.index('id="money-seen"') < page.index('id="payment"')
    assert reverse("payments:detail", args=[intent.pk]) in page


def test_the_spanish_page_says_it_too(client, configured, fresh_rates):
    order, _intent = overpaid_usdc()
    client.force_login(order.owner)

    page = client.get(reverse("orders:detail", args=[order.reference]), **ES).content.decode()

    assert "Estamos comprobando un pago" in page
    assert "Obtener las instrucciones de pago" not in page
    assert "Estoy haciendo otro pago" in page


def test_new_instructions_only_after_saying_it_is_a_different_payment(
    client, configured, fresh_rates
):
    order, _intent = overpaid_usdc()
    client.force_login(order.owner)
    pay = reverse("order_pay", args=[order.reference])

    step = client.post(pay, {"method": "btc-bitcoin"}, **EN)

    assert step.status_code == 200
    page = step.content.decode()
    assert "Is this a different payment?" in page
    assert "on Ethereum (ERC-20); it is being checked." in page
    assert '<input type="hidden" name="different_payment" value="yes">' in page
    assert PaymentIntent.objects.filter(order=order).count() == 1

    done = client.post(pay, {"method": "btc-bitcoin", "different_payment": "yes"}, **EN)

    second = PaymentIntent.objects.filter(order=order, method_id="btc-bitcoin").get()
    assert done.status_code == 302
    assert done["Location"] == reverse("payments:detail", args=[second.pk])


def test_paying_from_the_balance_by_hand_is_still_refused(client, configured, fresh_rates):
    order, _intent = overpaid_usdc()
    funded_account(order.owner, "1000", make_user(staff=True))
    client.force_login(order.owner)

    client.post(reverse("pay_with_balance", args=[order.reference]), {"confirm": "yes"}, **EN)

    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT
