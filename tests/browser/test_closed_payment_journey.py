"""Issue 9, defect 4 in a browser: after "I have paid", paying from the balance asks for a
confirmation; then the crypto instructions are closed and their page says "do not send"."""

import os
from pathlib import Path

import pytest

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from tests.browser.test_balance_journey import sign_in
from tests.factories import make_user
from tests.ledger.helpers import funded_account

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS")  # a folder, to look at the pages


def shoot(page, name):
    if not SHOTS:
        return
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)


@pytest.mark.parametrize("locale", ["en-GB", "es-ES"])
def test_declared_then_paid_from_the_balance_closes_the_instructions(
    live_server, new_context, settings, locale
):
    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    customer = make_user(email="ada@example.org")
    funded_account(customer, "5000", make_user(staff=True))
    order = order_services.order_register(
        owner=customer, offer="rtx-4090", days=7, units=1, preparation="python"
    )
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=customer
    )
    payment_services.payment_intent_declare(intent=intent, actor=customer)
    page = new_context(locale=locale).new_page()
    sign_in(page, live_server.url, "ada@example.org")

    page.goto(f"{live_server.url}/orders/{order.reference}/")
    page.locator("form[action$='/pay-with-balance/'] button[type=submit]").click()
    page.locator("main form input[name=confirm][value=yes]").wait_for(state="attached")
    text = page.locator("main").inner_text()
    assert order.reference in text
    shoot(page, f"confirm-{locale}")
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(f"**/orders/{order.reference}/")

    page.goto(f"{live_server.url}/payments/{intent.pk}/")
    shoot(page, f"closed-{locale}")
    main = page.locator("main").inner_text()
    assert page.locator("#closed").is_visible()
    assert intent.address not in page.content()
    assert page.locator(".qr").count() == 0
    if locale == "en-GB":
        assert "Do not send anything for these instructions" in main
    else:
        assert "No envíes nada para estas instrucciones" in main
