"""Reads for support: a customer's tickets, the staff inbox, what to redact for an order."""

import functools
import uuid

from django.apps import apps
from django.db import connection
from django.db.models import Count, Prefetch
from django.utils.translation import gettext as _

from kernodeck.accounts.models import User, normalize_email
from kernodeck.core import rows
from kernodeck.core.errors import NotFound
from kernodeck.orders import selectors as order_selectors
from kernodeck.payments.models import PaymentIntent
from kernodeck.provisioning import selectors as provisioning_selectors
from kernodeck.support.models import (
    FIELD_LABELS,
    WHEN_LABELS,
    AccessRequest,
    AccessStatus,
    Attachment,
    Extension,
    ExtensionStatus,
    Kind,
    Message,
    Status,
    Ticket,
)

OPEN_EXTENSION_STATES = [
    ExtensionStatus.REQUESTED,
    ExtensionStatus.OFFERED,
    ExtensionStatus.PAID,
]


def _uuid(value):
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def tickets_for(*, owner):
    return Ticket.objects.filter(owner=owner).select_related("order").order_by("-updated_at")


def ticket_get_for_owner(*, owner, ticket_id) -> Ticket:
    """The owner's ticket, or NotFound — also when it belongs to someone else."""
    pk = _uuid(ticket_id)
    ticket = (
        Ticket.objects.filter(owner=owner, pk=pk).select_related("order", "intent").first()
        if pk
        else None
    )
    if ticket is None:
        raise NotFound(_("No ticket with this number on your account."))
    return ticket


def ticket_get_for_staff(*, ticket_id) -> Ticket:
    pk = _uuid(ticket_id)
    ticket = (
        Ticket.objects.filter(pk=pk).select_related("order", "owner", "intent").first()
        if pk
        else None
    )
    if ticket is None:
        raise NotFound(_("No such ticket."))
    return ticket


def _attachments_listed() -> Prefetch:
    """Attachments as a thread lists them: name, type and size, never their bytes."""
    return Prefetch("attachments", queryset=Attachment.objects.defer("data").order_by("id"))


def ticket_messages(*, ticket):
    return ticket.messages.select_related("author").prefetch_related(_attachments_listed())


def tickets_with_threads(*, owner):
    """The owner's tickets with their messages (`thread`) and extensions (`extension_list`,
    oldest first) prefetched: three queries for any number of tickets."""
    return tickets_for(owner=owner).prefetch_related(
        Prefetch(
            "messages", queryset=Message.objects.order_by("created_at", "id"), to_attr="thread"
        ),
        Prefetch(
            "extensions",
            queryset=Extension.objects.order_by("created_at", "id"),
            to_attr="extension_list",
        ),
    )


def attachment_get(*, ticket, attachment_id):
    attachment = (
        Attachment.objects.filter(message__ticket=ticket, pk=int(attachment_id)).first()
        if str(attachment_id).isascii() and str(attachment_id).isdigit()
        else None
    )
    if attachment is None:
        raise NotFound(_("No such attachment."))
    return attachment


def inbox(*, status: str | None = None, kind: str | None = None):
    """Tickets for staff: open ones first, oldest customer message first (the longest wait)."""
    tickets = Ticket.objects.select_related("owner", "order").annotate(
        message_count=Count("messages")
    )
    if status in Status.values:
        tickets = tickets.filter(status=status)
    else:
        tickets = tickets.exclude(status=Status.CLOSED)
    if kind in Kind.values:
        tickets = tickets.filter(kind=kind)
    return tickets.order_by("last_customer_at")


# The columns of the staff inbox's rows, in the order `inbox_rows` gives them.
INBOX_COLUMNS = (
    "pk",
    "subject",
    "kind",
    "status",
    "last_customer_at",
    "order__reference",
    "owner__email",
    "message_count",
)
_INBOX_TICKET = rows.Columns(
    Ticket, "t", ("id", "subject", "kind", "status", "last_customer_at"), epoch_datetimes=True
)


@functools.cache
def _inbox_statement(vendor: str, by_status: bool, by_kind: bool) -> str:
    """`inbox`'s tickets as INBOX_COLUMNS, for a status (else every one not closed) and a
    kind (else all), written once per case. Names come from the models, never from input."""
    quote = connection.ops.quote_name
    order_table = Ticket._meta.get_field("order").related_model._meta.db_table
    where = "t.status = %s" if by_status else "NOT (t.status = %s)"
    if by_kind:
        where += " AND t.kind = %s"
    return (
        f"SELECT {_INBOX_TICKET.sql()}, o.reference, u.email, "  # noqa: S608
        f"(SELECT COUNT(*) FROM {quote(Message._meta.db_table)} m WHERE m.ticket_id = t.id) "
        f"FROM {quote(Ticket._meta.db_table)} t "
        f"INNER JOIN {quote(User._meta.db_table)} u ON u.id = t.owner_id "
        f"LEFT JOIN {quote(order_table)} o ON o.id = t.order_id "
        f"WHERE {where} ORDER BY t.last_customer_at LIMIT %s"
    )


def inbox_rows(*, status: str | None = None, kind: str | None = None, limit: int) -> list:
    """The first `limit` tickets of `inbox` as tuples of INBOX_COLUMNS: what its page shows,
    without three model instances per ticket, by a fixed statement (the ORM spent more CPU
    building it than PostgreSQL running it) whose moments are read as numbers."""
    by_status, by_kind = status in Status.values, kind in Kind.values
    params = [status if by_status else Status.CLOSED, *([kind] if by_kind else []), limit]
    with rows.prepared_cursor() as cursor:
        cursor.execute(_inbox_statement(connection.vendor, by_status, by_kind), params)
        found = cursor.fetchall()
    convert = _INBOX_TICKET.converter(connection)
    return [(*convert(row[:5]), *row[5:]) for row in found]


