"""The events that exist today send their e-mail: order registered, payment confirmed,
top-up credited; each once, however often the action is repeated."""

from decimal import Decimal

import pytest
from django.core import mail

from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders import services as order_services
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account, pay_topup
from tests.payments.conftest import configured, fresh_rates  # noqa: F401

pytestmark = pytest.mark.django_db


def test_registering_an_order_sends_its_summary(send_after_commit):
    owner = make_user(preferred_language="en")
    offer = make_offer(gpu_model="H100 80 GB")

    with send_after_commit():
        order = make_order(owner=owner, offer=offer, days=7, units=2)

    row = OutboxMessage.objects.get(dedupe_key=f"order_registered:{order.reference}")
    assert (row.event, row.account, row.to_email) == ("order_registered", owner, owner.email)
    assert len(mail.outbox) == 1
    assert mail.outbox[0].subject == f"Order {order.reference} is registered"
    assert "2 \u00d7 H100 80 GB, 2 GPUs in all, for 7 days, 420.00 USD" in mail.outbox[0].body


def test_settling_an_order_twice_confirms_the_payment_once(send_after_commit):
    order = make_order(owner=make_user(preferred_language="es"))
    mail.outbox.clear()

    with send_after_commit():
        settlement_orders.order_settle(order=order, cause={"test": 1})
    with send_after_commit():
        settlement_orders.order_settle(order=order, cause={"test": 2})

    assert OutboxMessage.objects.filter(event="payment_confirmed").count() == 1
    assert [m.subject for m in mail.outbox] == [f"Pago confirmado del pedido {order.reference}"]


def test_paying_from_the_balance_confirms_the_payment(send_after_commit):
    owner = make_user(preferred_language="en")
    funded_account(owner, "1000", make_user(staff=True))
    order = make_order(owner=owner)
    mail.outbox.clear()

    with send_after_commit():
        settlement_orders.order_pay_with_balance(order=order, actor=owner)

    assert [m.subject for m in mail.outbox] == [f"Payment confirmed for order {order.reference}"]


def test_a_refused_settlement_sends_nothing(send_after_commit):
    order = make_order()
    settlement_orders.order_cancel(order=order, actor=order.owner)
    mail.outbox.clear()

    with pytest.raises(order_services.Conflict), send_after_commit():
        settlement_orders.order_settle(order=order, cause={})

    assert not OutboxMessage.objects.filter(event="payment_confirmed").exists()
    assert mail.outbox == []


def test_a_credited_top_up_is_announced_once_with_the_new_balance(
    configured,  # noqa: F811
    fresh_rates,  # noqa: F811
    send_after_commit,
):
    account = make_user(preferred_language="en")
    topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="500", method_code="usdt-tron"
    )
    mail.outbox.clear()

    with send_after_commit():
        pay_topup(intent)
        pay_topup(intent)  # a replay of the same transfer

    row = OutboxMessage.objects.get(event="topup_credited")
    assert row.dedupe_key == f"topup_credited:{topup.pk}"
    assert row.context == {"amount_usd": "500.00", "balance_usd": "500.00"}
    assert [m.subject for m in mail.outbox] == ["500.00 USD credited to your balance"]
    assert Decimal(row.context["balance_usd"]) == Decimal("500.00")
