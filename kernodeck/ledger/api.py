"""Balance endpoints: balance, top-ups, paying an order from the balance."""

from datetime import datetime

from ninja import Field, Router, Schema, Status
from ninja.decorators import decorate_view
from ninja.pagination import paginate
from pydantic import StrictBool, field_validator
from pydantic_core import PydanticCustomError

from kernodeck.core import idempotency
from kernodeck.core.money import usd_str
from kernodeck.core.schemas import InputSchema
from kernodeck.ledger import selectors, services
from kernodeck.ledger.models import TOPUP_AMOUNTS
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders.api import OrderOut, order_detail_out
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments.api import IntentOut, intent_out
from kernodeck.payments.methods import METHODS
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups

router = Router(tags=["balance"])


class BalanceOut(Schema):
    available_usd: str
    pending_topups_usd: str


class TopUpIn(InputSchema):
    amount_usd: str = Field(
        description="Exactly one of the top-up amounts, in USD.",
        json_schema_extra={"enum": [str(amount) for amount in TOPUP_AMOUNTS]},
    )
    method: str = Field(
        description="A payment method's code (GET /payment-methods).",
        json_schema_extra={"enum": [spec.code for spec in METHODS]},
    )

    @field_validator("amount_usd")
    @classmethod
    def _one_of_the_amounts(cls, value: str) -> str:
        # Spelled exactly as the enum: "1e2" or "100.000" are the same number, but not
        # what the document promises to accept.
        if value not in {str(amount) for amount in TOPUP_AMOUNTS}:
            raise PydanticCustomError("topup_amount", services.topup_amounts_message())
        return value


class TopUpOut(Schema):
    id: str
    amount_usd: str
    status: str
    created_at: datetime
    credited_at: datetime | None
    payment: IntentOut | None

    @staticmethod
    def resolve_id(obj):
        return str(obj.pk)

    @staticmethod
    def resolve_amount_usd(obj):
        return usd_str(obj.amount_usd)

    @staticmethod
    def resolve_payment(obj):
        """The newest instructions: prefetched for a list (topups_for), else one query."""
        intent = next(iter(payment_selectors.intents_loaded(obj)), None)
        return intent_out(intent) if intent else None


class PayWithBalanceIn(InputSchema):
    # Strict: only JSON true confirms paying after "I have paid", not "yes" or 1.
    confirm: StrictBool = False


class InsufficientOut(Schema):
    """A refused payment from the balance: why, and, when the balance is short, by how much
    (the other refusals, a crypto payment seen or "I have paid" unconfirmed, carry no
    amounts)."""

    detail: str
    available_usd: str | None = None
    needed_usd: str | None = None


@router.get("/balance", response=BalanceOut)
def balance(request):
    """Available balance; pending top-ups are shown apart and are not spendable."""
    return {
        "available_usd": usd_str(selectors.balance_available(account=request.auth)),
        "pending_topups_usd": usd_str(selectors.topups_pending_usd(account=request.auth)),
    }


@router.post(
    "/topups",
    response={201: TopUpOut},
    openapi_extra=idempotency.OPENAPI,
)
@decorate_view(idempotency.idempotent)
def topup_create(request, payload: TopUpIn):
    """A top-up of exactly 100, 500, 2000 or 10000 USD, with its payment instructions."""
    topup, _intent = settlement_topups.topup_create(
        account=request.auth, amount_usd=payload.amount_usd, method_code=payload.method
    )
    return Status(201, topup)


@router.get("/topups", response=list[TopUpOut])
@paginate
def topup_list(request):
    """Your top-ups, newest first (`limit`, `offset`), each with its newest instructions."""
    return selectors.topups_for(account=request.auth)


@router.post(
    "/orders/{reference}/pay-with-balance",
    response={200: OrderOut, 409: InsufficientOut},
    openapi_extra=idempotency.OPENAPI,
)
@decorate_view(idempotency.idempotent)
def pay_with_balance(request, reference: str, payload: PayWithBalanceIn | None = None):
    """Charge the whole total to the available balance and settle the order (once).

    409 while a crypto payment for the order was seen; after "I have paid" on its
    instructions, 409 unless the body is `{"confirm": true}` (the transfer may still come).
    """
    order = order_selectors.order_get_for_owner(owner=request.auth, reference=reference)
    confirm = bool(payload and payload.confirm)
    try:
        order, _entry = settlement_orders.order_pay_with_balance(
            order=order, actor=request.auth, confirm=confirm
        )
    except services.InsufficientBalance as exc:
        return Status(
            409,
            {
                "detail": exc.message,
                "available_usd": usd_str(exc.available),
                "needed_usd": usd_str(exc.needed),
            },
        )
    return order_detail_out(order)