@functools.cache
def _inbox_counts_statement(vendor: str) -> str:
    table = connection.ops.quote_name(Ticket._meta.db_table)
    return f"SELECT status, COUNT(*) FROM {table} GROUP BY status"  # noqa: S608


def inbox_counts() -> dict:
    """{status: its number of tickets}, every status present (0 for none)."""
    with rows.prepared_cursor() as cursor:
        cursor.execute(_inbox_counts_statement(connection.vendor))
        found = cursor.fetchall()
    counts = {status: 0 for status in Status.values}
    counts.update(found)
    return counts


def extension_open_for(*, order) -> Extension | None:
    return Extension.objects.filter(order=order, status__in=OPEN_EXTENSION_STATES).first()


def extensions_of(*, ticket):
    return ticket.extensions.select_related("order").order_by("created_at")


def intent_of_order(*, order, intent_id):
    """One of the order's payment instructions, or None (another order's reads as none)."""
    pk = _uuid(intent_id)
    if pk is None or order is None:
        return None
    return order.intents.filter(pk=pk).first()


def known_secrets(*, order) -> list[str]:
    """The rental's own access secret (notebook token, inference key), to be removed from
    anything the customer sends about it. Empty when nothing was delivered or it was
    revoked."""
    if order is None or not apps.is_installed("kernodeck.provisioning"):
        return []

    delivery = provisioning_selectors.latest_delivery(order)
    if delivery is None or not delivery.secret_ciphertext:
        return []
    token = provisioning_selectors.access_view(delivery).token
    return [token] if token else []


def tickets_with_order(*, order):
    return Ticket.objects.filter(order=order).order_by("-created_at")


def order_payments_for(*, owner, reference: str = ""):
    """The customer's order payments, for the payment ticket's picker (one order's if given)."""

    intents = PaymentIntent.objects.filter(owner=owner, order__isnull=False).select_related(
        "order", "method"
    )
    reference = str(reference or "").upper()[:16]
    if reference and reference.isascii() and "\x00" not in reference:
        intents = intents.filter(order__reference=reference)
    return intents.order_by("-created_at")[:50]


def ticket_field_rows(*, ticket) -> list[tuple[str, str]]:
    """The guided form's answers as (label, text) rows, in the form's order."""
    rows = []
    for name, label in FIELD_LABELS.items():
        value = ticket.fields.get(name)
        if value in (None, ""):
            continue
        if name == "when":
            value = WHEN_LABELS.get(value, value)
        elif name == "payment" and ticket.intent is not None:
            value = f"{ticket.intent.method_id} · {ticket.intent.created_at:%Y-%m-%d %H:%M} UTC"
        rows.append((str(label), str(value)))
    return rows


# -- Signed-out "I can't sign in" requests (staff only) --------------------------------

ACCESS_KIND = "access"  # its own kind in the inbox's filter


def access_requests_inbox(*, status: str | None = None):
    """Sign-in help requests for staff, oldest first (the longest wait)."""
    requests = AccessRequest.objects.all()
    if status in AccessStatus.values:
        requests = requests.filter(status=status)
    else:
        requests = requests.exclude(status=AccessStatus.CLOSED)
    return requests.order_by("created_at")


# The columns of the inbox's sign-in requests, in the order `access_requests_rows` gives.
ACCESS_REQUEST_COLUMNS = ("pk", "email", "name", "status", "created_at")
_ACCESS_REQUEST = rows.Columns(
    AccessRequest, "r", ("id", "email", "name", "status", "created_at"), epoch_datetimes=True
)


@functools.cache
def _access_requests_statement(vendor: str, by_status: bool) -> str:
    table = connection.ops.quote_name(AccessRequest._meta.db_table)
    where = "r.status = %s" if by_status else "NOT (r.status = %s)"
    return (
        f"SELECT {_ACCESS_REQUEST.sql()} FROM {table} r "  # noqa: S608
        f"WHERE {where} ORDER BY r.created_at LIMIT %s"
    )


def access_requests_rows(*, status: str | None = None, limit: int) -> list:
    """The first `limit` of `access_requests_inbox` as tuples of ACCESS_REQUEST_COLUMNS
    (what the inbox shows), by a fixed statement like `inbox_rows`."""
    by_status = status in AccessStatus.values
    params = [status if by_status else AccessStatus.CLOSED, limit]
    with rows.prepared_cursor() as cursor:
        cursor.execute(_access_requests_statement(connection.vendor, by_status), params)
        found = cursor.fetchall()
    convert = _ACCESS_REQUEST.converter(connection)
    return [tuple(convert(row)) for row in found]


def access_request_get_for_staff(*, request_id) -> AccessRequest:
    pk = _uuid(request_id)
    found = AccessRequest.objects.filter(pk=pk).first() if pk else None
    if found is None:
        raise NotFound(_("No such request."))
    return found


def account_for_access_request(*, access_request) -> User | None:
    """The account with the request's address, if any — for staff's eyes only."""
    return User.objects.filter(email=normalize_email(access_request.email)).first()


def access_account_evidence(*, account) -> dict:
    """What staff compare with what the person remembers: the account's orders and its
    payments, newest first."""
    if account is None:
        return {"orders": [], "payments": []}
    orders = list(order_selectors.orders_for(owner=account)[:50])
    payments = list(
        PaymentIntent.objects.filter(owner=account)
        .select_related("order", "method")
        .order_by("-created_at")[:50]
    )
    return {"orders": orders, "payments": payments}
