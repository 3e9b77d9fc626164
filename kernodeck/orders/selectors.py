import functools
import operator
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from django.db import connection
from django.db.models import Prefetch
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.catalog.quotes import Quote, quote
from kernodeck.core import rows
from kernodeck.core.errors import Conflict, NotFound
from kernodeck.core.selectors import audit_trail_of
from kernodeck.orders import capacity, timeline
from kernodeck.orders.models import Order, PaymentState


def intents_prefetch(model) -> Prefetch:
    """For lists of orders or top-ups (`model`): each one's payment instructions, newest
    first, with their method, in one query. The instructions are the payments domain's rows,
    reached through their foreign key to `model`, so no domain below payments imports it."""
    intents = model.intents.rel.related_model.objects.select_related("method")
    return Prefetch("intents", queryset=intents.order_by("-created_at"))


def not_enough_units_message(*, available: int, gpu_model: str) -> str:
    if available == 0:
        return _("No %(gpu)s units are free right now. Try another GPU or come back later.") % {
            "gpu": gpu_model
        }
    return ngettext(
        "Only %(n)d %(gpu)s unit is free right now.",
        "Only %(n)d %(gpu)s units are free right now.",
        available,
    ) % {"n": available, "gpu": gpu_model}


def _within_units(result: Quote, *, available: int) -> Quote:
    if result.units > available:
        raise Conflict(
            not_enough_units_message(available=available, gpu_model=result.gpu_model),
            field="units",
        )
    return result


def offer_quote(*, offer_obj, days, units, preparation) -> Quote:
    """Quote a configuration of a loaded offer and check the fleet has the units free.

    Raises InvalidInput (bad input) or Conflict (not enough units), naming the field.
    """
    result = quote(
        catalog_selectors.price_sheet(offer_obj), days=days, units=units, preparation=preparation
    )
    return _within_units(result, available=capacity.units_free(offer=offer_obj))


def listing_quote(*, listing, days, units, preparation) -> Quote:
    """offer_quote from a catalog listing (its prices and units free, as the catalog cache
    holds them): no query. For pages that show a quote; registering counts live."""
    sheet = catalog_selectors.price_sheet(listing.offer, listing.prices)
    result = quote(sheet, days=days, units=units, preparation=preparation)
    return _within_units(result, available=listing.units_available)


def configuration_quote(*, offer, days, units, preparation) -> Quote:
    """Quote a configuration given by the offer's slug (configurator, API, orders)."""
    offer_obj = catalog_selectors.offer_get_active(slug=offer)
    return offer_quote(offer_obj=offer_obj, days=days, units=units, preparation=preparation)


def configuration_quote_cached(*, offer, days, units, preparation) -> Quote:
    """configuration_quote with the prices and units free the catalog shows, from its cache
    (catalog/caching.py): the same answers and errors, at most a few seconds late on a
    lapsed hold. For answering quotes; registering an order counts live under the lock."""
    sheet, available = catalog_selectors.price_sheet_cached(slug=offer)
    result = quote(sheet, days=days, units=units, preparation=preparation)
    return _within_units(result, available=available)


def order_check_payable(order: Order) -> None:
    """Refuse (Conflict) unless the order is waiting for payment."""
    if order.payment_state != PaymentState.AWAITING_PAYMENT:
        raise Conflict(
            _("Order %(reference)s is %(state)s and cannot be paid.")
            % {
                "reference": order.reference,
                "state": order.get_payment_state_display().lower(),
            }
        )


def orders_for(*, owner):
    return Order.objects.filter(owner=owner).order_by("-created_at", "-id")


class OrderRow(NamedTuple):
    """An order as the API's list reads it: the columns it shows and the ones that decide
    its access and reason (`pk`, the states, the dates), no model instance."""

    id: int
    reference: str
    offer_slug: str
    days: int
    units: int
    gpus: int
    preparation: str
    unit_price_usd: Decimal
    total_usd: Decimal
    payment_state: str
    rental_state: str
    starts_at: datetime | None
    ends_at: datetime | None
    created_at: datetime
    hold_until: datetime
    rental_reason: str

    # `id` itself (the first field) under the name the selectors of a list read: a C getter,
    # not a Python property call (a list's selectors read it four times per order).
    pk = property(operator.itemgetter(0), doc="The order's id.")


_ORDER_ROW = rows.Columns(Order, "o", OrderRow._fields, epoch_datetimes=True)


