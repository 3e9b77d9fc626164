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
    declared = selectors.declared_intents(order=order)
    if declared and request.POST.get("second_transfer_understood") != "yes":
        return render(
            request,
            "payments/second_transfer_warning.html",
            {"order": order, "declared": declared, "method_code": method_code},
        )
    try:
        intent = services.payment_intent_create_for_order(
            order=order, method_code=method_code, actor=request.user
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect(reverse("orders:detail", args=[order.reference]) + "#payment")
    return redirect("payments:detail", intent_id=intent.pk)


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
