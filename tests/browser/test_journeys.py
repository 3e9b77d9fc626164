"""Issue 12: the customer's and the operator's journeys as a new user tries them.

Set KERNODECK_SCREENSHOTS to a folder to keep 1280 and 390 px screenshots of each page.
"""

import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.ledger import services as ledger_services
from kernodeck.ledger.models import EntryKind, LedgerEntry
from kernodeck.orders import services as order_services
from kernodeck.orders.models import Order
from kernodeck.payments import services as payment_services
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from tests.browser.test_balance_journey import sign_in
from tests.factories import make_user
from tests.ledger.helpers import pay_topup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS")
PHONE = {"width": 390, "height": 844}


def shoot(page, name):
    if not SHOTS:
        return
    size = page.viewport_size
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


def assert_no_horizontal_overflow(page):
    widths = page.evaluate(
        "[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]"
    )
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"


@pytest.mark.parametrize("locale", ["en-GB", "es-ES"])
def test_new_visitor_registers_from_the_configurator_and_gets_the_configuration_back(
    live_server, new_context, locale
):
    demo_seed_catalog()
    words = {
        "en-GB": ("30 days", "Units", "PyTorch", "Continue", "Create an account"),
        "es-ES": ("30 días", "Lotes", "PyTorch", "Continuar", "Crear una cuenta"),
    }[locale]
    page = new_context(locale=locale).new_page()
    page.goto(live_server.url + "/gpus/b200-180gb/")
    page.get_by_label(words[0]).check()
    page.get_by_label(words[1], exact=True).fill("3")
    page.get_by_label(words[2]).check()
    page.get_by_role("button", name=words[3]).click()

    page.wait_for_url(lambda url: "/account/sign-in/" in url and "next=" in url)
    if locale == "en-GB":  # the header's button keeps the configuration too
        page.locator("header a.button", has_text="Create account").click()
    else:
        page.get_by_role("link", name=words[4]).click()
    page.wait_for_url(lambda url: "/account/register/" in url and "next=" in url)
    page.locator("input[name=first_name]").fill("Ada")
    page.locator("input[name=last_name]").fill("Lovelace")
    page.locator("input[name=email]").fill("ada@example.org")
    page.locator("input[name=password]").fill("un paseo largo por la sierra 2026")
    page.locator("main form button[type=submit]").click()

    # Registering signs nobody in (the answer is the same for a taken address): the new
    # customer signs in with the password just chosen, and the configuration follows.
    page.wait_for_url(lambda url: "/account/sign-in/" in url and "next=" in url)
    notice = {"en-GB": "If this address is new", "es-ES": "Si esta dirección es nueva"}[locale]
    assert notice in page.locator("main").inner_text() + page.locator("body").inner_text()
    page.locator("input[name=email]").fill("ada@example.org")
    page.locator("input[name=password]").fill("un paseo largo por la sierra 2026")
    page.locator("main form button[type=submit]").click()

    page.wait_for_url(lambda url: "/orders/new/" in url)
    query = parse_qs(urlsplit(page.url).query)
    assert query == {
        "offer": ["b200-180gb"],
        "days": ["30"],
        "units": ["3"],
        "preparation": ["pytorch"],
    }
    summary = page.locator("main .summary-list").inner_text()
    assert "B200" in summary and "6" in summary
    assert ("23,868.00 USD" if locale == "en-GB" else "23\u00a0868,00 USD") in summary
    page.locator("main form button[type=submit]").click()
    page.wait_for_url("**/orders/KD-*/")
    order = Order.objects.get()
    assert (order.owner.email, order.days, order.units, order.preparation) == (
        "ada@example.org",
        30,
        3,
        "pytorch",
    )


