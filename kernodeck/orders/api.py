"""Order endpoints. Every lookup is scoped to the token's account: others' orders are 404."""

from datetime import datetime

from ninja import Router, Schema, Status
from ninja.pagination import paginate

from kernodeck.catalog.api import QuoteIn
from kernodeck.core.money import usd_str
from kernodeck.orders import selectors, services
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments.api import intent_out
from kernodeck.provisioning import selectors as provisioning_selectors

router = Router(tags=["orders"])


class OrderOut(Schema):
    reference: str
    offer: str
    days: int
    units: int
    gpus: int
    preparation: str
    unit_price_usd: str
    total_usd: str
    payment_state: str
    rental_state: str
    starts_at: datetime | None
    ends_at: datetime | None
    created_at: datetime
    hold_until: datetime
    rental_reason: str
    access: dict | None
    payments: list[dict]

    @staticmethod
    def resolve_offer(obj):
        return obj.offer_slug

    @staticmethod
    def resolve_unit_price_usd(obj):
        return usd_str(obj.unit_price_usd)

    @staticmethod
    def resolve_total_usd(obj):
        return usd_str(obj.total_usd)

    @staticmethod
    def resolve_rental_reason(obj):
        """Why a rental failed or is suspended, as the order file says; else empty."""
        return provisioning_selectors.rental_overview_reason(order=obj)

    @staticmethod
    def resolve_access(obj):
        """{host, port, user, ssh_command, url, token} for the owner while active."""
        access = provisioning_selectors.access_for_owner(order=obj)
        if access is None:
            return None
        return {
            "host": access.host,
            "port": access.port,
            "user": access.user,
            "ssh_command": access.ssh_command,
            "url": access.url or None,
            "token": access.token or None,
        }

    @staticmethod
    def resolve_payments(obj):
        return [intent_out(intent) for intent in payment_selectors.intents_loaded(obj)]


@router.post("/orders", response={201: OrderOut})
def order_create(request, payload: QuoteIn):
    """Register an order for a configuration; its units are held while it awaits payment."""
    order = services.order_register(owner=request.auth, **payload.dict())
    return Status(201, order)


@router.get("/orders", response=list[OrderOut])
@paginate
def order_list(request):
    """Your orders, newest first (`limit`, `offset`)."""
    return selectors.orders_with_payments_for(owner=request.auth)


@router.get("/orders/{reference}", response=OrderOut)
def order_detail(request, reference: str):
    return selectors.order_get_for_owner(
        owner=request.auth, reference=reference, with_payments=True
    )


@router.get("/orders/{reference}/calendar.ics", response={200: None})
def order_calendar(request, reference: str):
    """The rental period as an iCalendar event (add it to your calendar)."""
    from django.http import HttpResponse

    order = selectors.order_get_for_owner(owner=request.auth, reference=reference)
    body = provisioning_selectors.rental_calendar(order=order)
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{order.reference}.ics"'
    return response


@router.post("/orders/{reference}/cancel", response=OrderOut)
def order_cancel(request, reference: str):
    """Cancel an unsettled order (409 once it is settled)."""
    order = selectors.order_get_for_owner(owner=request.auth, reference=reference)
    return services.order_cancel(order=order, actor=request.auth)
