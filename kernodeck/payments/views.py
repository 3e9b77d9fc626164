from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from kernodeck.core.errors import NotFound, ServiceError
from kernodeck.orders import selectors as order_selectors
from kernodeck.payments import selectors, services, uris

STATUS_POLL_SECONDS = 10


def _owned_intent(request, intent_id):
    try:
        return selectors.intent_get_for_owner(owner=request.user, intent_id=intent_id)
    except NotFound:
        raise Http404 from None


@login_required
@require_POST
def order_pay(request, reference):
    """Create instructions for the chosen method (after a warning if one was declared paid)."""
    try:
        order = order_selectors.order_get_for_owner(owner=request.user, reference=reference)
    except NotFound:
        raise Http404 from None
    method_code = request.POST.get("method", "")
    different_payment = request.POST.get("different_payment") == "yes"
    if not different_payment:
        seen = selectors.order_money_seen(order=order)
        if seen:
            return _different_payment_confirm(request, order, seen, method_code)
    declared = selectors.declared_intents(order=order)
    if order.payment_state == "settled":
        # Paying a reversed payment again: only an earlier repayment's "I have paid" counts.
        declared = [intent for intent in declared if intent.repays_id is not None]
    if declared and request.POST.get("second_transfer_understood") != "yes":
        return render(
            request,
            "payments/second_transfer_warning.html",
            {"order": order, "declared": declared, "method_code": method_code},
        )
    try:
        intent = services.payment_intent_create_for_order(
            order=order,
            method_code=method_code,
            actor=request.user,
            different_payment=different_payment,
        )
    except services.PaymentsSeen as exc:
        # Seen between the order page and this click: the step, with what was seen.
        return _different_payment_confirm(request, order, exc.seen, method_code, status=409)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect(reverse("orders:detail", args=[order.reference]) + "#payment")
    return redirect("payments:detail", intent_id=intent.pk)


def _different_payment_confirm(request, order, seen, method_code, *, status=200):
    """Money for the order is being checked: new instructions only once the customer says
    this is a different payment (issue 23)."""
    return render(
        request,
        "payments/different_payment_confirm.html",
        {
            "money_seen": seen,
            "method_code": method_code,
            "action": reverse("order_pay", args=[order.reference]),
            "back_url": reverse("orders:detail", args=[order.reference]),
        },
        status=status,
    )


def _intent_context(intent):
    return {
        "intent": intent,
        "method": intent.method,
        "amount": uris.amount_text(intent.amount_units, intent.method.decimals),
        "received": uris.amount_text(int(intent.received_base), intent.method.decimals),
        "live": selectors.intent_is_live(intent),
        "watched": selectors.is_watched(intent),
        "progress": selectors.intent_progress(intent),
        "poll_seconds": STATUS_POLL_SECONDS,
    }


@login_required
def detail(request, intent_id):
    intent = _owned_intent(request, intent_id)
    context = _intent_context(intent)
    context["qr_svg"] = uris.qr_svg(intent.uri)
    return render(request, "payments/detail.html", context)


@login_required
def status(request, intent_id):
    """The status block alone, polled by htmx so the page follows without a reload."""
    intent = _owned_intent(request, intent_id)
    return render(request, "payments/_status.html", _intent_context(intent) | {"polled": True})


@login_required
@require_POST
def declare(request, intent_id):
    intent = _owned_intent(request, intent_id)
    try:
        services.payment_intent_declare(intent=intent, actor=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect("payments:detail", intent_id=intent.pk)
    messages.success(
        request,
        _(
            "Noted: you declared this payment. It is verified on the blockchain; nothing is "
            "confirmed until then, and there is no need to send anything else."
        ),
    )
    return redirect("payments:detail", intent_id=intent.pk)


@login_required
def abandon(request, intent_id):
    intent = _owned_intent(request, intent_id)
    if request.method == "POST":
        try:
            services.payment_intent_abandon(intent=intent, actor=request.user)
        except ServiceError as exc:
            messages.error(request, exc.message)
            return redirect("payments:detail", intent_id=intent.pk)
        messages.info(request, _("These instructions are abandoned. Choose another method."))
        if intent.order_id:
            return redirect(reverse("orders:detail", args=[intent.order.reference]) + "#payment")
        return redirect("payments:detail", intent_id=intent.pk)
    return render(request, "payments/abandon_confirm.html", _intent_context(intent))
