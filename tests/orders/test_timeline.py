"""The order timeline in the customer's words (issue 23, item 2).

Every audit action the code can write on an order is collected from the source, and each
one is rendered on the customer's order page in Spanish and English: no raw event code may
reach a customer page, and an operator's decision shows the decision and its reason.
"""

import ast
import re
from pathlib import Path

import pytest
from django.test import Client
from django.utils import translation

from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_record
from kernodeck.orders import selectors
from kernodeck.orders.models import RentalState
from kernodeck.orders.timeline import ACTION_WORDS, DECISIONS, STAFF_ONLY, UNKNOWN_EVENT
from kernodeck.payments import review, services
from kernodeck.settlement import allocation
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import pay_topup

KERNODECK = Path(__file__).resolve().parents[2] / "kernodeck"
WRITERS = {"audit_record", "audit_event"}
# A target expression that is an order: `order`, `intent.order`, `order_obj`, `order_row`...
ORDER_TARGET = re.compile(r"(^|\.)order(_obj|_row)?$")
ACTION_STRING = re.compile(r"^order\.[a-z_]+$")


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def order_actions_in_the_code() -> tuple[set[str], list[str]]:
    """Every action written on an order: audit calls whose target is an order (or whose
    target type is "orders.order"), the `order_event=(action, order)` of payment
    instructions, and any "order.*" string. Also the places that write an order event whose
    action cannot be read from the source (an f-string), which the test refuses."""
    actions, unreadable = set(), []
    for path in sorted(KERNODECK.rglob("*.py")):
        if "migrations" in path.parts or path.name == "timeline.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text and ACTION_STRING.match(node.value):
                actions.add(node.value)
            if not isinstance(node, ast.Call):
                continue
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            if "order_event" in keywords and isinstance(keywords["order_event"], ast.Tuple):
                first = keywords["order_event"].elts[0]
                if isinstance(first, ast.Constant):
                    actions.add(first.value)
            if _call_name(node) not in WRITERS or "action" not in keywords:
                continue
            target = keywords.get("target")
            target_type = keywords.get("target_type")
            on_order = (target is not None and ORDER_TARGET.search(ast.unparse(target))) or (
                isinstance(target_type, ast.Constant) and target_type.value == "orders.order"
            )
            if not on_order:
                continue
            action = keywords["action"]
            if isinstance(action, ast.Constant):
                actions.add(action.value)
            elif isinstance(action, ast.IfExp):
                actions.update(
                    part.value
                    for part in (action.body, action.orelse)
                    if isinstance(part, ast.Constant)
                )
            else:
                unreadable.append(f"{path.relative_to(KERNODECK)}:{node.lineno}")
    return actions, unreadable


ACTIONS, UNREADABLE = order_actions_in_the_code()


def test_the_collection_finds_the_order_actions_of_every_domain():
    # Orders, payments, provisioning and support all write on the order.
    assert {
        "order.registered",
        "order.settled",
        "order.payment_reviewed",
        "order.payment_instructions_created",
        "order.rental_state_changed",
        "order.extension_payment_created",
        "order.ticket_opened",
        "provisioning.release_confirmed",
    } <= ACTIONS
    assert UNREADABLE == []


def test_every_action_written_on_an_order_has_words():
    assert sorted(ACTIONS - set(ACTION_WORDS)) == []


# Data each kind of event carries, as its writer stores it.
SAMPLES = {
    "order.rental_state_changed": [
        ({"rental_state": state}, {"reason": f"reason for {state}"})
        for state in RentalState.values
    ]
    + [({"rental_state": "ended"}, {"reason": "no hardware for you", "refund_entry": 1})],
    "order.payment_reviewed": [
        (
            {
                "payment": "00000000-0000-0000-0000-000000000000",
                "purpose": purpose,
                "resolution": resolution,
                "reason": f"decided: {purpose} {resolution}",
                "credited_usd": "90.06",
            },
            {},
        )
        for purpose, resolution in DECISIONS
    ],
    "order.rental_extended": [({"ends_at": "2026-12-08T10:00:00+00:00"}, {"reason": "paid"})],
    "order.hold_extended": [({"hold_until": "2026-12-01T11:00:00+00:00"}, {})],
    "order.extension_offered": [({"days": 7, "price_usd": "210.00"}, {})],
    "order.extension_declined": [({"reason": "the node is booked"}, {})],
}


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["es", "en"])
def test_every_order_event_reads_in_words_on_the_customer_page(language):
    order = make_order()
    for action in sorted(ACTIONS):
        for after, data in SAMPLES.get(action, [({}, {})]):
            audit_record(action=action, target=order, after=after, data=data)
    client = Client()
    client.force_login(order.owner)

    page = client.get(f"/orders/{order.reference}/", HTTP_ACCEPT_LANGUAGE=language)

    html = page.content.decode()
    timeline = html[html.index('id="timeline"') :]
    with translation.override(language):
        entries = selectors.order_timeline(order=order)
        unknown = str(UNKNOWN_EVENT)
    for action in ACTIONS:
        assert action not in html
    assert len(re.findall(r"<li><time", timeline)) == len(entries) > len(ACTIONS)
    assert [e["label"] for e in entries if e["label"] == unknown] == []
    for entry in entries:
        assert entry["label"] in timeline
    # Decisions show their reason; refunds, failures and suspensions theirs.
    for purpose, resolution in DECISIONS:
        assert f"decided: {purpose} {resolution}" in timeline
    assert "no hardware for you" in timeline
    assert "reason for suspended" in timeline
    assert "reason for provisioning_failed" in timeline
    assert "reason for queued" not in timeline  # the allocator's words, not the customer's
    assert "the node is booked" in timeline
    for action in STAFF_ONLY:
        assert str(ACTION_WORDS[action]) not in timeline
    with translation.override(language):
        staff = selectors.order_timeline(order=order, staff=True)
    assert {e["action"] for e in staff} == ACTIONS


