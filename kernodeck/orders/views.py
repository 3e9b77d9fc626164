import hashlib

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache

from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.core import signedpages
from kernodeck.core.errors import NotFound, ServiceError
from kernodeck.core.references import with_reference
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.notifications import selectors as notification_selectors
from kernodeck.orders import selectors, services
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments.vocabulary import intent_state_key
from kernodeck.provisioning import selectors as provisioning_selectors
from kernodeck.settlement import orders as settlement_orders

ORDERS_PER_PAGE = 20
CONFIG_KEYS = ("offer", "days", "units", "preparation")


def _owned_order(request, reference):
    try:
        return selectors.order_get_for_owner(owner=request.user, reference=reference)
    except NotFound:
        raise Http404 from None


@login_required
def new(request):
    """Confirmation step: the summary once more, then register the order (POST)."""
    source = request.POST if request.method == "POST" else request.GET
    config = {key: source.get(key, "") for key in CONFIG_KEYS}
    back_url = None
    error = None
    quote = None
    try:
        offer = catalog_selectors.offer_get_active(slug=config["offer"])
        back_url = (
            reverse("catalog:configure", args=[offer.slug])
            + "?"
            + urlencode({k: v for k, v in config.items() if k != "offer"})
        )
        if request.method == "POST":
            order = services.order_register(owner=request.user, **config)
            messages.success(
                request,
                _("Order %(reference)s is registered. Its units are held for you while you pay.")
                % {"reference": order.reference},
            )
            return redirect("orders:detail", reference=order.reference)
        quote = selectors.offer_quote(
            offer_obj=offer,
            days=config["days"],
            units=config["units"],
            preparation=config["preparation"],
        )
    except ServiceError as exc:
        error = exc.message
    return render(
        request,
        "orders/confirm.html",
        {"quote": quote, "config": config, "error": error, "back_url": back_url},
        status=200 if error is None else 422,
    )


@login_required
def order_list(request):
    page = Paginator(selectors.orders_for(owner=request.user), ORDERS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(request, "orders/list.html", {"page": page})


def _order_file_order(request, reference):
    try:
        return selectors.order_file_get(owner=request.user, reference=reference)
    except NotFound:
        raise Http404 from None


# The order file shows the rental's access and its secret: no HTTP cache keeps it, and this
# process keeps no copy of a page that shows one (signedpages.decline).
@never_cache
@login_required
@signedpages.signed_page
def detail(request, reference):
    order = _order_file_order(request, reference)
    intents = payment_selectors.intents_by_order([order])[order.pk]
    live = payment_selectors.live_intent(intents)
    rental = provisioning_selectors.rental_overview(order=order)
    if rental.access is not None:
        signedpages.decline(request)
    awaiting = order.payment_state == "awaiting_payment"
    # A settled order whose reversed payment an operator asked to be paid again.
    repayment = (
        payment_selectors.repayment_due(intents) if order.payment_state == "settled" else None
    )
    return render(
        request,
        "orders/detail.html",
        {
            "order": order,
            "timeline": selectors.order_timeline(order=order),
            "intents": intents,
            "live_intent": live,
            "repayment_usd": payment_selectors.reversed_usd(repayment) if repayment else None,
            # Read only where the page offers a way to pay (awaiting payment, or paying a
            # reversed payment again) and no instructions are live: a query each otherwise.
            "methods": payment_selectors.methods_overview()
            if live is None and (awaiting or repayment is not None)
            else [],
            "declared": any(i.declared_at for i in intents),
            "money_seen": payment_selectors.money_seen_among(intents),
            "balance_payment": ledger_selectors.order_balance_payment(order=order)
            if order.payment_state == "settled"
            else None,
            "balance_available": ledger_selectors.balance_available(account=order.owner)
            if awaiting
            else None,
            "reminder_banner": notification_selectors.rental_reminder_banner(
                order=order, viewer=request.user
            ),
            "rental": rental,
            "gpu_use": provisioning_selectors.rental_gpu_use(order=order),
            "follow": _follow(order, intents, rental),
        },
    )


@login_required
def cancel(request, reference):
    order = _owned_order(request, reference)
    if request.method == "POST":
        try:
            settlement_orders.order_cancel(order=order, actor=request.user)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request, _("Order %(reference)s is cancelled.") % {"reference": order.reference}
            )
        return redirect("orders:detail", reference=order.reference)
    return render(
        request,
        "confirm.html",
        {
            "title": _("Cancel order %(reference)s?") % {"reference": order.reference},
            "heading": with_reference(_("Cancel order %(reference)s?"), reference=order.reference),
            "body": _(
                "Its units are released at once and it can no longer be paid. Do not send a "
                "payment for it after cancelling. This cannot be undone."
            ),
            "confirm_label": _("Cancel the order"),
            "cancel_label": _("Keep the order"),
            "cancel_url": reverse("orders:detail", args=[order.reference]),
        },
    )


ORDER_POLL_SECONDS = 10


def _follow(order, intents, rental) -> dict:
    """What the order file polls to follow by itself: a digest of everything its page
    shows that can change without the customer (settlement, preparation, access, the end),
    and whether anything can still change (not once cancelled or ended and released)."""
    parts = [
        order.payment_state,
        order.rental_state,
        order.starts_at,
        order.ends_at,
        [stage.status for stage in rental.stages],
        rental.access is not None,
        rental.needs_ssh_key,
        rental.reason,
        [(str(intent.pk), intent_state_key(intent)) for intent in intents],
    ]
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
    over = order.payment_state == "cancelled" or rental.stages[-1].status == "done"
    return {"state": digest, "active": not over, "seconds": ORDER_POLL_SECONDS}


@never_cache
@login_required
def state(request, reference):
    """Polled by the order file (htmx): 204 while nothing changed, else HX-Refresh so the
    page reloads itself with the new state (and without access once the rental ended)."""
    order = _order_file_order(request, reference)
    intents = payment_selectors.intents_by_order([order])[order.pk]
    follow = _follow(order, intents, provisioning_selectors.rental_overview(order=order))
    if request.GET.get("seen") == follow["state"]:
        return HttpResponse(status=204)
    response = HttpResponse(status=200)
    response["HX-Refresh"] = "true"
    return response
