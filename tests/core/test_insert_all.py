"""core.rows.insert_all writes what save() writes: on PostgreSQL each group as one jsonb
parameter (jsonb_populate_recordset), and the values one by one where one has no JSON
spelling; elsewhere one INSERT per group."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection

from kernodeck.core import clock, rows
from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_event
from kernodeck.payments.models import PaymentIntent
from kernodeck.payments.services import payment_intent_create_for_order
from tests.factories import make_offer, make_order, make_user

pytestmark = pytest.mark.django_db

# What the database holds, not Python's view of an unsaved object.
_SKIP = {"id"}


def _row(model, **filters) -> dict:
    found = model.objects.filter(**filters).values()
    (row,) = found
    return {key: value for key, value in row.items() if key not in _SKIP}


def _events(user, target, action):
    return [
        audit_event(
            action=action,
            target=target,
            actor=user,
            before={"nested": {"list": [1, 2.5, None, "ü"], "flag": True}},
            after={"text": "quote ' and \" and \\ and %s %(x)s"},
            ip_address="2001:db8::1",
        ),
        audit_event(action=action + "_too", target=target, ip_address="10.0.0.7"),
        audit_event(action=action + "_again", target=target, ip_address=""),
    ]


def test_the_rows_are_those_save_writes(demo_mode):
    user = make_user()
    order = make_order(owner=user, offer=make_offer(units_total=5))
    intent = payment_intent_create_for_order(order=order, method_code="btc-bitcoin", actor=user)
    # A copy of the same instructions under another key, written by save().
    saved = PaymentIntent.objects.get(pk=intent.pk)
    written = _row(PaymentIntent, pk=intent.pk)
    PaymentIntent.objects.filter(pk=intent.pk).delete()
    saved._state.adding = True
    saved.save(force_insert=True)
    assert _row(PaymentIntent, pk=intent.pk) == written

    events = _events(user, order, "test.inserted")
    twins = _events(user, order, "test.saved")
    for event, twin in zip(events, twins, strict=True):
        twin.created_at = event.created_at
    rows.insert_all(events)
    for twin in twins:
        twin.save(force_insert=True)
    for event, twin in zip(events, twins, strict=True):
        mine = _row(AuditEvent, action=event.action)
        theirs = _row(AuditEvent, action=twin.action)
        assert {**mine, "action": ""} == {**theirs, "action": ""}
    # In the given order (the keys the database assigned grow with it).
    ids = list(
        AuditEvent.objects.filter(action__startswith="test.inserted")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert ids == [event.action for event in events]


def test_a_value_without_a_json_spelling_is_sent_as_a_value(demo_mode):
    """A float that is not finite has no JSON spelling: the rows go the ordinary way (and
    the database says what it says of it, as it would to save())."""
    user = make_user()
    events = _events(user, user, "test.fallback")
    events[0].after = {"amount": str(Decimal("1.5"))}
    events[1].created_at = clock.now() - timedelta(days=1)
    rows.insert_all(events)
    assert AuditEvent.objects.filter(action__startswith="test.fallback").count() == 3
    if connection.vendor == "postgresql":
        assert rows._json_documents([events]) is not None
        events[0].before = {"x": float("nan")}
        assert rows._json_documents([events]) is None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the jsonb path is PostgreSQL's")
def test_the_document_holds_what_the_orm_would_send(demo_mode):
    """Field by field, the fast spelling equals the ORM's own value (get_db_prep_save)
    spelled as JSON."""
    user = make_user()
    order = make_order(owner=user, offer=make_offer(units_total=5))
    intent = payment_intent_create_for_order(order=order, method_code="btc-bitcoin", actor=user)
    intent = PaymentIntent.objects.get(pk=intent.pk)
    for group in ([intent], _events(user, order, "test.document")):
        plan = rows._json_plan(group[0].__class__)
        for instance in group:
            for column, attname, field, kind, pre_save in plan:
                fast = rows._json_field_value(instance, field, attname, kind, pre_save)
                value = field.pre_save(instance, True)
                orm = rows._json_value(field.get_db_prep_save(value, connection))
                assert fast == orm, column
