"""Issue 23, item 4, in a browser, in Spanish and English, on a phone (390 px) and a desktop
(1280 px): each payment says what its money did. An extension offer paid in crypto says the
rental's end moved, with the new end, never "credited to your balance", and the balance
page does not move; a top-up paid in crypto says the balance is credited, and it is."""

import os
from pathlib import Path

import pytest

from kernodeck.orders.models import Order
from kernodeck.payments import services as payment_services
from kernodeck.settlement import topups as settlement_topups
from kernodeck.support import services as support_services
from tests.browser.test_order_journey import sign_in
from tests.ledger.helpers import pay_topup
from tests.support.helpers import active_rental, in_days, make_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")  # a folder, to look at the pages
WIDTHS = (390, 1280)

WORDS = {
    "en-GB": {
        "extension": "The extension is applied: your rental now ends on {end} UTC.",
        "topup": "Your balance is credited.",
        "credited": ("credited to your balance", "balance is credited"),
        "balance": "balance",
        "allocated": "Confirmed and allocated",
        "topup_balance": "100.00 USD",
    },
    "es-ES": {
        "extension": "La prolongación está aplicada: tu alquiler termina ahora el {end} UTC.",
        "topup": "El importe se ha abonado a tu saldo.",
        "credited": ("abonado a tu saldo", "abona a tu saldo"),
        "balance": "saldo",
        "allocated": "Confirmado y asignado",
        "topup_balance": "100,00 USD",
    },
}


def shoot(page, name):
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def fits(page, width):
    """Nothing sticks out sideways at this width."""
    return page.evaluate("document.documentElement.scrollWidth") <= width


def extension_offered(order, *, days):
    ticket = support_services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="Three more days",
        body="The run needs longer.",
        fields={"extra_days": str(days), "deadline": in_days(2).date().isoformat()},
    )
    return support_services.extension_offer(
        extension=ticket.extensions.get(),
        days=days,
        price_usd=None,
        valid_until=in_days(2),
        actor=make_agent(),
    )


def balance_seen(page, base):
    page.goto(f"{base}/balance/")
    figure = page.locator("#balance-available")
    figure.wait_for()
    statement = page.locator("#statement").inner_text()
    return figure.inner_text(), " ".join(statement.split())  # a table, or cards on a phone


@pytest.mark.parametrize("locale", ["es-ES", "en-GB"])
def test_an_extension_says_its_end_moved_and_a_top_up_says_the_balance_is_credited(
    live_server, new_context, settings, locale
):
    settings.KERNODECK_DEMO = True  # demo rates and wallets for the crypto payments
    payment_services.payment_methods_ensure()
    words = WORDS[locale]
    short = locale[:2]
    rental = active_rental()
    customer = rental.owner
    ends = rental.ends_at
    page = new_context(locale=locale).new_page()
    sign_in(page, live_server.url, customer.email)
    balance_before = balance_seen(page, live_server.url)

    # An extension offer paid in crypto: the watcher sees the exact amount, confirmed.
    extension = extension_offered(rental, days=3)
    extension_intent = support_services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=customer
    )
    pay_topup(extension_intent, txid="c3" * 32)
    new_end = Order.objects.get(pk=rental.pk).ends_at
    assert new_end > ends  # the end did move
    extension_words = words["extension"].format(end=f"{new_end:%Y-%m-%d %H:%M}")

    # A top-up of 100 USD paid in crypto, for the other side of the vocabulary.
    _topup, topup_intent = settlement_topups.topup_create(
        account=customer, amount_usd="100", method_code="btc-bitcoin"
    )

    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})

        # The extension's payment page: the new end, in words; nothing about the balance.
        page.goto(f"{live_server.url}/payments/{extension_intent.pk}/")
        status = page.locator("#status")
        status.wait_for()
        text = status.inner_text()
        assert words["allocated"] in text
        assert extension_words in text
        assert words["balance"] not in text.lower()
        main = page.locator("main").inner_text()
        for credited in words["credited"]:
            assert credited not in main
        assert fits(page, width)
        shoot(page, f"extension-paid-{short}-{width}")

        # Its balance is untouched: the same figure and the same statement as before.
        assert balance_seen(page, live_server.url) == balance_before
        assert fits(page, width)

    pay_topup(topup_intent, txid="d4" * 32)

    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})

        # The top-up's payment page says the balance is credited ...
        page.goto(f"{live_server.url}/payments/{topup_intent.pk}/")
        status = page.locator("#status")
        status.wait_for()
        text = status.inner_text()
        assert words["allocated"] in text
        assert words["topup"] in text
        assert "prolongación" not in text and "extension" not in text
        assert fits(page, width)
        shoot(page, f"topup-paid-{short}-{width}")

        # ... and it is.
        figure, _statement = balance_seen(page, live_server.url)
        assert figure == words["topup_balance"]
        assert fits(page, width)
