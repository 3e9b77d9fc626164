"""One walk through every money event, compared with the audit trail and e-mails recorded
before the settlement step existed (audit_trail.json), so a refactor of who calls whom
cannot quietly add, drop or reorder an audit event or an e-mail.

The walk: an order paid in crypto (the watcher's allocation), an order paid from the
balance, an order cancelled with live instructions, a top-up paid in crypto, and two
extensions of a running rental, one paid from the balance and one in crypto. Each audit
event is compared by action, target type and the names of what it records (the values
hold ids and times); the e-mails by event.

After a change that means to alter the trail, rewrite the recording with
`KERNODECK_RECORD_AUDIT_TRAIL=1` and review its diff.
"""

import json
import os
from pathlib import Path

import pytest

from kernodeck.core.models import AuditEvent
from kernodeck.notifications.models import OutboxMessage
from kernodeck.payments import services as payment_services
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from kernodeck.support import services as support_services
from tests.factories import make_order, make_user
from tests.ledger.helpers import pay_topup
from tests.support.helpers import active_rental, fund, in_days, make_agent

pytestmark = pytest.mark.django_db(transaction=True)

RECORDED = Path(__file__).with_name("audit_trail.json")


def offered(order, *, days):
    ticket = support_services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="More days",
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


def walk() -> None:
    customer = make_user(email="walker@example.test")

    by_crypto = make_order(owner=customer)
    intent = payment_services.payment_intent_create_for_order(
        order=by_crypto, method_code="btc-bitcoin", actor=customer
    )
    pay_topup(intent, txid="a1" * 32)

    by_balance = make_order(owner=customer)
    fund(customer, by_balance.total_usd)
    settlement_orders.order_pay_with_balance(order=by_balance, actor=customer)

    cancelled = make_order(owner=customer)
    payment_services.payment_intent_create_for_order(
        order=cancelled, method_code="eth-ethereum", actor=customer
    )
    settlement_orders.order_cancel(order=cancelled, actor=customer)

    _topup, topup_intent = settlement_topups.topup_create(
        account=customer, amount_usd="100", method_code="btc-bitcoin"
    )
    pay_topup(topup_intent, txid="b2" * 32)

    rental = active_rental(owner=customer)
    from_balance = offered(rental, days=3)
    fund(customer, from_balance.price_usd)
    support_services.extension_pay_with_balance(extension=from_balance, actor=customer)
    in_crypto = offered(rental, days=2)
    extension_intent = support_services.extension_payment_create(
        extension=in_crypto, method_code="btc-bitcoin", actor=customer
    )
    pay_topup(extension_intent, txid="c3" * 32)


def trail() -> dict:
    events = [
        [
            event.action,
            event.target_type,
            sorted(event.before),
            sorted(event.after),
            sorted(event.data),
        ]
        for event in AuditEvent.objects.order_by("created_at", "pk")
    ]
    mails = list(OutboxMessage.objects.order_by("pk").values_list("event", flat=True))
    return {"audit": events, "mails": mails}


def test_every_money_event_leaves_the_recorded_audit_trail_and_e_mails(configured, fresh_rates):
    walk()
    seen = trail()
    if os.environ.get("KERNODECK_RECORD_AUDIT_TRAIL") == "1":
        RECORDED.write_text(json.dumps(seen, indent=1) + "\n")
    recorded = json.loads(RECORDED.read_text())
    assert seen["mails"] == recorded["mails"]
    assert len(seen["audit"]) == len(recorded["audit"])
    for number, (got, wanted) in enumerate(zip(seen["audit"], recorded["audit"], strict=True)):
        assert got == wanted, f"audit event {number}"
