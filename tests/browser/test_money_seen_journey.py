"""Issue 23, item 1 in a browser: USDC instructions overpaid, "I have paid" never pressed.
The order page says at the top that the money is being checked, offers neither the balance
nor a primary "Get payment instructions", and new instructions come only after "I
understand, this is a different payment" — in Spanish and English, at 390 and 1280 px."""

import os
from pathlib import Path

import pytest

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from kernodeck.payments import watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, PaymentIntent
from tests.browser.test_balance_journey import sign_in
from tests.factories import make_user
from tests.ledger.helpers import funded_account

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS")  # a folder, to look at the pages

WORDS = {
    "en-GB": {
        "notice": "A payment is being checked",
        "seen": "; it is being checked.",
        "get": "Get payment instructions",
        "balance": "from my balance",
        "different": "I am making a different payment",
        "continue": "Continue",
        "understood": "I understand, this is a different payment",
    },
    "es-ES": {
        "notice": "Estamos comprobando un pago",
        "seen": "; lo estamos comprobando.",
        "get": "Obtener las instrucciones de pago",
        "balance": "de mi saldo",
        "different": "Estoy haciendo otro pago",
        "continue": "Continuar",
        "understood": "Entiendo, es un pago distinto",
    },
}


def shoot(page, name, width):
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("locale", ["es-ES", "en-GB"])
def test_money_under_review_is_said_first_and_no_second_payment_is_invited(
    live_server, new_context, settings, locale, width
):
    words = WORDS[locale]
    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    customer = make_user(email="ada@example.org")
    funded_account(customer, "5000", make_user(staff=True))
    order = order_services.order_register(
        owner=customer, offer="rtx-4090", days=7, units=1, preparation="python"
    )
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdc-ethereum", actor=customer
    )
    watching.transfer_record(
        ObservedTransfer(
            network=intent.chain,
            txid="ab" * 32,
            index=0,
            address=intent.address,
            asset="USDC",
            amount_base=intent.amount_units * 2,
            confirmations=100,
        ),
        intent=intent,
    )
    assert watching.payment_intent_reconcile(intent_id=intent.pk).status == IntentStatus.OVERPAID
    page = new_context(locale=locale, viewport={"width": width, "height": 900}).new_page()
    sign_in(page, live_server.url, "ada@example.org")

    page.goto(f"{live_server.url}/orders/{order.reference}/")
    shoot(page, f"money-seen-{locale}", width)
    notice = page.locator("#money-seen")
    assert notice.is_visible()
    assert words["notice"] in notice.inner_text()
    assert words["seen"] in notice.inner_text()
    # Said at the top: above the payment card, before any way to pay.
    assert notice.bounding_box()["y"] < page.locator("#payment").bounding_box()["y"]
    main = page.locator("main")
    assert main.get_by_role("button", name=words["get"]).count() == 0
    assert words["balance"] not in main.inner_text()
    assert page.locator("form[action$='/pay-with-balance/']").count() == 0
    # The only way on is the folded "different payment", whose button is not a primary one.
    assert not main.get_by_role("button", name=words["continue"]).is_visible()

    page.get_by_text(words["different"]).click()
    continue_button = main.get_by_role("button", name=words["continue"])
    assert continue_button.is_visible()
    assert "secondary" in continue_button.get_attribute("class")
    page.locator("main input[name=method][value='btc-bitcoin']").check()
    continue_button.click()
    page.get_by_role("button", name=words["understood"]).wait_for()
    shoot(page, f"different-payment-{locale}", width)
    assert words["seen"] in page.locator("main").inner_text()
    assert PaymentIntent.objects.filter(order=order).count() == 1

    page.get_by_role("button", name=words["understood"]).click()
    page.wait_for_url("**/payments/*/")
    second = PaymentIntent.objects.get(order=order, method_id="btc-bitcoin")
    assert str(second.pk) in page.url
