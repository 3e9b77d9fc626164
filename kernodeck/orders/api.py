"""Order endpoints. Every lookup is scoped to the token's account: others' orders are 404."""

from datetime import datetime

from ninja import Router, Schema, Status
from ninja.pagination import paginate

from kernodeck.catalog.api import QuoteIn
from kernodeck.core.money import usd_str
from kernodeck.orders import selectors, services
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments.api import intent_out

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


@router.post("/orders/{reference}/cancel", response=OrderOut)
def order_cancel(request, reference: str):
    """Cancel an unsettled order (409 once it is settled)."""
    order = selectors.order_get_for_owner(owner=request.auth, reference=reference)
    return services.order_cancel(order=order, actor=request.auth)
