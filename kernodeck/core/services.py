from django.db import models, router

from kernodeck.core import clock, rows
from kernodeck.core.models import AuditEvent
from kernodeck.core.requests import valid_ip


def audit_event(
    *,
    action: str,
    target: models.Model | None = None,
    target_type: str = "",
    target_id: str = "",
    actor=None,
    before: dict | None = None,
    after: dict | None = None,
    data: dict | None = None,
    ip_address: str | None = None,
) -> AuditEvent:
    """An audit event, not saved yet: `audit_record` writes one, `audit_record_all` several."""
    if target is not None:
        target_type = target._meta.label_lower
        target_id = str(target.pk)
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    # Built from a value per field in order, as the ORM builds a loaded row: the keyword
    # path (a default, a descriptor and checks per field) cost about three times as much,
    # on every audited write. The instance is the same (tests/core/test_audit_event.py).
    event = AuditEvent(
        *_audit_values(
            created_at=clock.now(),
            actor_id=None if actor is None else actor.pk,
            action=action,
            target_type=target_type,
            target_id=target_id,
            before=before or {},
            after=after or {},
            data=data or {},
            ip_address=valid_ip(ip_address),
        )
    )
    AuditEvent.actor.field.set_cached_value(event, actor)  # as assigning it does
    if actor is not None:
        event._state.db = router.db_for_write(AuditEvent, instance=actor)
    return event


def _audit_values(**values) -> list:
    """AuditEvent's positional arguments: `values` by attribute name, every other field's
    default (its key, assigned by the database)."""
    found = [
        values.pop(field.attname) if field.attname in values else field.get_default()
        for field in AuditEvent._meta.concrete_fields
    ]
    if values:
        raise TypeError(f"AuditEvent has no field {sorted(values)}")
    return found


def audit_record(**fields) -> AuditEvent:
    """Write one audit event (the fields of `audit_event`). Call it inside the transaction
    of the change it records."""
    event = audit_event(**fields)
    event.save(force_insert=True)
    return event


def audit_record_all(events: list[AuditEvent], *, along: tuple = ()) -> list[AuditEvent]:
    """Write several events of one change (from `audit_event`) in one INSERT, in order.

    `along`: new rows of the change itself (lists of unsaved instances, one model each),
    written first and, on PostgreSQL, in the same statement (`rows.insert_all`); the
    events' keys are then not read back."""
    if not along:
        return AuditEvent.objects.bulk_create(events)
    rows.insert_all(*along, events)
    return events