def test_registration_keeps_only_a_same_site_next(live_server, new_context):
    page = new_context(locale="en-GB").new_page()
    page.goto(live_server.url + "/account/register/?next=https://evil.example/steal")
    assert page.locator("main form input[name=next]").count() == 0
    page.locator("input[name=first_name]").fill("Ada")
    page.locator("input[name=last_name]").fill("Lovelace")
    page.locator("input[name=email]").fill("ada@example.org")
    page.locator("input[name=password]").fill("un paseo largo por la sierra 2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(live_server.url + "/account/sign-in/")
    assert page.locator("main form input[name=next]").count() == 0
    page.locator("input[name=email]").fill("ada@example.org")
    page.locator("input[name=password]").fill("un paseo largo por la sierra 2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(live_server.url + "/account/")


def test_eleven_units_show_the_error_and_no_stale_total(live_server, new_context):
    demo_seed_catalog()
    page = new_context(locale="en-GB").new_page()
    page.goto(live_server.url + "/gpus/b200-180gb/")
    summary = page.locator("#summary")
    assert summary.locator("#summary-total").is_visible()

    page.get_by_label("Units", exact=True).fill("11")
    summary.locator(".errorlist").first.wait_for()
    shoot(page, "configurator-eleven-units-en-GB")

    assert summary.locator("#summary-total").count() == 0
    assert summary.locator("#summary-units").count() == 0
    assert "10" in summary.locator(".errorlist").first.inner_text()

    page.get_by_label("Units", exact=True).fill("2")
    summary.locator("#summary-units", has_text="2").wait_for()
    assert summary.locator(".errorlist").count() == 0


def test_eleven_units_without_javascript_show_the_error_in_the_summary(live_server, new_context):
    demo_seed_catalog()
    page = new_context(locale="en-GB", java_script_enabled=False).new_page()
    page.goto(live_server.url + "/gpus/b200-180gb/")
    page.get_by_label("Units", exact=True).fill("11")
    page.get_by_role("button", name="Update summary").click()
    page.wait_for_load_state()

    summary = page.locator("#summary")
    assert summary.locator("#summary-total").count() == 0
    assert "10" in summary.locator(".errorlist").first.inner_text()


def overpaid_top_up_credited(settings):
    """A 100 USD top-up paid 300 USDT, then credited to the balance by an operator."""
    from kernodeck.payments import review

    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()
    customer = make_user(email="ada@example.org")
    operator = make_user(email="ops@example.org", staff=True, is_superuser=True)
    _topup, intent = settlement_topups.topup_create(
        account=customer, amount_usd="100", method_code="usdt-tron"
    )
    pay_topup(intent, amount_base=300_000_000)
    intent.refresh_from_db()
    assert intent.status == "overpaid"
    return customer, operator, intent, review


@pytest.mark.parametrize("locale", ["en-GB", "es-ES"])
def test_overpaid_top_up_credited_by_the_operator_reads_as_decided_everywhere(
    live_server, new_context, settings, locale
):
    customer, _operator, intent, _review = overpaid_top_up_credited(settings)
    operator_page = new_context(locale=locale).new_page()
    sign_in(operator_page, live_server.url, "ops@example.org")
    operator_page.goto(f"{live_server.url}/backoffice/review/intent/{intent.pk}/")
    operator_page.locator("input[name=action][value=credit]").check()
    operator_page.locator("form:has(input[value=decision]) textarea[name=reason]").fill(
        "sent three times the amount"
    )
    operator_page.locator("form:has(input[value=decision]) button[type=submit]").click()
    decided = "Decided" if locale == "en-GB" else "Decidido"
    operator_page.get_by_role("heading", name=decided).wait_for()
    shoot(operator_page, f"overpaid-credited-backoffice-{locale}")
    case = operator_page.locator("main").inner_text()
    if locale == "es-ES":  # the back-office speaks Spanish too
        for english in ("Expected", "Received", "Transfers at this address", "Rate now"):
            assert english not in case
    intent.refresh_from_db()
    assert intent.resolution == "credited"

    entry = LedgerEntry.objects.get(account=customer)
    assert entry.kind == EntryKind.OVERPAYMENT_CREDIT

    page = new_context(locale=locale).new_page()
    sign_in(page, live_server.url, "ada@example.org")
    page.goto(f"{live_server.url}/payments/{intent.pk}/")
    status = page.locator("#status").inner_text()
    shoot(page, f"overpaid-credited-payment-{locale}")
    if locale == "en-GB":
        assert "Credited to the balance" in status
        for stale in ("Under review", "will decide", "Waiting", "order"):
            assert stale not in status
    else:
        assert "Abonado al saldo" in status
        for stale in ("En revisión", "decidirá", "Esperando", "pedido"):
            assert stale not in status
    main = page.locator("main").inner_text()
    assert ("300 USDT" in main) and ("no longer be paid" not in main)
    assert "ya no se pueden pagar" not in main
    assert page.locator("#status .badge").count() == 1
    assert "ok" in page.locator("#status .badge").get_attribute("class")

    page.goto(f"{live_server.url}/balance/")
    shoot(page, f"overpaid-credited-balance-{locale}")
    available = "300.00 USD" if locale == "en-GB" else "300,00 USD"
    assert page.locator("#balance-available").inner_text() == available
    card = page.locator("main .card").first.inner_text()
    assert "pending" not in card.lower() and "pendiente" not in card.lower()
    statement = page.locator("#statement").inner_text()
    if locale == "en-GB":
        assert "Overpayment credited" in statement and "Late payment" not in statement
    else:
        assert "Pago excesivo abonado" in statement and "tardío" not in statement

    page.goto(f"{live_server.url}/balance/topups/{intent.topup_id}/")
    text = page.locator("main").inner_text()
    shoot(page, f"overpaid-credited-topup-{locale}")
    assert ("Pending confirmation" not in text) and ("Pendiente de confirmación" not in text)


@pytest.mark.parametrize("locale", ["en-GB", "es-ES"])
def test_phone_width_pages_never_scroll_sideways(live_server, new_context, settings, locale):
    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    customer = make_user(email="ada@example.org")
    operator = make_user(staff=True)
    ledger_services.balance_adjust(
        account=customer, amount_usd="5000", actor=operator, reason="test funding"
    )
    orders = [
        order_services.order_register(
            owner=customer, offer="rtx-4090", days=7, units=1, preparation="python"
        )
        for _ in range(3)
    ]
    settlement_orders.order_pay_with_balance(order=orders[0], actor=customer)
    intent = payment_services.payment_intent_create_for_order(
        order=orders[1], method_code="btc-bitcoin", actor=customer
    )
    page = new_context(locale=locale, viewport=PHONE).new_page()
    sign_in(page, live_server.url, "ada@example.org")

    page.goto(f"{live_server.url}/orders/")
    assert_no_horizontal_overflow(page)
    reference = page.get_by_role("link", name=orders[0].reference)
    assert reference.bounding_box()["height"] < 30  # one line: a reference never breaks
    shoot(page, f"phone-orders-{locale}")

    page.goto(f"{live_server.url}/balance/")
    assert_no_horizontal_overflow(page)
    assert page.locator("#statement tbody tr").first.is_visible()
    shoot(page, f"phone-balance-{locale}")

    page.goto(f"{live_server.url}/payments/{intent.pk}/")
    shoot(page, f"phone-payment-{locale}")
    assert_no_horizontal_overflow(page)
    main = page.locator("main").inner_text()
    assert ("Order" if locale == "en-GB" else "Pedido") in main
    # The essentials come first: the amount and the address within the first screen, and
    # "I have paid" right after them, before the QR code and the explanations.
    for selector in ("#pay-amount", "#pay-address"):
        box = page.locator(selector).bounding_box()
        assert box["y"] + box["height"] <= PHONE["height"], selector
    paid = page.locator("#status form button[type=submit]").bounding_box()["y"]
    assert paid < page.locator(".qr-card").bounding_box()["y"]
    assert paid < page.locator(".pay-later").bounding_box()["y"]


@pytest.mark.parametrize("locale", ["en-GB", "es-ES"])
def test_paying_from_the_balance_shows_the_amount_and_what_remains(
    live_server, new_context, settings, locale
):
    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    customer = make_user(email="ada@example.org")
    ledger_services.balance_adjust(
        account=customer, amount_usd="2000", actor=make_user(staff=True), reason="funding"
    )
    order = order_services.order_register(
        owner=customer, offer="rtx-4090", days=7, units=1, preparation="python"
    )
    page = new_context(locale=locale, viewport=PHONE).new_page()
    sign_in(page, live_server.url, "ada@example.org")
    page.goto(f"{live_server.url}/orders/{order.reference}/")
    page.locator("form[action$='/pay-with-balance/'] button[type=submit]").click()
    page.locator("#confirm-figures").wait_for()
    shoot(page, f"balance-confirm-{locale}")
    assert_no_horizontal_overflow(page)

    figures = page.locator("#confirm-figures").inner_text()
    if locale == "en-GB":
        expected = ("73.33 USD", "2,000.00 USD", "1,926.67 USD", "Back to the order, pay nothing")
    else:
        expected = (
            "73,33 USD",
            "2\u00a0000,00 USD",
            "1\u00a0926,67 USD",
            "Volver al pedido sin pagar",
        )
    for figure in expected[:3]:
        assert figure in figures
    assert page.get_by_role("link", name=expected[3]).is_visible()
    order.refresh_from_db()
    assert order.payment_state == "awaiting_payment"

    page.get_by_role("link", name=expected[3]).click()
    page.wait_for_url(f"**/orders/{order.reference}/")
    order.refresh_from_db()
    assert order.payment_state == "awaiting_payment"

    page.locator("form[action$='/pay-with-balance/'] button[type=submit]").click()
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(f"**/orders/{order.reference}/")
    order.refresh_from_db()
    assert order.payment_state == "settled"
