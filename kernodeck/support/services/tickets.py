"""Tickets: opening one with its first message, adding messages, moving its status.

Every text is cleaned by `intake` before it is stored; what was removed is stored beside it
so the customer (and staff) can see that something was. Staff replies e-mail the customer
after commit. An extension ticket also records its request; what staff then do with that
request lives in `extensions`.
"""

from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.services import audit_record
from kernodeck.notifications import services as notification_services
from kernodeck.support import selectors
from kernodeck.support.models import (
    KINDS_NEEDING_ORDER,
    STATUS_TRANSITIONS,
    Attachment,
    Extension,
    Kind,
    Message,
    Status,
    Ticket,
)
from kernodeck.support.services.intake import (
    BODY_MAX,
    SUBJECT_MAX,
    _attachments_prepare,
    _Cleaner,
    _fields,
    _kind,
    _owned_order,
    _text,
)


def _extension_in_progress(order) -> str:
    return _(
        "Order %(reference)s already has an extension request in progress; "
        "continue in that ticket."
    ) % {"reference": order.reference}


def ticket_create(
    *,
    owner,
    kind: str,
    subject: str,
    body: str,
    order: str | None = None,
    fields: dict | None = None,
    attachments=(),
) -> Ticket:
    """Open a ticket with its first message. Texts are cleaned of secrets before storage.

    Extension and payment tickets need one of the customer's own orders; an extension
    ticket also records the request (`Extension`, status requested) that staff answer.
    """
    kind = _kind(kind)
    subject = _text(subject, field="subject", limit=SUBJECT_MAX, required=True)
    body = _text(body, field="body", limit=BODY_MAX, required=True)
    order_obj = None
    if order:
        order_obj = _owned_order(owner=owner, reference=order)
    elif kind in KINDS_NEEDING_ORDER:
        raise InvalidInput(_("Choose the order this is about."), field="order")
    clean = _Cleaner(selectors.known_secrets(order=order_obj))
    stored, extra = _fields(kind=kind, raw=fields, order=order_obj, owner=owner, clean=clean)
    subject = clean(subject)
    body = clean(body)
    prepared = _attachments_prepare(attachments, clean)
    now = clock.now()
    with transaction.atomic():
        if kind == Kind.EXTENSION and selectors.extension_open_for(order=order_obj):
            raise Conflict(_extension_in_progress(order_obj))
        ticket = Ticket.objects.create(
            owner=owner,
            kind=kind,
            order=order_obj,
            intent=extra.get("intent"),
            subject=subject,
            fields=stored,
            status=Status.OPEN,
            created_at=now,
            last_customer_at=now,
            updated_at=now,
        )
        report = clean.report()
        message = Message.objects.create(
            ticket=ticket, author=owner, body=body, redactions=report, created_at=now
        )
        for item in prepared:
            Attachment.objects.create(message=message, created_at=now, **item)
        if kind == Kind.EXTENSION:
            try:
                # A request opened at the same moment passed the check above too; the
                # unique constraint (one open extension per order) decides, and the loser
                # is told why instead of failing. The savepoint keeps the error contained;
                # the Conflict rolls the whole ticket back.
                with transaction.atomic():
                    Extension.objects.create(
                        ticket=ticket,
                        order=order_obj,
                        requested_days=extra.get("requested_days"),
                        deadline=extra.get("deadline"),
                        created_at=now,
                    )
            except IntegrityError:
                raise Conflict(_extension_in_progress(order_obj)) from None
        audit_record(
            action="support.ticket_opened",
            target=ticket,
            actor=owner,
            after={"kind": kind, "order": order_obj.reference if order_obj else None},
            data={"removed": {r["kind"]: r["count"] for r in report}},
        )
        if order_obj is not None:
            audit_record(
                action="order.ticket_opened",
                target=order_obj,
                actor=owner,
                after={"ticket": str(ticket.pk), "kind": kind},
            )
    ticket.new_message = message
    return ticket


def ticket_message_add(
    *, ticket: Ticket, author, body: str, attachments=(), from_staff: bool = False, status=None
) -> Message:
    """Add a message to a thread and move the ticket's status.

    A customer's message (re)opens the ticket; a staff reply marks it answered (or
    "waiting for you" when staff ask for something) and e-mails the customer.
    """
    body = _text(body, field="body", limit=BODY_MAX, required=True)
    clean = _Cleaner(selectors.known_secrets(order=ticket.order))
    body = clean(body)
    prepared = _attachments_prepare(attachments, clean)
    if from_staff:
        status = status or Status.ANSWERED
        if status not in {Status.ANSWERED, Status.WAITING, Status.CLOSED}:
            raise InvalidInput(_("Choose the status after this reply."), field="status")
    else:
        status = Status.OPEN
    now = clock.now()
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update(no_key=True).get(pk=ticket.pk)
        message = Message.objects.create(
            ticket=ticket,
            author=author,
            from_staff=from_staff,
            body=body,
            redactions=clean.report(),
            created_at=now,
        )
        for item in prepared:
            Attachment.objects.create(message=message, created_at=now, **item)
        before = ticket.status
        ticket.status = status
        ticket.updated_at = now
        if from_staff:
            ticket.last_staff_at = now
        else:
            ticket.last_customer_at = now
        ticket.save(update_fields=["status", "updated_at", "last_staff_at", "last_customer_at"])
        audit_record(
            action="support.staff_replied" if from_staff else "support.customer_wrote",
            target=ticket,
            actor=author,
            before={"status": before},
            after={"status": status, "message": message.pk},
        )
        if from_staff:
            # A link only: the reply itself stays behind the sign-in. Sent after commit.
            notification_services.email_enqueue(
                account=ticket.owner,
                event="ticket_reply",
                context={
                    "ticket_id": str(ticket.pk)[:8],
                    "ticket_subject": ticket.subject,
                    "ticket_path": reverse("support:detail", args=[ticket.pk]),
                },
                dedupe_key=f"ticket_reply:{message.pk}",
            )
    return message


def ticket_status_set(*, ticket: Ticket, status: str, actor) -> Ticket:
    """Staff move a ticket (waiting for you, answered, closed, reopened)."""
    if status not in Status.values:
        raise InvalidInput(_("Unknown status."), field="status")
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update(no_key=True).get(pk=ticket.pk)
        if ticket.status == status:
            return ticket
        if status not in STATUS_TRANSITIONS[ticket.status]:
            raise Conflict(
                _("A %(current)s ticket cannot become %(new)s.")
                % {"current": ticket.get_status_display(), "new": Status(status).label}
            )
        before = ticket.status
        ticket.status = status
        ticket.updated_at = clock.now()
        ticket.save(update_fields=["status", "updated_at"])
        audit_record(
            action="support.status_changed",
            target=ticket,
            actor=actor,
            before={"status": before},
            after={"status": status},
        )
    return ticket
