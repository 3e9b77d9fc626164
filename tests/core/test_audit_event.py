"""`audit_event` builds the instance positionally: the same instance as the keyword path."""

import pytest

from kernodeck.core.models import AuditEvent
from kernodeck.core.services import audit_event
from tests.factories import make_offer, make_user

pytestmark = pytest.mark.django_db


def _comparable(event):
    values = {
        field.attname: getattr(event, field.attname)
        for field in AuditEvent._meta.concrete_fields
        if field.attname != "created_at"
    }
    cached = {name: id(value) for name, value in event._state.fields_cache.items()}
    return values, cached, event._state.adding, event._state.db


@pytest.mark.parametrize("with_actor", [True, False])
def test_an_event_is_the_instance_the_keyword_constructor_builds(with_actor):
    actor = make_user() if with_actor else None
    target = make_offer()

    built = audit_event(
        action="catalog.offer_changed",
        target=target,
        actor=actor,
        before={"a": 1},
        after={"a": 2},
        ip_address="192.0.2.7",
    )
    expected = AuditEvent(
        created_at=built.created_at,
        actor=actor,
        action="catalog.offer_changed",
        target_type="catalog.offer",
        target_id=str(target.pk),
        before={"a": 1},
        after={"a": 2},
        data={},
        ip_address="192.0.2.7",
    )

    assert _comparable(built) == _comparable(expected)
    assert built.pk is None and built.actor is actor
    built.save(force_insert=True)
    stored = AuditEvent.objects.get(pk=built.pk)
    assert (stored.actor_id, stored.target_type, stored.after, stored.ip_address) == (
        actor.pk if actor else None,
        "catalog.offer",
        {"a": 2},
        "192.0.2.7",
    )


def test_an_anonymous_actor_is_no_actor_and_a_bad_address_none():
    from django.contrib.auth.models import AnonymousUser

    event = audit_event(action="x.y", actor=AnonymousUser(), ip_address="not an ip")
    assert event.actor_id is None and event.actor is None and event.ip_address is None
    assert (event.before, event.after, event.data) == ({}, {}, {})
