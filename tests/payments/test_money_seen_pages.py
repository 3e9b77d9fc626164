"""Issue 23, item 1, on the pages: an order with money under review says so at the top,
offers neither "Get payment instructions" nor the balance, and gives new instructions only
after "I understand, this is a different payment"."""

import pytest
from django.urls import reverse

from kernodeck.core.money import coin_figure
from kernodeck.orders.models import PaymentState
from kernodeck.payments.models import IntentStatus, PaymentIntent
from kernodeck.settlement import topups as settlement_topups
from tests.factories import make_user
from tests.ledger.helpers import funded_account
from tests.payments.test_money_seen import observed, overpaid_usdc

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
    # The amount received is written as Spanish writes figures, exact to the base unit.
    received = coin_figure(_intent.amount_units * 2, 6, language="es")
    assert "," in received
    assert f"{received} USDC" in page


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


def _overpay(intent):
    from kernodeck.payments import watching

    watching.transfer_record(observed(intent, amount=intent.amount_units * 2), intent=intent)
    return watching.payment_intent_reconcile(intent_id=intent.pk)


def test_a_top_up_under_review_asks_before_new_instructions(client, configured, fresh_rates):
    account = make_user()
    topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    assert _overpay(intent).status == IntentStatus.OVERPAID
    client.force_login(account)

    page = client.get(reverse("ledger:topup", args=[topup.pk]), **EN).content.decode()
    assert "A payment is being checked" in page
    assert "Get payment instructions" not in page
    assert "I am making a different payment" in page

    pay = reverse("ledger:topup_pay", args=[topup.pk])
    step = client.post(pay, {"method": "trx-tron"}, **EN)
    assert "Is this a different payment?" in step.content.decode()
    assert topup.intents.count() == 1
    client.post(pay, {"method": "trx-tron", "different_payment": "yes"}, **EN)
    assert topup.intents.count() == 2


@pytest.mark.django_db(transaction=True)  # the rental's slots are taken after commit
def test_an_extension_offer_under_review_asks_before_new_instructions(
    client, configured, fresh_rates
):
    from kernodeck.support import services as support_services
    from tests.support.helpers import active_rental, fund
    from tests.support.test_extensions import offered

    order = active_rental()
    extension = offered(order, days=3)
    intent = support_services.extension_payment_create(
        extension=extension, method_code="usdt-tron", actor=order.owner
    )
    assert _overpay(intent).status == IntentStatus.OVERPAID
    fund(order.owner, "1000.00")
    client.force_login(order.owner)
    ticket = extension.ticket

    page = client.get(reverse("support:detail", args=[ticket.pk]), **EN).content.decode()
    assert "A payment is being checked" in page
    assert "from my balance" not in page
    assert "Get payment instructions" not in page

    pay = reverse("support:extension_pay", args=[ticket.pk, extension.pk])
    step = client.post(pay, {"method": "trx-tron"}, **EN)
    assert "Is this a different payment?" in step.content.decode()
    assert extension.intents.count() == 1
    client.post(pay, {"method": "trx-tron", "different_payment": "yes"}, **EN)
    assert extension.intents.count() == 2
