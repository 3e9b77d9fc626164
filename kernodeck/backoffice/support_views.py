"""The staff inbox: tickets by status and age, a ticket beside its order, replies, offers.

Only staff holding `support.answer_ticket` get in; other signed-in people get a 403 and
anonymous visitors the sign-in page.
"""

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _

from kernodeck.accounts.permissions import has_permissions, permission_required, require_permission
from kernodeck.core.errors import NotFound, ServiceError
from kernodeck.core.forms import add_service_error
from kernodeck.core.links import escape_text as _escape
from kernodeck.core.links import link_maker
from kernodeck.core.listing import minute_text_maker, timesince_maker
from kernodeck.core.signedpages import signed_page
from kernodeck.orders import selectors as order_selectors
from kernodeck.payments import selectors as payment_selectors
from kernodeck.support import canned, selectors, services
from kernodeck.support.forms import (
    AccessReplyForm,
    DeclineForm,
    OfferForm,
    StaffReplyForm,
    StatusForm,
)
from kernodeck.support.models import (
    STAFF_STATUS_CHOICES,
    STAFF_STATUS_LABELS,
    AccessStatus,
    Kind,
)
from kernodeck.support.views import attachment_response

PERMISSION = "support.answer_ticket"
SET_PASSWORD_PERMISSION = "support.set_account_password"  # noqa: S105 - a permission name


# Staff holding the support permission; a 403 page for anyone else who is signed in.
support_staff_required = permission_required(PERMISSION)


def _ticket(ticket_id):
    try:
        return selectors.ticket_get_for_staff(ticket_id=ticket_id)
    except NotFound:
        raise Http404 from None


@support_staff_required
@signed_page
def inbox(request):
    status = request.GET.get("status", "")
    kind = request.GET.get("kind", "")
    counts = selectors.inbox_counts()
    access_only = kind == selectors.ACCESS_KIND
    # Signed-out "I can't sign in" requests are their own kind: listed above the tickets,
    # or alone when that kind is chosen.
    waiting_since = _waiting_since_maker(timezone.now())
    access_requests = _with_links(
        selectors.access_requests_rows(status=status, limit=200)
        if access_only or not kind
        else [],
        "support_staff:access",
        dict(AccessStatus.choices),
        waiting_since=waiting_since,
    )
    return render(
        request,
        "backoffice/support_inbox.html",
        {
            "tickets": ""
            if access_only
            else _with_staff_status(
                selectors.inbox_rows(status=status, kind=kind, limit=200),
                waiting_since=waiting_since,
            ),
            "access_requests": access_requests,
            "access_only": access_only,
            "statuses": [(code, label, counts[code]) for code, label in STAFF_STATUS_CHOICES],
            "kinds": [*Kind.choices, (selectors.ACCESS_KIND, _("I can't sign in"))],
            "status": status,
            "kind": kind,
        },
    )


def _with_staff_status(tickets, *, waiting_since) -> str:
    """The inbox's tickets (`selectors.inbox_rows`' tuples) as its rows' HTML, made here in
    one pass: the staff's word for each status, the kinds' words, the column labels and
    the link made once for the page, not with a tag, a filter and a lookup per cell; every
    value escaped. Same HTML as the template made ("" for no ticket)."""
    kinds = {value: _escape(text) for value, text in Kind.choices}
    statuses = {value: _escape(text) for value, text in STAFF_STATUS_LABELS.items()}
    case_url = link_maker("support_staff:ticket")
    labels = {
        key: _escape(text)
        for key, text in (
            ("waiting", _("Waiting since")),
            ("subject", _("Subject")),
            ("kind", _("Kind")),
            ("order", _("Order")),
            ("customer", _("Customer")),
            ("status", _("Status")),
            ("messages", _("Messages")),
        )
    }
    rows = []
    for pk, subject, kind, status, last_customer_at, reference, email, message_count in tickets:
        order = f'<code class="ref">{_escape(reference)}</code>' if reference is not None else "—"
        rows.append(
            "<tr>\n"
            f'      <td data-label="{labels["waiting"]}">'
            f"{waiting_since(last_customer_at)}</td>\n"
            f'      <td data-label="{labels["subject"]}"><a href="{_escape(case_url(pk))}">'
            f"{_escape(subject)}</a></td>\n"
            f'      <td data-label="{labels["kind"]}">{kinds.get(kind) or _escape(kind)}</td>\n'
            f'      <td data-label="{labels["order"]}">{order}</td>\n'
            f'      <td data-label="{labels["customer"]}">{_escape(email)}</td>\n'
            f'      <td data-label="{labels["status"]}"><span class="badge">'
            f"{statuses[status]}</span></td>\n"
            f'      <td class="num" data-label="{labels["messages"]}">{message_count}</td>\n'
            "    </tr>"
        )
    return mark_safe("".join(rows))  # noqa: S308 - every value in it is escaped


