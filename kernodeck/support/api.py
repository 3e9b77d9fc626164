"""Support endpoints: open a ticket, list and read them, add a message, pay an offer."""

from datetime import datetime
from typing import Any

from ninja import Field, Router, Schema, Status
from ninja.decorators import decorate_view

from kernodeck.core import idempotency
from kernodeck.core.errors import NotFound
from kernodeck.core.money import usd_str
from kernodeck.core.schemas import InputSchema
from kernodeck.ledger.api import PayWithBalanceIn
from kernodeck.payments.api import IntentOut, PayIn, intent_out
from kernodeck.support import selectors, services
from kernodeck.support.models import Kind

router = Router(tags=["support"])


class TicketIn(InputSchema):
    kind: str = Field(json_schema_extra={"enum": list(Kind.values)})
    order: str | None = None
    subject: str
    body: str
    fields: dict[str, Any] | None = None


class MessageIn(InputSchema):
    body: str


class RemovedOut(Schema):
    kind: str
    label: str
    count: int


class MessageOut(Schema):
    author: str
    body: str
    created_at: datetime
    redactions: list[RemovedOut]


class ExtensionOut(Schema):
    id: int
    status: str
    requested_days: int | None
    days: int | None
    price_usd: str | None
    valid_until: datetime | None
    decline_reason: str
    new_ends_at: datetime | None


class TicketOut(Schema):
    id: str
    kind: str
    order: str | None
    status: str
    subject: str
    fields: dict[str, Any]
    created_at: datetime
    messages: list[MessageOut]
    redactions: list[RemovedOut]
    extension: ExtensionOut | None


def _extension_out(extension) -> dict | None:
    if extension is None:
        return None
    return {
        "id": extension.pk,
        "status": extension.status,
        "requested_days": extension.requested_days,
        "days": extension.days,
        "price_usd": usd_str(extension.price_usd) if extension.price_usd is not None else None,
        "valid_until": extension.valid_until,
        "decline_reason": extension.decline_reason,
        "new_ends_at": extension.new_ends_at,
    }


def ticket_out(ticket) -> dict:
    """A ticket with its thread; `redactions` is what was removed from its latest customer
    message (each message also carries its own)."""
    thread = getattr(ticket, "thread", None)  # prefetched when listed
    messages = thread if thread is not None else list(selectors.ticket_messages(ticket=ticket))
    listed = getattr(ticket, "extension_list", None)
    if listed is not None:
        extension = listed[-1] if listed else None
    else:
        extension = selectors.extensions_of(ticket=ticket).last()
    latest_customer = next((m for m in reversed(messages) if not m.from_staff), None)
    return {
        "id": str(ticket.pk),
        "kind": ticket.kind,
        "order": ticket.order.reference if ticket.order_id else None,
        "status": ticket.status,
        "subject": ticket.subject,
        "fields": ticket.fields,
        "created_at": ticket.created_at,
        "messages": [
            {
                "author": "support" if m.from_staff else "customer",
                "body": m.body,
                "created_at": m.created_at,
                "redactions": m.redactions,
            }
            for m in messages
        ],
        "redactions": latest_customer.redactions if latest_customer else [],
        "extension": _extension_out(extension),
    }


@router.post("/tickets", response={201: TicketOut})
def ticket_create(request, payload: TicketIn):
    """Open a ticket. Secrets in the texts are removed before storage (see `redactions`)."""
    ticket = services.ticket_create(
        owner=request.auth,
        kind=payload.kind,
        order=payload.order,
        subject=payload.subject,
        body=payload.body,
        fields=payload.fields,
    )
    return Status(201, ticket_out(ticket))


@router.get("/tickets", response=list[TicketOut])
def ticket_list(request):
    return [ticket_out(t) for t in selectors.tickets_with_threads(owner=request.auth)[:100]]


@router.get("/tickets/{ticket_id}", response=TicketOut)
def ticket_get(request, ticket_id: str):
    return ticket_out(selectors.ticket_get_for_owner(owner=request.auth, ticket_id=ticket_id))


@router.post("/tickets/{ticket_id}/messages", response={201: TicketOut})
def ticket_message(request, ticket_id: str, payload: MessageIn):
    ticket = selectors.ticket_get_for_owner(owner=request.auth, ticket_id=ticket_id)
    services.ticket_message_add(ticket=ticket, author=request.auth, body=payload.body)
    ticket.refresh_from_db()
    return Status(201, ticket_out(ticket))


def _offer(request, ticket_id):
    ticket = selectors.ticket_get_for_owner(owner=request.auth, ticket_id=ticket_id)
    extension = selectors.extensions_of(ticket=ticket).last()
    if extension is None:
        raise NotFound("This ticket has no extension offer.")
    return ticket, extension


@router.post(
    "/tickets/{ticket_id}/extension/pay-with-balance",
    response=TicketOut,
    openapi_extra=idempotency.OPENAPI,
)
@decorate_view(idempotency.idempotent)
def extension_pay_with_balance(request, ticket_id: str, payload: PayWithBalanceIn | None = None):
    """Pay the ticket's extension offer from the balance; the rental's end moves at once.

    After "I have paid" on the offer's instructions, 409 unless the body is
    `{"confirm": true}` (the transfer may still come), as for an order."""
    ticket, extension = _offer(request, ticket_id)
    services.extension_pay_with_balance(
        extension=extension, actor=request.auth, confirm=bool(payload and payload.confirm)
    )
    ticket.refresh_from_db()
    return ticket_out(ticket)


@router.post(
    "/tickets/{ticket_id}/extension/payments",
    response={201: IntentOut},
    openapi_extra=idempotency.OPENAPI,
)
@decorate_view(idempotency.idempotent)
def extension_pay(request, ticket_id: str, payload: PayIn):
    """Crypto instructions for the ticket's extension offer."""
    _ticket, extension = _offer(request, ticket_id)
    intent = services.extension_payment_create(
        extension=extension,
        method_code=payload.method,
        actor=request.auth,
        different_payment=payload.different_payment,
    )
    return Status(201, intent_out(intent))
