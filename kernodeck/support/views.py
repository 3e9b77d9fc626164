"""Customer pages of support: my tickets, the guided forms, a thread, extension offers."""

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from kernodeck.core.errors import NotFound, ServiceError
from kernodeck.core.forms import add_service_error
from kernodeck.core.money import money
from kernodeck.core.references import with_reference
from kernodeck.core.requests import client_ip
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.orders import selectors as order_selectors
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.support import selectors, services
from kernodeck.support.forms import AccessRequestForm, ReplyForm, TicketForm
from kernodeck.support.models import ExtensionStatus, Kind

TICKETS_PER_PAGE = 50

PREVIEW_FIELDS = (
    "subject",
    "body",
    "launch_command",
    "first_error",
    "minimal_example",
    "configuration",
    "sent",
)


# Links from the product name the case; the subject starts filled in.
TOPIC_SUBJECTS = {
    "dates": gettext_lazy("Please confirm the dates of my rental"),
    "double-payment": gettext_lazy("I already sent a transfer"),
}


def _owned_ticket(request, ticket_id):
    try:
        return selectors.ticket_get_for_owner(owner=request.user, ticket_id=ticket_id)
    except NotFound:
        raise Http404 from None


def _uploads(files) -> list[services.Upload]:
    return [
        services.Upload(name=f.name, data=f.read(), content_type=f.content_type or "")
        for f in files
    ]


@login_required
def ticket_list(request):
    return render(
        request,
        "support/list.html",
        {
            "page": Paginator(
                selectors.tickets_for(owner=request.user), TICKETS_PER_PAGE
            ).get_page(request.GET.get("page")),
            "kinds": Kind.choices,
        },
    )