def _with_links(items, url_name: str, statuses: dict, *, waiting_since) -> str:
    """The sign-in requests (`selectors.access_requests_rows`' tuples) as their rows' HTML,
    made once for the page like the tickets' ("" for none)."""
    case_url = link_maker(url_name)
    statuses = {value: _escape(text) for value, text in statuses.items()}
    labels = {
        key: _escape(text)
        for key, text in (
            ("waiting", _("Waiting since")),
            ("email", _("Email")),
            ("name", _("Name")),
            ("status", _("Status")),
        )
    }
    rows = []
    for pk, email, name, status, created_at in items:
        rows.append(
            "<tr>\n"
            f'      <td data-label="{labels["waiting"]}">'
            f"{waiting_since(created_at)}</td>\n"
            f'      <td data-label="{labels["email"]}"><a href="{_escape(case_url(pk))}">'
            f"{_escape(email)}</a></td>\n"
            f'      <td data-label="{labels["name"]}">{_escape(name)}</td>\n'
            f'      <td data-label="{labels["status"]}"><span class="badge">'
            f"{statuses.get(status) or _escape(status)}</span></td>\n"
            "    </tr>"
        )
    return mark_safe("".join(rows))  # noqa: S308 - every value in it is escaped


def _waiting_since_maker(now):
    """A function writing what `{{ moment|date:"Y-m-d H:i" }} <span …>({{ moment|timesince
    }})</span>` made, at the page's moment `now`, its time zone and words looked up once."""
    since, minute = timesince_maker(now), minute_text_maker()

    def waiting_since(moment) -> str:
        if not moment:
            return ' <span class="muted small">()</span>'
        return f'{minute(moment)} <span class="muted small">({_escape(since(moment))})</span>'

    return waiting_since


@support_staff_required
def ticket_case(request, ticket_id):
    ticket = _ticket(ticket_id)
    form_name = request.POST.get("form") if request.method == "POST" else None
    # Each form has its prefix: two of them have a "status" field (ids stay unique).
    reply_form = StaffReplyForm(request.POST if form_name == "reply" else None, prefix="reply")
    reply_form.fields["canned"].choices = [("", "—")] + [
        (key, str(title)) for key, (title, _text) in canned.CANNED.items()
    ]
    status_form = StatusForm(
        request.POST if form_name == "status" else None,
        initial={"status": ticket.status},
        prefix="status",
    )
    offer_form = OfferForm(request.POST if form_name == "offer" else None, prefix="offer")
    decline_form = DeclineForm(request.POST if form_name == "decline" else None, prefix="decline")
    extension = selectors.extension_open_for(order=ticket.order) if ticket.order else None
    if extension is not None and extension.ticket_id != ticket.pk:
        extension = None
    if request.method == "POST":
        try:
            if form_name == "reply" and reply_form.is_valid():
                services.ticket_message_add(
                    ticket=ticket,
                    author=request.user,
                    body=reply_form.cleaned_data["body"],
                    from_staff=True,
                    status=reply_form.cleaned_data["status"],
                )
                messages.success(request, _("Reply sent; the customer is e-mailed."))
                return redirect("support_staff:ticket", ticket_id=ticket.pk)
            if form_name == "status" and status_form.is_valid():
                services.ticket_status_set(
                    ticket=ticket, status=status_form.cleaned_data["status"], actor=request.user
                )
                return redirect("support_staff:ticket", ticket_id=ticket.pk)
            if form_name == "offer" and offer_form.is_valid() and extension is not None:
                services.extension_offer(
                    extension=extension,
                    days=offer_form.cleaned_data["days"],
                    price_usd=offer_form.cleaned_data["price_usd"] or None,
                    valid_until=offer_form.cleaned_data["valid_until"],
                    actor=request.user,
                )
                messages.success(request, _("Offer sent to the customer."))
                return redirect("support_staff:ticket", ticket_id=ticket.pk)
            if form_name == "decline" and decline_form.is_valid() and extension is not None:
                services.extension_decline(
                    extension=extension,
                    reason=decline_form.cleaned_data["reason"],
                    actor=request.user,
                )
                messages.success(request, _("Extension declined."))
                return redirect("support_staff:ticket", ticket_id=ticket.pk)
        except ServiceError as exc:
            target = {
                "reply": reply_form,
                "status": status_form,
                "offer": offer_form,
                "decline": decline_form,
            }.get(form_name, reply_form)
            add_service_error(target, exc)
    order = ticket.order
    return render(
        request,
        "backoffice/support_ticket.html",
        {
            "ticket": ticket,
            "status_label": STAFF_STATUS_LABELS[ticket.status],
            "thread": selectors.ticket_messages(ticket=ticket),
            "field_rows": selectors.ticket_field_rows(ticket=ticket),
            "extensions": selectors.extensions_of(ticket=ticket),
            "extension": extension,
            "order": order,
            "timeline": order_selectors.order_timeline(order=order, staff=True) if order else [],
            "intents": payment_selectors.intents_for_order(order=order) if order else [],
            "reply_form": reply_form,
            "status_form": status_form,
            "offer_form": offer_form,
            "decline_form": decline_form,
            "default_price": services.extension_default_price(
                order=order, days=extension.requested_days
            )
            if extension is not None and extension.requested_days
            else None,
            "staff_view": True,
        },
        status=422 if request.method == "POST" else 200,
    )


