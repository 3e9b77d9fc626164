"""Each payment says what its money did, for its purpose (issue 23, item 4): an order is
settled, a top-up credits the balance, an extension moves the rental's end."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.test import Client
from django.utils import translation

from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.orders.models import Order
from kernodeck.payments.vocabulary import OUTCOMES, intent_outcome
from kernodeck.support import services
from tests.ledger.helpers import pay_topup

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def intent(purpose, status="allocated", resolution="", extension=None):
    return SimpleNamespace(
        purpose=purpose,
        status=status,
        resolution=resolution,
        extension=extension,
        declared_at=None,
        abandoned_at=None,
        closed_at=None,
        exception="",
    )


@pytest.mark.parametrize(
    ("case", "words"),
    [
        (intent("order"), "Your order is settled."),
        (intent("topup"), "Your balance is credited."),
        (intent("extension"), "The extension is applied: your rental's end has moved."),
        (
            intent("extension", extension=SimpleNamespace(new_ends_at=AT)),
            "The extension is applied: your rental now ends on 2026-12-01 12:00 UTC.",
        ),
        (intent("order", "late", "settled"), "Your order is settled."),
        (
            intent("order", "late", "credited"),
            "The amount received is credited to your balance; the order is not paid by it.",
        ),
        (
            intent("topup", "overpaid", "credited"),
            "The amount received is credited to your balance.",
        ),
        (
            intent("extension", "late", "credited"),
            "The amount received is credited to your balance; the extension is not paid by it.",
        ),
        (
            intent("extension", "late", "refunded"),
            "The money was sent back to you outside Kernodeck; the extension is not paid by it.",
        ),
        (intent("order", "pending"), ""),
        (intent("extension", "confirmed"), ""),
        (intent("topup", "overpaid"), ""),
    ],
)
def test_each_purpose_says_what_its_money_did(case, words):
    with translation.override("en"):
        assert intent_outcome(case) == words


def test_only_money_that_reached_the_balance_says_so():
    with translation.override("en"):
        balance = {key for key, text in OUTCOMES.items() if "balance" in str(text)}
    assert balance == {
        ("topup", "settled"),
        ("topup", "refunded"),  # "nothing is credited to your balance"
        ("order", "credited"),
        ("topup", "credited"),
        ("extension", "credited"),
    }


def test_every_outcome_is_in_spanish():
    for key, text in OUTCOMES.items():
        with translation.override("es"):
            spanish = str(text)
        with translation.override("en"):
            english = str(text)
        assert spanish != english, key


# An extension paid in crypto, end to end: the page says the end moved, never the balance.
@pytest.mark.django_db(transaction=True)
def test_an_extension_paid_in_crypto_says_the_end_moved_not_the_balance(demo_mode):
    pytest.importorskip("kernodeck.provisioning.services")
    from tests.support.helpers import active_rental, in_days, make_agent

    order = active_rental()
    ends = order.ends_at
    ticket = services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="Three more days",
        body="The run needs longer.",
        fields={"extra_days": "3", "deadline": in_days(2).date().isoformat()},
    )
    extension = services.extension_offer(
        extension=ticket.extensions.get(),
        days=3,
        price_usd=None,
        valid_until=in_days(2),
        actor=make_agent(),
    )
    intent = services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=order.owner
    )
    client = Client()
    client.force_login(order.owner)
    waiting = client.get(f"/payments/{intent.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "the extension is applied: your rental's end moves" in waiting
    assert "top-up" not in waiting

    pay_topup(intent)

    new_end = Order.objects.get(pk=order.pk).ends_at
    assert new_end == ends + timedelta(days=3)
    assert ledger_selectors.balance_available(account=order.owner) == 0
    end = f"{new_end:%Y-%m-%d %H:%M}"
    for language, words in (
        ("en", f"The extension is applied: your rental now ends on {end} UTC."),
        (
            "es",
            f"La prolongación está aplicada: tu alquiler termina ahora el {end} UTC.",
        ),
    ):
        status = client.get(
            f"/payments/{intent.pk}/status/", HTTP_ACCEPT_LANGUAGE=language
        ).content.decode()
        assert words in status
        assert "saldo" not in status
        assert "balance" not in status
