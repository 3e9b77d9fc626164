"""Issue 23, item 11: an order paid from the balance says so in its payment history (read
from the ledger) and its timeline says "Paid from your balance", not "Payment settled (by
you)"."""

import pytest
from django.urls import reverse

from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}


def paid_from_balance():
    order = make_order()
    funded_account(order.owner, "1000", make_user(staff=True))
    order, _entry = settlement_orders.order_pay_with_balance(order=order, actor=order.owner)
    return order


def test_the_payment_history_shows_the_balance_payment(client):
    order = paid_from_balance()
    client.force_login(order.owner)

    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()

    assert "Payment history" in page
    assert f"Paid from your balance: {order.total_usd:.2f} USD" in page
    assert "Payment settled (by you)" not in page
    assert "— Paid from your balance" in page
    assert "(by you)" in page  # the order's registration still says it


def test_in_spanish_too(client):
    order = paid_from_balance()
    client.force_login(order.owner)

    page = client.get(reverse("orders:detail", args=[order.reference]), **ES).content.decode()

    figure = f"{order.total_usd:.2f}".replace(".", ",")
    assert f"Pagado con tu saldo: {figure} USD" in page
    assert "— Pagado con tu saldo" in page


def test_an_unpaid_order_shows_no_balance_payment(client):
    order = make_order()
    client.force_login(order.owner)

    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()

    assert "Paid from your balance" not in page