@support_staff_required
def canned_answer(request, ticket_id, key):
    """htmx: the reply box filled with a canned answer for this ticket's order."""
    ticket = _ticket(ticket_id)
    if key not in canned.CANNED:
        raise Http404
    text = canned.canned_text(key, reference=ticket.order.reference if ticket.order else None)
    return HttpResponse(StaffReplyForm(initial={"body": text}, prefix="reply")["body"].as_widget())


@support_staff_required
def attachment(request, ticket_id, attachment_id):
    ticket = _ticket(ticket_id)
    try:
        item = selectors.attachment_get(ticket=ticket, attachment_id=attachment_id)
    except NotFound:
        raise Http404 from None
    return attachment_response(item)


@support_staff_required
def access_case(request, request_id):
    """A signed-out "I can't sign in" request beside the account with its address (if any):
    staff compare what the person remembers with its orders and payments, answer by e-mail,
    and — holding `support.set_account_password` — end every way in and send the link."""
    try:
        access_request = selectors.access_request_get_for_staff(request_id=request_id)
    except NotFound:
        raise Http404 from None
    form_name = request.POST.get("form") if request.method == "POST" else None
    reply_form = AccessReplyForm(request.POST if form_name == "reply" else None)
    password_error = ""
    if request.method == "POST":
        try:
            if form_name == "password":
                require_permission(request, PERMISSION, SET_PASSWORD_PERMISSION)
                services.access_password_link_send(
                    access_request=access_request, actor=request.user
                )
                messages.success(
                    request,
                    _(
                        "The old password no longer works, every session is ended and every "
                        "API token revoked. The account's address is e-mailed a single-use "
                        "link to choose a new password."
                    ),
                )
                return redirect("support_staff:access", request_id=access_request.pk)
            if form_name == "reply" and reply_form.is_valid():
                services.access_reply(
                    access_request=access_request,
                    author=request.user,
                    body=reply_form.cleaned_data["body"],
                    status=reply_form.cleaned_data["status"],
                )
                messages.success(request, _("Reply sent by e-mail."))
                return redirect("support_staff:access", request_id=access_request.pk)
        except ServiceError as exc:
            if form_name == "password":
                password_error = exc.message
            else:
                add_service_error(reply_form, exc)
    account = selectors.account_for_access_request(access_request=access_request)
    return render(
        request,
        "backoffice/support_access.html",
        {
            "access_request": access_request,
            "account": account,
            "evidence": selectors.access_account_evidence(account=account),
            "replies": access_request.replies.select_related("author"),
            "reply_form": reply_form,
            "password_error": password_error,
            "can_set_password": has_permissions(request.user, PERMISSION, SET_PASSWORD_PERMISSION),
            "open": access_request.status != AccessStatus.CLOSED,
        },
        status=422 if request.method == "POST" else 200,
    )
