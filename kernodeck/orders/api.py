"""Order endpoints. Every lookup is scoped to the token's account: others' orders are 404."""

import functools
import json
from datetime import UTC, datetime

from django.http import HttpResponse
from ninja import Query, Router, Schema, Status
from ninja.decorators import decorate_view
from ninja.responses import NinjaJSONEncoder

from kernodeck.catalog.api import QuoteIn
from kernodeck.core import idempotency
from kernodeck.core.money import usd_str
from kernodeck.core.pagination import BoundedLimitOffsetPagination
from kernodeck.orders import selectors, services
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments.api import intent_out
from kernodeck.provisioning import selectors as provisioning_selectors
from kernodeck.settlement import orders as settlement_orders

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


class PagedOrderOut(Schema):
    items: list[OrderOut]
    count: int


def access_out(access) -> dict | None:
    """{host, port, user, ssh_command, url, token, tunnel_command} for the owner while
    active (the tunnel goes to the service's socket on the node where it has one)."""
    if access is None:
        return None
    return {
        "host": access.host,
        "port": access.port,
        "user": access.user,
        "ssh_command": access.ssh_command,
        "nodes": [
            {
                "host": node.host,
                "port": node.port,
                "user": node.user,
                "gpus": list(node.gpus),
                "ssh_command": node.ssh_command,
            }
            for node in access.nodes
        ],
        "url": access.url or None,
        "token": access.token or None,
        "tunnel_command": access.tunnel_command or None,
    }


def order_out(order, *, access, intents) -> dict:
    """An order as OrderOut, given its owner's access (`access_for_owner`) and its payment
    instructions, newest first."""
    # Why a rental failed or is suspended, as the order file says; else empty.
    reason = provisioning_selectors.rental_overview_reason(order=order)
    return _order_fields(
        order, access=access, intents=intents, reason=reason, moment=_as_is, usd=usd_str
    )


def _as_is(moment):
    return moment


def _order_fields(order, *, access, intents, reason: str, moment, usd) -> dict:
    """OrderOut's fields of `order` (a model instance or an `OrderRow`), its moments and
    prices written by `moment` and `usd`."""

    def when(value):
        return None if value is None else moment(value)

    return {
        "reference": order.reference,
        "offer": order.offer_slug,
        "days": order.days,
        "units": order.units,
        "gpus": order.gpus,
        "preparation": order.preparation,
        "unit_price_usd": usd(order.unit_price_usd),
        "total_usd": usd(order.total_usd),
        "payment_state": order.payment_state,
        "rental_state": order.rental_state,
        "starts_at": when(order.starts_at),
        "ends_at": when(order.ends_at),
        "created_at": when(order.created_at),
        "hold_until": when(order.hold_until),
        "rental_reason": reason,
        "access": access_out(access),
        "payments": [intent_out(intent) for intent in intents],
    }


def order_detail_out(order) -> dict:
    """One order as OrderOut: its access and instructions read for it (the instructions
    prefetched when it was read `with_payments`, else one query)."""
    return order_out(
        order,
        access=provisioning_selectors.access_for_owner(order=order),
        intents=payment_selectors.intents_loaded(order),
    )


@router.post(
    "/orders",
    response={201: OrderOut},
    openapi_extra=idempotency.OPENAPI,
)
@decorate_view(idempotency.idempotent)
def order_create(request, payload: QuoteIn):
    """Register an order for a configuration; its units are held while it awaits payment."""
    order = services.order_register(owner=request.auth, **payload.dict())
    return Status(201, order_detail_out(order))


def _json_time(moment: datetime) -> str:
    """A moment as the API's JSON encoder writes it (DjangoJSONEncoder: milliseconds, "Z"
    for UTC), so the list can be dumped without calling the encoder back for each one."""
    text = moment.isoformat()
    if moment.microsecond:
        text = text[:23] + text[26:]
    if text.endswith("+00:00"):
        text = text[:-6] + "Z"
    return text


def _dumps(value) -> str:
    return json.dumps(value, cls=NinjaJSONEncoder)


# A string as json.dumps writes it (ensure_ascii, quotes included): its C function.
_text = json.encoder.encode_basestring_ascii


@functools.lru_cache(maxsize=4096)
def _usd_json(value) -> str:
    # A page's prices repeat (one offer, a few durations): each written once per process.
    return _text(usd_str(value))


def _moment_json(value) -> str:
    """`_json_time` in JSON, quotes included; for the database's moments (UTC) straight
    from their ISO text."""
    if value is None:
        return "null"
    if value.tzinfo is UTC:  # 2026-03-01T12:00:00[.123456]+00:00
        return (
            f'"{value.isoformat()[:23]}Z"' if value.microsecond else f'"{value.isoformat()[:19]}Z"'
        )
    return _text(_json_time(value))