def test_words_are_translated_for_every_action():
    for action, words in ACTION_WORDS.items():
        with translation.override("es"):
            spanish = str(words)
        with translation.override("en"):
            english = str(words)
        assert spanish != english, action


def test_an_action_without_words_reads_as_an_update_never_as_its_code(db):
    order = make_order()
    audit_record(action="order.something_new", target=order)

    with translation.override("es"):
        labels = [e["label"] for e in selectors.order_timeline(order=order)]

    assert labels == ["Pedido registrado", "Novedad en tu pedido"]


def usdt_order_intent():
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )


@pytest.mark.django_db
def test_an_operators_decision_reaches_the_customer_with_its_reason(configured, fresh_rates):
    operator = make_user(staff=True)
    intent = usdt_order_intent()
    pay_topup(intent, amount_base=300_000_000)  # 300 USDT for 209.96 asked

    allocation.review_accept_and_settle(
        intent_id=intent.pk, actor=operator, reason="You sent 300 USDT; we kept 210."
    )

    event = AuditEvent.objects.get(action="order.payment_reviewed")
    assert event.after["reason"] == "You sent 300 USDT; we kept 210."
    client = Client()
    client.force_login(intent.owner)
    url = f"/orders/{intent.order.reference}/"
    spanish = client.get(url, HTTP_ACCEPT_LANGUAGE="es").content.decode()
    english = client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "order.payment_reviewed" not in spanish + english
    assert "Pago aceptado tras revisión: el pedido queda liquidado" in spanish
    assert "El exceso, 90,06 USD, se abona a tu saldo." in spanish
    assert "Payment accepted after review: the order is settled" in english
    assert "The excess, 90.06 USD, is credited to your balance." in english
    for page in (spanish, english):
        assert "You sent 300 USDT; we kept 210." in page


@pytest.mark.django_db
def test_a_refund_off_platform_shows_the_decision_and_reason(configured, fresh_rates):
    intent = usdt_order_intent()
    pay_topup(intent, amount_base=300_000_000)

    review.review_mark_refunded(
        intent_id=intent.pk, actor=make_user(staff=True), reason="Sent back to your wallet."
    )

    with translation.override("es"):
        entry = selectors.order_timeline(order=intent.order)[-1]
    assert entry["label"] == "Pago devuelto fuera de Kernodeck tras revisión"
    assert entry["detail"] == "Sent back to your wallet."


@pytest.mark.django_db
def test_a_decision_written_before_the_reason_was_copied_reads_it_from_the_payment(
    configured, fresh_rates
):
    intent = usdt_order_intent()
    audit_record(action="payment.review_refunded", target=intent, after={"reason": "old reason"})
    audit_record(
        action="order.payment_reviewed",
        target=intent.order,
        after={"payment": str(intent.pk), "resolution": "refunded"},
    )

    entry = selectors.order_timeline(order=intent.order)[-1]

    assert entry["detail"] == "old reason"


@pytest.mark.django_db(transaction=True)
def test_a_decision_on_an_extension_payment_reaches_the_rentals_order(demo_mode):
    pytest.importorskip("kernodeck.provisioning.services")
    from kernodeck.support import services as support_services
    from tests.support.helpers import active_rental, in_days, make_agent

    order = active_rental()
    ticket = support_services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="Three more days",
        body="The run needs longer.",
        fields={"extra_days": "3", "deadline": in_days(2).date().isoformat()},
    )
    extension = support_services.extension_offer(
        extension=ticket.extensions.get(),
        days=3,
        price_usd=None,
        valid_until=in_days(2),
        actor=make_agent(),
    )
    intent = support_services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=order.owner
    )
    support_services.extension_decline(extension=extension, reason="withdrawn", actor=make_agent())
    pay_topup(intent)  # confirmed, for an offer withdrawn: a case for an operator

    allocation.review_credit_balance(
        intent_id=intent.pk, actor=make_user(staff=True), reason="Kept for you as balance."
    )

    with translation.override("en"):
        entry = selectors.order_timeline(order=order)[-1]
    assert entry["label"].startswith(
        "Extension payment credited to your balance after review (the extension is not paid "
        "by it). 100.00 USD credited to your balance."
    )
    assert entry["detail"] == "Kept for you as balance."
