"""Paying an extension offer from the balance takes a confirm step, as paying an order does:
the ticket's button shows the days, the new end and the figures, and charges nothing."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import LedgerEntry
from kernodeck.orders.models import Order
from kernodeck.support.models import Extension
from tests.support.helpers import active_rental, fund
from tests.support.test_extensions import offered

pytestmark = pytest.mark.django_db(transaction=True)  # slots are allocated after commit

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def pay_url(extension):
    return reverse("support:extension_pay_with_balance", args=[extension.ticket_id, extension.pk])


def test_the_balance_button_opens_a_confirm_step_that_charges_nothing(client):
    order = active_rental()
    extension = offered(order, days=7, price=Decimal("210.00"))
    fund(order.owner, "500.00")
    client.force_login(order.owner)

    step = client.post(pay_url(extension), **EN)

    assert step.status_code == 200
    page = step.content.decode()
    assert f"Pay the extension of order {order.reference} from your balance?" in page
    new_end = order.ends_at + timedelta(days=7)
    for text in (
        "Extra days",
        f"{order.ends_at:%Y-%m-%d %H:%M} UTC",
        f"{new_end:%Y-%m-%d %H:%M} UTC",
        "210.00 USD",
        "500.00 USD",
        "290.00 USD",
        'name="confirm" value="yes"',
        "Back to the ticket, pay nothing",
        reverse("support:detail", args=[extension.ticket_id]),
    ):
        assert text in page, text
    assert 'name="declared_seen"' not in page
    assert Extension.objects.get(pk=extension.pk).status == "offered"
    assert not LedgerEntry.objects.filter(kind="extension_charge").exists()
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("500.00")

    paid = client.post(pay_url(extension), {"confirm": "yes"})

    assert paid.status_code == 302
    assert Extension.objects.get(pk=extension.pk).status == "applied"
    assert Order.objects.get(pk=order.pk).ends_at == new_end
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("290.00")


def test_the_confirm_step_is_in_spanish_by_default(client):
    order = active_rental()
    extension = offered(order, days=3, price=Decimal("90.00"))
    fund(order.owner, "100.00")
    client.force_login(order.owner)

    page = client.post(pay_url(extension), HTTP_ACCEPT_LANGUAGE="es").content.decode()

    assert f"¿Pagar la prolongación del pedido {order.reference} con tu saldo?" in page
    assert "Nuevo fin" in page and "Volver a la consulta sin pagar" in page


def test_a_paid_offer_is_not_charged_again_and_shows_no_step(client):
    order = active_rental()
    extension = offered(order, days=3, price=Decimal("90.00"))
    fund(order.owner, "200.00")
    client.force_login(order.owner)
    client.post(pay_url(extension), {"confirm": "yes"})

    again = client.post(pay_url(extension))

    assert again.status_code == 302
    assert LedgerEntry.objects.filter(kind="extension_charge").count() == 1
