"""The audit trail in operators' words: what an event is about ("Order KD-ABC1-2345", not
`orders.order 7`), and the events of one order found by its reference."""

from django.apps import apps
from django.db.models import Q
from django.utils.text import capfirst
from django.utils.translation import gettext as _

from kernodeck.orders.models import Order
from kernodeck.orders.selectors import order_references
from kernodeck.payments.models import PaymentIntent, Transfer
from kernodeck.payments.selectors import intent_order_references

ORDER = "orders.order"
INTENT = "payments.paymentintent"
TRANSFER = "payments.transfer"
RENTAL_STEP = "provisioning.rental_step"  # provisioning.node_health: an order's rental steps


def order_reference_events(term: str) -> Q | None:
    """The events of the order with reference `term` (any case), of its rental steps, of
    its payments and of their transfers; None when no order has that reference (three
    queries)."""
    reference = (term or "").strip().upper()
    if not reference.startswith("KD-"):
        return None
    order = Order.objects.filter(reference=reference).values_list("pk", flat=True).first()
    if order is None:
        return None
    intents = [
        str(pk) for pk in PaymentIntent.objects.filter(order_id=order).values_list("pk", flat=True)
    ]
    transfers = [
        str(pk)
        for pk in Transfer.objects.filter(intent__order_id=order).values_list("pk", flat=True)
    ]
    return (
        Q(target_type__in=[ORDER, RENTAL_STEP], target_id=str(order))
        | Q(target_type=INTENT, target_id__in=intents)
        | Q(target_type=TRANSFER, target_id__in=transfers)
    )


def _ids(events, *target_types) -> set[str]:
    return {e.target_id for e in events if e.target_type in target_types and e.target_id}


def _int_ids(ids) -> list[int]:
    return [int(i) for i in ids if i.isdigit()]


def _model_name(target_type: str) -> str:
    try:
        model = apps.get_model(target_type)
    except (LookupError, ValueError):
        return target_type
    return capfirst(model._meta.verbose_name)


def target_labels(events) -> dict[tuple[str, str], str]:
    """(target_type, target_id) -> words, for a page of events or AuditListRows (at most
    two queries, each a fixed statement)."""
    events = list(events)
    intents = {}
    valid = []
    for value in _ids(events, INTENT):
        try:
            valid.append(PaymentIntent._meta.pk.to_python(value))
        except Exception:  # noqa: S112 - a malformed id keeps its raw form
            continue
    if valid:
        intents = {str(pk): reference for pk, reference in intent_order_references(valid).items()}
    orders = {
        str(pk): reference
        for pk, reference in order_references(_int_ids(_ids(events, ORDER, RENTAL_STEP))).items()
    }
    # Each message translated once for the page, not once per event.
    of_order = _("Order %(reference)s")
    rental_of = _("Rental of order %(reference)s")
    payment_for = _("Payment for order %(reference)s")
    top_up = _("Payment %(id)s (top-up)")
    model_names = {}
    labels = {}
    for event in events:
        key = (event.target_type, event.target_id)
        if key in labels:
            continue
        kind, pk = key
        if kind == ORDER and pk in orders:
            labels[key] = of_order % {"reference": orders[pk]}
        elif kind == RENTAL_STEP and pk in orders:
            labels[key] = rental_of % {"reference": orders[pk]}
        elif kind == INTENT and intents.get(pk):
            labels[key] = payment_for % {"reference": intents[pk]}
        elif kind == INTENT and pk in intents:
            labels[key] = top_up % {"id": pk[:8]}
        elif kind:
            if kind not in model_names:
                model_names[kind] = _model_name(kind)
            labels[key] = f"{model_names[kind]} {pk}".strip()
        else:
            labels[key] = pk or "—"
    return labels