@functools.cache
def _order_rows_statement(vendor: str) -> str:
    # The column lists come from the model, never from input. The count is the outer side
    # of a LEFT JOIN, so an offset past the end still answers it (one row, no order).
    quote = connection.ops.quote_name
    table = quote(Order._meta.db_table)
    columns = ", ".join(quote(field.column) for field in _ORDER_ROW.fields)
    return (
        f"SELECT c.n, {_ORDER_ROW.sql()} FROM "  # noqa: S608
        f"(SELECT COUNT(*) AS n FROM {table} WHERE owner_id = %s) c "
        f"LEFT JOIN (SELECT {columns} FROM {table} WHERE owner_id = %s "
        "ORDER BY created_at DESC, id DESC LIMIT %s OFFSET %s) o ON 1 = 1 "
        "ORDER BY o.created_at DESC, o.id DESC"
    )


def order_rows_page_for(*, owner, offset: int, limit: int) -> tuple[list[OrderRow], int]:
    """One page of the owner's orders, newest first (as `orders_for` sorts them), and how
    many orders they have: one statement, rows without model instances (`OrderRow`)."""
    with rows.prepared_cursor() as cursor:
        cursor.execute(
            _order_rows_statement(connection.vendor), [owner.pk, owner.pk, limit, offset]
        )
        found = cursor.fetchall()
    count = found[0][0] if found else 0
    convert, make = _ORDER_ROW.converter(connection), OrderRow._make
    page = [make(convert(row[1:])) for row in found if row[1] is not None]
    return page, count


@functools.cache
def _references_statement(vendor: str) -> str:
    # Written once per database: the names come from the model, never from input.
    quote = connection.ops.quote_name
    return (
        f"SELECT o.{quote('id')}, o.{quote('reference')} "  # noqa: S608
        f"FROM {quote(Order._meta.db_table)} o WHERE {rows.one_of('o.' + quote('id'), vendor)}"
    )


def order_references(order_ids: list[int]) -> dict[int, str]:
    """The reference of each of these orders that exists, by id: one statement written
    once for any number of orders (a page of the audit list names 100)."""
    if not order_ids:
        return {}
    vendor = connection.vendor
    with rows.prepared_cursor() as cursor:
        cursor.execute(_references_statement(vendor), [rows.list_param(order_ids, vendor)])
        return dict(cursor.fetchall())


def _reference_key(reference) -> str:
    return str(reference or "").upper()[:16]


_ORDER = rows.Columns(Order, "o", epoch_datetimes=True)


@functools.cache
def _order_file_statement(vendor: str) -> str:
    # Written once per database: the columns come from the model, never from input.
    quote = connection.ops.quote_name
    return (
        f"SELECT {_ORDER.sql()} FROM {quote(Order._meta.db_table)} o "  # noqa: S608
        f"WHERE o.{quote('owner_id')} = %s AND o.{quote('reference')} = %s"
    )


def order_file_get(*, owner, reference: str) -> Order:
    """The owner's order row alone for its order file, or NotFound (also when the order
    belongs to someone else): one hand-written statement (the reference is unique: no
    ORDER BY, no LIMIT; the ORM spent more CPU building it than PostgreSQL running it),
    and `order.owner` is `owner` itself, so reading it costs no query."""
    with connection.cursor() as cursor:
        cursor.execute(
            _order_file_statement(connection.vendor), [owner.pk, _reference_key(reference)]
        )
        row = cursor.fetchone()
    if row is None:
        raise NotFound(_("No order with this reference on your account."))
    order = _ORDER.load(row)
    order.owner = owner
    return order


def order_get_for_owner(
    *, owner, reference: str, with_payments: bool = False, with_offer: bool = True
) -> Order:
    """The owner's order, or NotFound — also when the order belongs to someone else.

    `with_payments` loads its payment instructions too; `with_offer=False` reads the order
    row alone (for a service that locks the order and reads it again)."""
    orders = Order.objects.filter(owner=owner, reference=_reference_key(reference))
    if with_payments:
        orders = orders.prefetch_related(intents_prefetch(Order))
    if with_offer:
        orders = orders.select_related("offer", "owner")
    order = orders.first()
    if order is None:
        raise NotFound(_("No order with this reference on your account."))
    return order


def order_timeline(*, order: Order, staff: bool = False):
    """The audit events of the order, oldest first, in words a customer reads
    (orders/timeline.py); with the operators' bookkeeping too when `staff`."""
    events = audit_trail_of(target_type="orders.order", target_id=order.pk)
    return timeline.timeline_entries(order=order, events=events, staff=staff)
