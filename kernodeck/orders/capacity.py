"""Fleet capacity: how many units of an offer orders hold right now.

Units are held by settled orders until their rental ends, and by unsettled orders until
their hold lapses (`hold_until`). Cancelled orders hold nothing.
"""

from django.db.models import Q, Sum

from kernodeck.core import clock
from kernodeck.orders.models import RELEASED_RENTAL_STATES, Order, PaymentState


def holding_orders():
    return Order.objects.filter(
        Q(payment_state=PaymentState.SETTLED) & ~Q(rental_state__in=RELEASED_RENTAL_STATES)
        | Q(payment_state=PaymentState.AWAITING_PAYMENT, hold_until__gt=clock.now())
    )


def units_free(*, offer) -> int:
    """Units of `offer` no order holds right now: the one count every decision uses.

    When the answer decides a write (registering, extending a lapsed hold, settling after
    the hold lapsed), call it with the offer row locked (`orders.locks.lock_offer`), so
    that concurrent decisions on the same offer queue behind each other.
    """
    held = units_held(offer_ids=[offer.pk]).get(offer.pk, 0)
    return max(0, offer.units_total - held)


def units_held(*, offer_ids) -> dict[int, int]:
    """Units held per offer id (offers holding none are absent)."""
    rows = (
        holding_orders()
        .filter(offer_id__in=list(offer_ids))
        .values("offer_id")
        .annotate(held=Sum("units"))
    )
    return {row["offer_id"]: row["held"] for row in rows}
