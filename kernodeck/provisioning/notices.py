"""The rental clock's customer notices, in one place.

E-mail belongs to `kernodeck.notifications` (its outbox sends after commit, in the
customer's language, without secrets). This module is the only caller from provisioning,
so wiring or changing it is a one-file change; while that app is not installed the calls
do nothing.
"""

from django.apps import apps
from django.urls import reverse

from kernodeck.notifications import services as notification_services

EVENTS = {
    "rental_preparing",
    "rental_access_ready",
    "rental_ended",
    "rental_failed",
    "rental_refunded",
}


def rental_notice(*, order, event: str) -> None:
    """Queue the e-mail for a rental event, inside the caller's transaction.

    The context carries the order reference and the URL of its order file, never access
    details: the customer reads those signed in. The dedupe key includes the moment of the
    state change, so a retried task never sends twice while a second, real failure does.
    """
    if event not in EVENTS:
        raise ValueError(f"unknown rental notice {event!r}")
    if not apps.is_installed("kernodeck.notifications"):
        return

    notification_services.email_enqueue(
        account=order.owner,
        event=event,
        context=_context(order, event),
        dedupe_key=f"{event}:{order.reference}:{order.rental_state_changed_at.isoformat()}",
    )


def _context(order, event: str) -> dict:
    """The fields each e-mail needs (notifications.services.EVENTS), and never a secret."""
    context = {
        "reference": order.reference,
        "order_path": reverse("orders:detail", args=[order.reference]),
    }
    if event == "rental_preparing":
        context.update(gpu_model=order.gpu_model, gpus=order.gpus, preparation=order.preparation)
    elif event == "rental_access_ready":
        context.update(starts_at=order.starts_at, ends_at=order.ends_at)
    elif event == "rental_ended":
        context.update(ended_at=order.rental_state_changed_at)
    elif event == "rental_failed":
        context.update(reason=order.rental_reason)
    elif event == "rental_refunded":
        context.update(amount_usd=str(order.total_usd))
    return context