# One order of the list as its JSON text: OrderOut's fields in OrderOut's order, each
# written as json.dumps(..., cls=NinjaJSONEncoder) writes the value `_order_fields` gives
# it (tests/api/test_api_order_list.py compares the bytes with what PagedOrderOut renders,
# and checks these names against the schema's).
ORDER_ROW_JSON_FIELDS = (
    "reference",
    "offer",
    "days",
    "units",
    "gpus",
    "preparation",
    "unit_price_usd",
    "total_usd",
    "payment_state",
    "rental_state",
    "starts_at",
    "ends_at",
    "created_at",
    "hold_until",
    "rental_reason",
    "access",
    "payments",
)
_ORDER_ROW_JSON = "{" + ", ".join(f'"{name}": %s' for name in ORDER_ROW_JSON_FIELDS) + "}"


def order_row_json(order, *, access, intents, reason: str) -> str:
    """`order_out` of an `orders.selectors.OrderRow` written straight as its JSON text
    (the bytes json.dumps writes of the dict, without building the dict), given its
    reason (`rental_overview_reasons_by_order`)."""
    return _ORDER_ROW_JSON % (
        _text(order.reference),
        _text(order.offer_slug),
        order.days,
        order.units,
        order.gpus,
        _text(order.preparation),
        _usd_json(order.unit_price_usd),
        _usd_json(order.total_usd),
        _text(order.payment_state),
        _text(order.rental_state),
        _moment_json(order.starts_at),
        _moment_json(order.ends_at),
        _moment_json(order.created_at),
        _moment_json(order.hold_until),
        _text(reason),
        "null" if access is None else _dumps(access_out(access)),
        _dumps([intent_out(intent) for intent in intents]) if intents else "[]",
    )


@router.get("/orders", response=PagedOrderOut)
def order_list(request, page: Query[BoundedLimitOffsetPagination.Input]):
    """Your orders, newest first (`limit`, `offset`)."""
    orders, count = selectors.order_rows_page_for(
        owner=request.auth, offset=page.offset, limit=page.limit
    )
    access = provisioning_selectors.access_for_owner_by_order(orders)
    reasons = provisioning_selectors.rental_overview_reasons_by_order(orders)
    intents = payment_selectors.intents_by_order(orders)
    items = ", ".join(
        [
            order_row_json(
                order, access=access[order.id], intents=intents[order.id], reason=reasons[order.id]
            )
            for order in orders
        ]
    )
    # Written as PagedOrderOut renders it (json.dumps of {"items": [...], "count": n}),
    # without validating every order of every page again nor building its dict.
    return HttpResponse(
        f'{{"items": [{items}], "count": {int(count)}}}'.encode(),
        content_type="application/json; charset=utf-8",
    )


@router.get("/orders/{reference}", response=OrderOut)
def order_detail(request, reference: str):
    return order_detail_out(
        selectors.order_get_for_owner(owner=request.auth, reference=reference, with_payments=True)
    )


@router.get("/orders/{reference}/calendar.ics", response={200: None})
def order_calendar(request, reference: str):
    """The rental period as an iCalendar event (add it to your calendar)."""
    order = selectors.order_get_for_owner(owner=request.auth, reference=reference)
    body = provisioning_selectors.rental_calendar(order=order)
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{order.reference}.ics"'
    return response


class GpuSampleOut(Schema):
    at: datetime
    utilization_pct: float | None
    memory_used_mib: int | None
    memory_total_mib: int | None
    temperature_c: float | None
    power_w: float | None


class GpuUseOut(Schema):
    machine: int
    index: int
    current: GpuSampleOut | None
    stale: bool
    samples: list[GpuSampleOut]


class OrderGpusOut(Schema):
    reference: str
    window_seconds: int
    gpus: list[GpuUseOut]


@router.get("/orders/{reference}/gpus", response=OrderGpusOut)
def order_gpus(request, reference: str):
    """The rental's GPUs: each one's use now (`current`) and over the last hour (`samples`,
    oldest first, about one a minute): utilisation %, memory in MiB, °C and W (null where the
    GPU does not report it). `index` is the GPU's index on its machine (CUDA's); `machine`
    numbers the rental's machines from 1 (always 1 on one machine). `stale` when no sample
    came for a few minutes. Empty before the access is delivered and once it is over."""
    order = selectors.order_get_for_owner(owner=request.auth, reference=reference)
    gpus = provisioning_selectors.rental_gpu_use(order=order)
    return {
        "reference": order.reference,
        "window_seconds": int(provisioning_selectors.GPU_USE_WINDOW.total_seconds()),
        "gpus": [
            {
                "machine": gpu.machine,
                "index": gpu.index,
                "current": gpu.latest,
                "stale": gpu.stale,
                "samples": gpu.samples,
            }
            for gpu in gpus
        ],
    }


@router.post("/orders/{reference}/cancel", response=OrderOut)
def order_cancel(request, reference: str):
    """Cancel an unsettled order (409 once it is settled)."""
    order = selectors.order_get_for_owner(owner=request.auth, reference=reference)
    return order_detail_out(settlement_orders.order_cancel(order=order, actor=request.auth))
