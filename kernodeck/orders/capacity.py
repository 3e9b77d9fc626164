"""Fleet capacity: how many units of an offer can be ordered right now.

The one figure the configurator, the catalog, the API, order registration and every
settlement re-check use (`units_free`). It is derived from the fleet, not stored:

    whole units that fit in the free GPU slots of the offer's `available` nodes
  - units of settled orders still waiting for slots (queued, not yet allocated)
  - units held by unsettled orders within their hold window (`hold_until`)

A unit's GPUs sit on one node, so a node with 3 free slots offers one 2-GPU unit.
Allocated slots (live rentals) are not free; ended rentals released theirs. Callers that
act on the figure lock the offer row first (`orders.locks.lock_offer`).
"""

import functools

from django.db import connection
from django.db.models import Exists, OuterRef

from kernodeck.catalog.models import Offer
from kernodeck.core import clock, rows
from kernodeck.orders.models import RELEASED_RENTAL_STATES, Order, PaymentState
from kernodeck.provisioning.models import Allocation, GpuSlot, Node, NodeState


def _live_allocation():
    return Allocation.objects.filter(order=OuterRef("pk"), released_at__isnull=True)


def orders_waiting_for_slots():
    """Settled orders whose rental is live but holds no slot yet (queued or failed)."""
    return (
        Order.objects.filter(payment_state=PaymentState.SETTLED)
        .exclude(rental_state__in=RELEASED_RENTAL_STATES)
        .exclude(Exists(_live_allocation()))
    )


def orders_on_hold():
    """Unsettled orders whose hold window has not lapsed."""
    return Order.objects.filter(
        payment_state=PaymentState.AWAITING_PAYMENT, hold_until__gt=clock.now()
    )


def _literal(value: str) -> str:
    """A value of the code's own vocabularies (a state) as an SQL literal: written into the
    statement so that PostgreSQL matches the partial indexes of those states."""
    return "'" + str(value).replace("'", "''") + "'"


@functools.cache
def _units_statement(vendor: str) -> str:
    """The three terms of `units_available_by_offer`, per offer, in one fixed statement
    (written once per database; names from the models, states from the code, never
    input): parameters the offer ids (`rows.list_param`) and the moment holds are
    counted at."""
    quote = connection.ops.quote_name

    def table(model):
        return quote(model._meta.db_table)

    def column(model, name):
        return quote(model._meta.get_field(name).column)

    live = f"{column(Allocation, 'released_at')} IS NULL"
    free_slots = (
        f"SELECT COUNT(*) FROM {table(GpuSlot)} s WHERE s.{column(GpuSlot, 'node')} = nd.id "  # noqa: S608
        f"AND NOT EXISTS (SELECT 1 FROM {table(Allocation)} a "
        f"WHERE a.{column(Allocation, 'slot')} = s.id AND a.{live})"
    )
    free = (
        f"SELECT COALESCE(SUM(({free_slots}) / o.{column(Offer, 'gpus_per_unit')}), 0) "  # noqa: S608
        f"FROM {table(Node)} nd WHERE nd.{column(Node, 'offer')} = o.id "
        f"AND nd.{column(Node, 'state')} = {_literal(NodeState.AVAILABLE)}"
    )
    released = ", ".join(_literal(state) for state in sorted(RELEASED_RENTAL_STATES))
    units, offer = column(Order, "units"), column(Order, "offer")
    waiting = (
        f"SELECT COALESCE(SUM(r.{units}), 0) FROM {table(Order)} r WHERE r.{offer} = o.id "  # noqa: S608
        f"AND r.{column(Order, 'payment_state')} = {_literal(PaymentState.SETTLED)} "
        f"AND r.{column(Order, 'rental_state')} NOT IN ({released}) "
        f"AND NOT EXISTS (SELECT 1 FROM {table(Allocation)} a "
        f"WHERE a.{column(Allocation, 'order')} = r.id AND a.{live})"
    )
    held = (
        f"SELECT COALESCE(SUM(r.{units}), 0) FROM {table(Order)} r WHERE r.{offer} = o.id "  # noqa: S608
        f"AND r.{column(Order, 'payment_state')} = {_literal(PaymentState.AWAITING_PAYMENT)} "
        f"AND r.{column(Order, 'hold_until')} > %s"
    )
    return (
        f"SELECT o.id, ({free}), ({waiting}), ({held}) FROM {table(Offer)} o "  # noqa: S608
        f"WHERE {rows.one_of('o.id', vendor)}"
    )


def units_available_by_offer(*, offer_ids=None, offers=None) -> dict[int, int]:
    """Units orderable right now, for each offer id (every id present, never negative).

    One statement, so one snapshot: a settlement (held units become waiting ones) or an
    allocation (waiting units take free slots) committed while the figure is read moves
    units between its terms in one step and never shows them in two places or none. Read
    term by term, a settlement committed between the waiting orders and the held ones
    left its units in neither, and a lapsed order could be settled on them
    (tests/orders/test_capacity_snapshot.py). The statement is fixed (`_units_statement`,
    prepared on PostgreSQL): the ORM spent more CPU writing its nested subqueries than the
    database spent running them. `offers`, the loaded offers, may be given instead of
    their ids; the same terms as `orders_waiting_for_slots` and `orders_on_hold`.
    """
    if offers is not None:
        offer_ids = [offer.pk for offer in offers]
    offer_ids = list(offer_ids)
    vendor = connection.vendor
    with rows.prepared_cursor() as cursor:
        cursor.execute(
            _units_statement(vendor),
            [rows.datetime_param(clock.now()), rows.list_param(offer_ids, vendor)],
        )
        # PostgreSQL's SUM of integers is a numeric (a Decimal here): units are ints.
        found = {
            pk: max(0, int(free) - int(waiting) - int(held)) for pk, free, waiting, held in cursor
        }
    return {offer_id: found.get(offer_id, 0) for offer_id in offer_ids}


def units_free(*, offer) -> int:
    """Units of this offer that an order (or a lapsed order's settlement) can take now."""
    if isinstance(offer, Offer):
        return units_available_by_offer(offers=[offer])[offer.pk]
    return units_available_by_offer(offer_ids=[offer])[offer]
