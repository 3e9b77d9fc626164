"""Reads for the operators' review queue."""

from django.db.models import Q

from kernodeck.payments.models import (
    EXCEPTION_STATUSES,
    REVIEW_KINDS,
    IntentStatus,
    PaymentIntent,
    Transfer,
)


def review_intents():
    """Intents waiting for a decision, oldest first."""
    return (
        PaymentIntent.objects.filter(resolution="")
        .filter(
            Q(status__in=EXCEPTION_STATUSES)
            | (Q(status=IntentStatus.CONFIRMED) & ~Q(review_reason=""))
        )
        .select_related("method", "order", "owner", "topup")
        .order_by("created_at")
    )


def review_transfers():
    """Transfers at our addresses that no intent could take, oldest first."""
    return Transfer.objects.filter(
        kind__in=REVIEW_KINDS, review_resolved_at__isnull=True
    ).order_by("first_seen_at")