@login_required
def ticket_new(request):
    """Pick a kind, then the guided form for it (order and payment filled in from the link)."""
    source = request.POST if request.method == "POST" else request.GET
    kind = source.get("kind", "")
    if kind not in Kind.values:
        return render(
            request,
            "support/choose.html",
            {"kinds": Kind.choices, "order": source.get("order", "")},
        )
    orders = order_selectors.orders_for(owner=request.user)
    if kind == Kind.EXTENSION:
        orders = orders.filter(rental_state__in=services.EXTENDABLE_STATES)
    orders = orders[:100]
    reference = source.get("order", "")
    initial = {
        "order": reference.upper()[:16],
        "payment": source.get("payment", ""),
        "subject": TOPIC_SUBJECTS.get(source.get("topic", ""), ""),
    }
    form = TicketForm(
        request.POST or None,
        request.FILES or None,
        kind=kind,
        orders=orders,
        payments=selectors.order_payments_for(owner=request.user),
        initial=initial,
    )
    if request.method == "POST" and form.is_valid():
        try:
            ticket = services.ticket_create(
                owner=request.user,
                kind=kind,
                order=form.cleaned_data["order"] or None,
                subject=form.cleaned_data["subject"],
                body=form.cleaned_data["body"],
                fields=form.kind_fields(),
                attachments=_uploads(form.cleaned_data["attachments"]),
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(
                request, _("Your ticket is sent. Support answers here and by e-mail.")
            )
            return redirect("support:detail", ticket_id=ticket.pk)
    return render(
        request,
        "support/new.html",
        {"form": form, "kind": kind, "kind_label": Kind(kind).label},
        status=422 if form.is_bound and form.errors else 200,
    )


@login_required
@require_POST
def preview(request):
    """htmx: what would be removed from the texts of the form being written. Stores nothing."""
    # Bounded: the stored texts are bounded too, and the preview runs on every keystroke.
    text = "\n".join(request.POST.get(name, "")[: services.BODY_MAX] for name in PREVIEW_FIELDS)
    result = services.redaction_preview(
        owner=request.user,
        text=text.replace("\x00", ""),
        order_reference=request.POST.get("order", ""),
    )
    return render(request, "support/_preview.html", {"result": result})


@login_required
def ticket_detail(request, ticket_id):
    ticket = _owned_ticket(request, ticket_id)
    form = ReplyForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            message = services.ticket_message_add(
                ticket=ticket,
                author=request.user,
                body=form.cleaned_data["body"],
                attachments=_uploads(form.cleaned_data["attachments"]),
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            if message.redactions:
                messages.warning(
                    request, _("Secrets were removed from your message before it was stored.")
                )
            return redirect("support:detail", ticket_id=ticket.pk)
    extensions = list(selectors.extensions_of(ticket=ticket))
    for extension in extensions:
        # After "I have paid" on its instructions, paying from the balance says the risk.
        extension.declared_warning = services.extension_declared_warning(extension)
        # Money seen for the offer and being checked: no second payment invited (issue 23).
        extension.money_seen = payment_selectors.extension_money_seen(extension=extension)
    return render(
        request,
        "support/detail.html",
        {
            "ticket": ticket,
            "thread": selectors.ticket_messages(ticket=ticket),
            "field_rows": selectors.ticket_field_rows(ticket=ticket),
            "form": form,
            "extensions": extensions,
            "balance_available": ledger_selectors.balance_available(account=request.user),
            "methods": [m for m in payment_selectors.methods_overview() if m.available]
            if any(e.status == "offered" for e in extensions)
            else [],
        },
        status=422 if form.is_bound and form.errors else 200,
    )


@login_required
def attachment(request, ticket_id, attachment_id):
    """A file of the ticket, for its owner only; never rendered inline as HTML."""
    ticket = _owned_ticket(request, ticket_id)
    try:
        item = selectors.attachment_get(ticket=ticket, attachment_id=attachment_id)
    except NotFound:
        raise Http404 from None
    return attachment_response(item)


def attachment_response(item) -> HttpResponse:
    content_type = (
        "text/plain; charset=utf-8" if item.content_type == "text/plain" else item.content_type
    )
    response = HttpResponse(bytes(item.data), content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(
        not item.content_type.startswith("image/"), item.name
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


def _owned_extension(request, ticket_id, extension_id):
    ticket = _owned_ticket(request, ticket_id)
    extension = ticket.extensions.filter(pk=extension_id).select_related("order").first()
    if extension is None:
        raise Http404
    return ticket, extension


def _extension_pay_confirm(request, ticket, extension, *, warning=""):
    """The confirm step of paying an offer from the balance, as an order's: the days, the
    new end, the amount and what remains after; with the risk of paying twice if declared."""
    available = ledger_selectors.balance_available(account=request.user)
    ends = extension.order.ends_at
    figures = [(_("Extra days"), str(extension.days))]
    if ends:
        figures += [
            (_("Current end"), f"{ends:%Y-%m-%d %H:%M} UTC"),
            (_("New end"), f"{ends + timedelta(days=extension.days):%Y-%m-%d %H:%M} UTC"),
        ]
    figures += [
        (_("Amount to pay"), money(extension.price_usd)),
        (_("Available balance now"), money(available)),
        (_("Balance left afterwards"), money(available - extension.price_usd)),
    ]
    hidden = {"confirm": "yes"}
    if warning:
        hidden["declared_seen"] = "yes"
    title = _("Pay the extension of order %(reference)s from your balance?")
    return render(
        request,
        "confirm.html",
        {
            "title": title % {"reference": extension.order.reference},
            "heading": with_reference(title, reference=extension.order.reference),
            "figures": figures,
            "warning": warning,
            "confirm_label": _("Pay %(amount)s from the balance")
            % {"amount": money(extension.price_usd)},
            "confirm_safe": not warning,
            "cancel_label": _("Back to the ticket, pay nothing"),
            "cancel_url": reverse("support:detail", args=[ticket.pk]),
            "hidden": hidden,
        },
    )


@login_required
@require_POST
def extension_pay_with_balance(request, ticket_id, extension_id):
    """Pay an offer from the balance, always after a confirm step showing the figures (the
    ticket's button only opens it; its form posts confirm=yes)."""
    ticket, extension = _owned_extension(request, ticket_id, extension_id)
    if request.POST.get("confirm") != "yes" and extension.status == ExtensionStatus.OFFERED:
        warning = services.extension_declared_warning(extension)
        return _extension_pay_confirm(request, ticket, extension, warning=warning)
    try:
        extension = services.extension_pay_with_balance(
            extension=extension,
            actor=request.user,
            confirm=request.POST.get("declared_seen") == "yes",
        )
    except services.DeclaredExtensionPaymentPending as exc:
        # Declared after the step was shown: show it again, with the risk this time.
        return _extension_pay_confirm(request, ticket, extension, warning=exc.message)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            _("Extension paid. Order %(reference)s now ends on %(ends)s UTC.")
            % {
                "reference": extension.order.reference,
                "ends": extension.new_ends_at.strftime("%Y-%m-%d %H:%M"),
            },
        )
    return redirect("support:detail", ticket_id=ticket.pk)


@login_required
@require_POST
def extension_pay(request, ticket_id, extension_id):
    ticket, extension = _owned_extension(request, ticket_id, extension_id)
    method_code = request.POST.get("method", "")
    different_payment = request.POST.get("different_payment") == "yes"
    try:
        intent = services.extension_payment_create(
            extension=extension,
            method_code=method_code,
            actor=request.user,
            different_payment=different_payment,
        )
    except payment_services.PaymentsSeen as exc:
        # New instructions only for a different payment: the same step as an order's.
        return render(
            request,
            "payments/different_payment_confirm.html",
            {
                "money_seen": exc.seen,
                "method_code": method_code,
                "action": reverse("support:extension_pay", args=[ticket.pk, extension.pk]),
                "back_url": reverse("support:detail", args=[ticket.pk]),
            },
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect("support:detail", ticket_id=ticket.pk)
    return redirect("payments:detail", intent_id=intent.pk)


def access_request(request):
    """The signed-out "I can't sign in" request. Its answer never says whether the address
    has an account: every accepted request ends on the same page with the same words."""
    if request.user.is_authenticated:
        return redirect("support:new")
    form = AccessRequestForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        try:
            services.access_request_create(
                **form.cleaned_data,
                ip_address=client_ip(request),
                language=translation.get_language(),
            )
        except ServiceError as exc:
            add_service_error(form, exc)
            status = exc.status
        else:
            messages.success(request, services.access_request_received_message())
            return redirect("support:access_sent")
    elif form.is_bound:
        status = 422
    return render(request, "support/access_request.html", {"form": form}, status=status)


def access_sent(request):
    return render(request, "support/access_sent.html")
