"""A demo visitor pays BTC and USDT on Tron from the demo panel and watches them settle."""

import pytest
from django.utils import translation

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import IntentStatus
from tests.demo.conftest import demo_chains, simulator  # noqa: F401 (fixtures)
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base, email):
    page.goto(base + "/account/sign-in/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url("**/account/")


def demo_payment(method_code):
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    user = make_user(email="ada@example.org")
    order = order_services.order_register(
        owner=user, offer="h100-80gb", days=7, units=1, preparation="pytorch"
    )
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code=method_code, actor=user
    )
    return intent


def press(page, action):
    page.click(f"[data-demo-action={action}]")
    page.wait_for_load_state()


@pytest.mark.usefixtures("demo_chains")
@pytest.mark.parametrize(
    ("method_code", "locale", "width", "required"),
    [("btc-bitcoin", "es-ES", 390, 2), ("usdt-tron", "en-GB", 1280, 19)],
)
def test_a_demo_payment_sent_and_mined_from_the_panel_settles_the_order(
    live_server,
    new_context,
    method_code,
    locale,
    width,
    required,
):
    intent = demo_payment(method_code)
    page = new_context(locale=locale, viewport={"width": width, "height": 900}).new_page()
    sign_in(page, live_server.url, "ada@example.org")
    page.goto(f"{live_server.url}/payments/{intent.pk}/")
    assert page.locator("#demo-panel").is_visible()
    no_overflow = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    assert page.evaluate(no_overflow)

    press(page, "exact")
    status = page.locator("#status")
    assert status.locator(".badge.info").is_visible()  # seen, waiting for confirmations
    assert str(required) in status.inner_text()
    intent.refresh_from_db()
    assert intent.status == IntentStatus.DETECTED

    press(page, "mine_enough")
    assert status.locator(".badge.ok").is_visible()
    intent.refresh_from_db()
    intent.order.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert intent.order.payment_state == "settled"
    assert page.evaluate(no_overflow)

    page.goto(f"{live_server.url}/orders/{intent.order.reference}/")
    with translation.override(locale[:2]):
        settled = str(intent.order.get_payment_state_display())
    assert settled in page.locator("main").inner_text()
