"""The payment page left open while its payment is decided: the countdown goes by itself."""

import os
from pathlib import Path

import pytest

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from kernodeck.payments import views as payment_views
from kernodeck.payments.models import IntentStatus, PaymentIntent
from tests.browser.test_order_journey import sign_in
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")


def shoot(page, name):
    if not SHOTS:
        return
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 900})


@pytest.mark.parametrize("locale", ["es-ES", "en-GB"])
def test_the_countdown_stops_and_goes_once_the_payment_is_allocated(
    live_server, new_context, settings, monkeypatch, locale
):
    settings.KERNODECK_DEMO = True
    monkeypatch.setattr(payment_views, "STATUS_POLL_SECONDS", 1)
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    user = make_user(email="ada@example.org")
    order = order_services.order_register(
        owner=user, offer="h100-80gb", days=7, units=1, preparation="pytorch"
    )
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=user
    )
    page = new_context(locale=locale, viewport={"width": 390, "height": 900}).new_page()
    sign_in(page, live_server.url, user.email)
    page.goto(f"{live_server.url}/payments/{intent.pk}/")
    assert ":" in page.locator("#countdown").inner_text()
    wallet = page.locator("#open-wallet")  # a phone cannot scan its own screen
    assert wallet.is_visible() and wallet.get_attribute("href") == intent.uri
    shoot(page, f"payment-live-{locale}")

    PaymentIntent.objects.filter(pk=intent.pk).update(status=IntentStatus.ALLOCATED)

    page.locator("#countdown").wait_for(state="detached")
    assert not page.locator("#pay-expiry").is_visible()
    assert page.locator("#open-wallet").count() == 0
    allocated = {"es-ES": "Confirmado y asignado", "en-GB": "Confirmed and allocated"}[locale]
    assert allocated in page.locator("#status").inner_text()
    shoot(page, f"payment-allocated-{locale}")
