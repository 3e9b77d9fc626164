"""Reads for the operators' review queue."""

from kernodeck.payments.models import (
    REVIEW_INTENT_CASES,
    REVIEW_TRANSFER_CASES,
    PaymentIntent,
    Transfer,
)


def review_intents():
    """Intents waiting for a decision, oldest first (read from payments_intent_review_idx:
    the filter is the index's condition, so the cost follows the open cases, not all)."""
    return (
        PaymentIntent.objects.filter(REVIEW_INTENT_CASES)
        .select_related("method", "order", "owner", "topup")
        .order_by("created_at")
    )


def review_transfers():
    """Transfers at our addresses that no intent could take, oldest first (read from
    payments_transfer_review_idx, like review_intents)."""
    return Transfer.objects.filter(REVIEW_TRANSFER_CASES).order_by("first_seen_at")
