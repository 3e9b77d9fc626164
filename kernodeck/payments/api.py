"""Payment endpoints: methods, instructions for an order, declare, abandon."""

from datetime import datetime

from ninja import Field, Router, Schema, Status
from ninja.decorators import decorate_view
from pydantic import StrictBool

from kernodeck.core import idempotency
from kernodeck.core.money import usd_str
from kernodeck.core.schemas import InputSchema
from kernodeck.payments import selectors, services, uris
from kernodeck.payments.methods import METHODS

router = Router(tags=["payments"])


class MethodOut(Schema):
    code: str
    asset: str
    network: str
    available: bool
    reason: str


class IntentOut(Schema):
    id: str
    method: str
    asset: str
    network: str
    address: str
    amount: str
    amount_base_units: str
    amount_usd: str
    rate: str
    rate_source: str
    rate_fetched_at: datetime
    expires_at: datetime
    status: str
    received: str
    received_base_units: str
    received_usd: str
    outstanding: str
    outstanding_base_units: str
    outstanding_usd: str
    declared_at: datetime | None
    abandoned_at: datetime | None
    closed_at: datetime | None
    closed_reason: str
    monitor_until: datetime
    uri: str
    solana_reference: str | None
    order: str | None
    demo_wallet: bool


def intent_out(intent) -> dict:
    decimals = intent.method.decimals
    balance = selectors.intent_balance(intent)
    return {
        "id": str(intent.pk),
        "method": intent.method_id,
        "asset": intent.method.asset,
        "network": intent.method.network,
        "address": intent.address,
        "amount": uris.amount_text(intent.amount_units, decimals),
        "amount_base_units": str(intent.amount_units),
        "amount_usd": usd_str(intent.amount_usd),
        "rate": format(intent.rate_usd_per_coin.normalize(), "f"),
        "rate_source": intent.rate_source,
        "rate_fetched_at": intent.rate_fetched_at,
        "expires_at": intent.expires_at,
        "status": intent.status,
        "received": uris.amount_text(balance["received_base"], decimals),
        "received_base_units": str(balance["received_base"]),
        "received_usd": usd_str(balance["received_usd"]),
        "outstanding": uris.amount_text(balance["outstanding_base"], decimals),
        "outstanding_base_units": str(balance["outstanding_base"]),
        "outstanding_usd": usd_str(balance["outstanding_usd"]),
        "declared_at": intent.declared_at,
        "abandoned_at": intent.abandoned_at,
        "closed_at": intent.closed_at,
        "closed_reason": intent.closed_reason,
        "monitor_until": intent.monitor_until,
        "uri": intent.uri,
        "solana_reference": intent.solana_reference,
        "order": intent.order.reference if intent.order_id else None,
        "demo_wallet": intent.demo_wallet,
    }


class PayIn(InputSchema):
    method: str = Field(
        description="A payment method's code (GET /payment-methods).",
        json_schema_extra={"enum": [spec.code for spec in METHODS]},
    )
    # Strict: only JSON true, as the balance's `confirm`.
    different_payment: StrictBool = Field(
        False,
        description=(
            "Money already seen on chain for this and still being checked refuses new "
            "instructions (409, code `payments_seen`); true says this is a different "
            "payment, not the same one sent again."
        ),
    )


@router.get("/payment-methods", auth=None, response=list[MethodOut])
def payment_methods(request):
    """Every method; `available` is true exactly when it gives instructions right now (the
    decision instruction creation takes), and `reason` says why not."""
    return [
        {
            "code": item.method.code,
            "asset": item.method.asset,
            "network": item.method.network,
            "available": item.available,
            "reason": item.reason,
        }
        for item in selectors.methods_overview()
    ]


@router.post(
    "/orders/{reference}/payments",
    response={201: IntentOut},
    openapi_extra=idempotency.OPENAPI,
)
@decorate_view(idempotency.idempotent)
def order_pay(request, reference: str, payload: PayIn):
    """New payment instructions for an order (409 if it already has live ones, or, code
    `payments_seen`, while money seen for it is checked and `different_payment` is not
    true)."""
    intent = services.payment_intent_create_for_reference(
        owner=request.auth,
        reference=reference,
        method_code=payload.method,
        actor=request.auth,
        different_payment=payload.different_payment,
    )
    # Built, not validated: ninja validates a dict against IntentOut field by field, and
    # only dumps an IntentOut it is given (tests/api/test_api_payments_render.py checks
    # both give the same bytes).
    return Status(201, IntentOut.model_construct(**intent_out(intent)))


@router.get("/payments/{intent_id}", response=IntentOut)
def payment_detail(request, intent_id: str):
    return intent_out(selectors.intent_get_for_owner(owner=request.auth, intent_id=intent_id))


@router.post("/payments/{intent_id}/declare", response=IntentOut)
def payment_declare(request, intent_id: str):
    """“I have paid”: recorded, verified on the blockchain later. Moves no money."""
    intent = selectors.intent_get_for_owner(owner=request.auth, intent_id=intent_id)
    return intent_out(services.payment_intent_declare(intent=intent, actor=request.auth))


@router.post("/payments/{intent_id}/cancel", response=IntentOut)
def payment_cancel(request, intent_id: str):
    """Abandon instructions to choose another method; the address stays watched."""
    intent = selectors.intent_get_for_owner(owner=request.auth, intent_id=intent_id)
    return intent_out(services.payment_intent_abandon(intent=intent, actor=request.auth))
