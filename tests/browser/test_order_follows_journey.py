"""The order file follows by itself: left open while the payment settles, it shows the
settlement without the customer reloading it (es and en, phone and desktop widths)."""

import os
from pathlib import Path

import pytest

from kernodeck.orders import views as order_views
from kernodeck.settlement import orders as settlement_orders
from tests.browser.test_order_journey import sign_in
from tests.factories import make_offer, make_order, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")
WORDS = {
    "es-ES": ("Elige cómo pagar", "Pago liquidado el"),
    "en-GB": ("Choose how to pay", "Payment settled on"),
}


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("locale", ["es-ES", "en-GB"])
def test_the_order_file_shows_the_settlement_by_itself(
    live_server, new_context, monkeypatch, locale, width
):
    monkeypatch.setattr(order_views, "ORDER_POLL_SECONDS", 1)
    before, after = WORDS[locale]
    customer = make_user(email="follow@example.org")
    order = make_order(owner=customer, offer=make_offer(units_total=2))
    page = new_context(locale=locale, viewport={"width": width, "height": 900}).new_page()
    sign_in(page, live_server.url, customer.email)
    page.goto(f"{live_server.url}/orders/{order.reference}/")
    payment = page.locator("#payment")
    assert before in payment.inner_text()
    assert after not in payment.inner_text()
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"follow-before-{locale}-{width}.png"))

    settlement_orders.order_settle(order=order, cause={"test": "browser"})

    page.locator("#payment", has_text=after).wait_for()  # no reload by the test
    assert before not in page.locator("#payment").inner_text()
    assert page.url == f"{live_server.url}/orders/{order.reference}/"
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"follow-after-{locale}-{width}.png"))
