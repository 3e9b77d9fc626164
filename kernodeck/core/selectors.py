from kernodeck.core.models import AuditEvent


def audit_events_for(*, target_type: str, target_id: str):
    """The audit trail of one object, oldest first (a timeline)."""
    return (
        AuditEvent.objects.filter(target_type=target_type, target_id=str(target_id))
        .select_related("actor")
        .order_by("created_at", "id")
    )


def audit_trail_of(*, target_type: str, target_id: str):
    """`audit_events_for` without the actors' rows: for a timeline that reads `actor_id`
    only (the order file's), one join and a user's columns less per event."""
    return AuditEvent.objects.filter(target_type=target_type, target_id=str(target_id)).order_by(
        "created_at", "id"
    )
