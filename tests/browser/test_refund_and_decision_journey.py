"""Issue 23 in a browser, in Spanish and English, on a phone (390 px) and a desktop
(1280 px): a refunded rental reads as refunded, with its amount, reason and a way to the
balance statement; an operator's payment decision reaches the customer's timeline in
words, with the reason the operator gave."""

import os
from pathlib import Path

import pytest

from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from kernodeck.provisioning import services as provisioning_services
from kernodeck.settlement import allocation
from kernodeck.settlement import orders as settlement_orders
from tests.browser.test_order_journey import sign_in
from tests.factories import make_offer, make_operator, make_user
from tests.ledger.helpers import pay_topup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")  # a folder, to look at the pages
WIDTHS = (390, 1280)

REFUND_REASON = "The H100 node failed its burn-in test; no other node is free this week."
DECISION_REASON = "You sent 1.5 times the amount; the rest is on your balance."

WORDS = {
    "en-GB": {
        "refunded": "Refunded",
        "amount": "Refunded to your balance: 32.40 USD",
        "statement_link": "See it in your balance statement",
        "statement_kind": "Refund",
        "decision": "Payment accepted after review: the order is settled",
        "excess": "is credited to your balance",
        "ended": "the machine and its data are released",
    },
    "es-ES": {
        "refunded": "Reembolsado",
        "amount": "Reembolsado a tu saldo: 32,40 USD",
        "statement_link": "Verlo en los movimientos de tu saldo",
        "statement_kind": "Reembolso",
        "decision": "Pago aceptado tras revisión: el pedido queda liquidado",
        "excess": "se abona a tu saldo",
        "ended": "la máquina y sus datos",
    },
}


def shoot(page, name):
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def fits(page, width):
    """Nothing sticks out sideways at this width."""
    return page.evaluate("document.documentElement.scrollWidth") <= width


def refunded_order(customer):
    offer = make_offer(
        gpu_model="H100 80 GB", units_total=1, prices={3: "10.80", 7: "32.40", 30: "100.00"}
    )
    order = order_services.order_register(
        owner=customer, offer=offer.slug, days=7, units=1, preparation="notebook"
    )
    settlement_orders.order_settle(order=order, cause={"test": "browser"})
    operator = make_operator()
    provisioning_services.rental_prepare(order=order, actor=operator)
    provisioning_services.rental_fail(order=order, reason="the node does not boot", actor=operator)
    return provisioning_services.rental_refund(order=order, reason=REFUND_REASON, actor=operator)


def decided_order(customer):
    payment_services.payment_methods_ensure()
    order = order_services.order_register(
        owner=customer, offer=make_offer().slug, days=7, units=1, preparation="python"
    )
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=customer
    )
    pay_topup(intent, amount_base=intent.amount_units * 3 // 2)  # overpaid: a case
    allocation.review_accept_and_settle(
        intent_id=intent.pk, actor=make_user(staff=True), reason=DECISION_REASON
    )
    return order


@pytest.mark.parametrize("locale", ["es-ES", "en-GB"])
def test_a_refund_and_a_decision_as_the_customer_sees_them(
    live_server, new_context, settings, locale
):
    settings.KERNODECK_DEMO = True  # demo rates and wallets for the crypto payment
    words = WORDS[locale]
    customer = make_user(email=f"rosa-{locale}@example.org")
    refunded = refunded_order(customer)
    decided = decided_order(customer)
    page = new_context(locale=locale).new_page()
    sign_in(page, live_server.url, customer.email)
    short = locale[:2]

    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})

        # The refunded rental: refunded, how much, why, and where to see it.
        page.goto(f"{live_server.url}/orders/{refunded.reference}/")
        refund = page.locator("#refund")
        refund.wait_for()
        assert refund.is_visible()
        text = refund.inner_text()
        assert words["amount"] in text
        assert REFUND_REASON in text
        rental = page.locator("#rental")
        assert words["ended"] not in rental.inner_text()
        assert rental.locator(".badge").inner_text() == words["refunded"]
        assert page.locator(".stage.refunded .stage-label").inner_text() == words["refunded"]
        assert page.locator(".stage.done").count() == 1  # the payment, never the end
        timeline = page.locator("#timeline").inner_text()
        assert REFUND_REASON in timeline
        assert "order." not in timeline
        assert fits(page, width)
        shoot(page, f"refunded-{short}-{width}")

        # The statement, one click away, holds the refund with its reason.
        refund.get_by_role("link", name=words["statement_link"]).click()
        page.wait_for_url("**/balance/#statement")
        statement = page.locator("#statement")
        assert words["statement_kind"] in statement.inner_text()
        assert REFUND_REASON in statement.inner_text()
        assert refunded.reference in statement.inner_text()

        # The operator's decision, in words, with the reason they gave.
        page.goto(f"{live_server.url}/orders/{decided.reference}/")
        timeline = page.locator("#timeline")
        timeline.wait_for()
        decision = timeline.locator("li", has_text=words["decision"])
        assert decision.count() == 1
        assert decision.is_visible()
        assert DECISION_REASON in decision.inner_text()
        assert words["excess"] in decision.inner_text()
        assert "order.payment_reviewed" not in page.content()
        assert fits(page, width)
        shoot(page, f"decision-{short}-{width}")
