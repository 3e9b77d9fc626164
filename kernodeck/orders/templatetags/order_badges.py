from django import template
from django.utils.html import format_html

from kernodeck.orders.models import PaymentState, RentalState
from kernodeck.orders.timeline import rental_refunded, rental_state_label

register = template.Library()

TONES = {
    PaymentState.AWAITING_PAYMENT: "warn",
    PaymentState.SETTLED: "ok",
    PaymentState.CANCELLED: "muted",
    RentalState.NOT_STARTED: "muted",
    RentalState.QUEUED: "info",
    RentalState.PREPARING: "info",
    RentalState.ACTIVE: "ok",
    RentalState.ENDED: "muted",
    RentalState.PROVISIONING_FAILED: "bad",
    RentalState.SUSPENDED: "bad",
}


@register.simple_tag
def payment_badge(order):
    return format_html(
        '<span class="badge {}">{}</span>',
        TONES.get(order.payment_state, ""),
        order.get_payment_state_display(),
    )


@register.simple_tag
def rental_badge(order):
    """The rental's state; a rental that ended without ever starting reads "Refunded"."""
    return format_html(
        '<span class="badge {}">{}</span>',
        "info" if rental_refunded(order) else TONES.get(order.rental_state, ""),
        rental_state_label(order),
    )
