from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from kernodeck.payments import watching
from kernodeck.payments.models import PaymentIntent
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pay_with_usdt_on_tron_declare_and_get_a_new_address_after_expiry(
    live_server, new_context, settings
):
    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    user = make_user(email="ada@example.org")
    order = order_services.order_register(
        owner=user, offer="h100-80gb", days=7, units=1, preparation="pytorch"
    )
    page = new_context(locale="es-ES").new_page()
    page.goto(live_server.url + "/account/sign-in/")
    page.fill("input[name=email]", "ada@example.org")
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url("**/account/")

    page.goto(f"{live_server.url}/orders/{order.reference}/")
    page.locator("label.method", has_text="Tron (TRC-20)").click()
    page.locator("#payment button[type=submit]").click()
    page.wait_for_url("**/payments/*/")

    first = PaymentIntent.objects.get()
    assert page.locator(".network-warning").first.inner_text().startswith("Envía USDT")
    assert page.locator("#pay-address").inner_text() == first.address
    assert page.locator(".qr svg").count() == 1
    countdown = page.locator("#countdown")
    assert ":" in countdown.inner_text() and "UTC" not in countdown.inner_text()

    page.get_by_role("button", name="He pagado").click()
    page.locator("text=declarado por ti").first.wait_for()
    first.refresh_from_db()
    assert first.declared_at is not None and first.status == "pending"

    # After expiry the same order gets new instructions, at a new address.
    clock.freeze(first.expires_at + timedelta(seconds=1))
    watching.payment_intents_expire()
    page.goto(f"{live_server.url}/orders/{order.reference}/")
    page.locator("label.method", has_text="Tron (TRC-20)").click()
    page.locator("#payment button[type=submit]").click()
    page.get_by_role("button", name="Entendido, crear nuevas instrucciones").click()
    page.wait_for_url("**/payments/*/")

    second = PaymentIntent.objects.exclude(pk=first.pk).get()
    assert second.address != first.address
    assert page.locator("#pay-address").inner_text() == second.address
