"""Row locks of the payments domain, in the documented order (docs/architecture.md)."""

import functools

from django.db import IntegrityError, connection, transaction
from django.utils.translation import gettext as _

from kernodeck.accounts.locks import lock_account
from kernodeck.core import rows
from kernodeck.core.errors import NotFound
from kernodeck.ledger.locks import lock_topup
from kernodeck.orders import locks as order_locks
from kernodeck.orders.models import Order
from kernodeck.payments.models import (
    AddressCounter,
    ChainState,
    PaymentIntent,
    PaymentMethod,
    Rate,
)


def lock_counter(*, chain: str, wallet_fingerprint: str) -> AddressCounter:
    """Lock the address sequence of one wallet; create it on first use."""
    counter = (
        AddressCounter.objects.select_for_update(no_key=True)
        .filter(chain=chain, wallet_fingerprint=wallet_fingerprint)
        .first()
    )
    if counter is not None:
        return counter
    try:
        with transaction.atomic():
            AddressCounter.objects.get_or_create(
                chain=chain, wallet_fingerprint=wallet_fingerprint
            )
    except IntegrityError:
        pass  # created by a concurrent transaction in the meantime
    return AddressCounter.objects.select_for_update(no_key=True).get(
        chain=chain, wallet_fingerprint=wallet_fingerprint
    )


def counter_take_index(*, chain: str, wallet_fingerprint: str) -> int:
    """Take the next unused derivation index of one wallet's address sequence.

    One `UPDATE … RETURNING`: it locks the counter's row until the transaction ends (as
    `lock_counter` does, so concurrent requests queue here and no index is handed out
    twice) and moves it on in the same statement. The counter is created on first use.
    """
    # The ORM's update() cannot return the new value; this is AddressCounter's table.
    statement = (
        "UPDATE payments_addresscounter SET next_index = next_index + 1 "
        "WHERE chain = %s AND wallet_fingerprint = %s RETURNING next_index"
    )
    with rows.prepared_cursor() as cursor:  # parsed and planned once per connection
        cursor.execute(statement, [chain, wallet_fingerprint])
        row = cursor.fetchone()
        if row is None:  # the wallet's first address
            lock_counter(chain=chain, wallet_fingerprint=wallet_fingerprint)
            cursor.execute(statement, [chain, wallet_fingerprint])
            row = cursor.fetchone()
    return row[0] - 1


_ORDER = rows.Columns(Order, "o")
_INTENT = rows.Columns(PaymentIntent, "i")
_METHOD = rows.Columns(PaymentMethod, "m")


@functools.cache
def _order_of_owner_statement(vendor: str) -> str:
    # The column lists come from the models, never from input. The account is first in
    # FROM: PostgreSQL locks a joined row's tables in that order (the account, then the
    # order, as every money path takes them).
    # Only the order's columns come back: the account row is locked all the same (a
    # locking clause without OF locks the rows of every table in FROM).
    return (
        f"SELECT {_ORDER.sql()} FROM accounts_user u "  # noqa: S608
        "JOIN orders_order o ON o.owner_id = u.id "
        "WHERE u.id = %s AND o.reference = %s" + rows.lock_clause()
    )


# The method (alias m) and its asset's fresh rate (alias r): the newest younger than the
# moment given (the first parameter), as `selectors.rate_current` reads it.
METHOD_WITH_FRESH_RATE = (
    "LEFT JOIN payments_rate r ON r.id = (SELECT n.id FROM payments_rate n "
    "WHERE n.asset = m.asset AND n.fetched_at >= %s "
    "ORDER BY n.fetched_at DESC, n.id DESC LIMIT 1)"
)
_RATE = rows.Columns(Rate, "r")
# The method's network's watcher state (alias c), what its health is decided from
# (`selectors.network_healthy`): read with the method, not by a statement of its own.
CHAIN_STATE = rows.Columns(ChainState, "c", ("network", "last_success_at", "last_error_at"))
METHOD_CHAIN_STATE = "LEFT JOIN payments_chainstate c ON c.network = m.chain"


@functools.cache
def _order_of_owner_with_method_statement(vendor: str) -> str:
    # As _order_of_owner_statement, with the method, its rate and its network's watcher
    # state read (not locked: the locking clause names the account and the order only) in
    # the same statement.
    return (
        f"SELECT {_ORDER.sql()}, {_METHOD.sql()}, {_RATE.sql()}, "  # noqa: S608
        f"{CHAIN_STATE.sql()} "
        "FROM accounts_user u JOIN orders_order o ON o.owner_id = u.id "
        "LEFT JOIN payments_paymentmethod m ON m.code = %s "
        f"{METHOD_WITH_FRESH_RATE} "
        f"{METHOD_CHAIN_STATE} "
        "WHERE u.id = %s AND o.reference = %s" + rows.lock_clause(of=("u", "o"))
    )


def _order_method_rate_state(row, owner):
    """(order, method, rate, chain state) from a row of the statement above; the method,
    the rate and the state are None where the LEFT JOINs found none."""
    order = _ORDER.load(row[: len(_ORDER)])
    order.owner = owner
    at = len(_ORDER)
    method = _METHOD.load(row[at : at + len(_METHOD)])
    at += len(_METHOD)
    rate = _RATE.load(row[at : at + len(_RATE)])
    state = CHAIN_STATE.load(row[at + len(_RATE) :])
    return order, method, rate, state


@functools.cache
def _intents_of_order_statement(vendor: str) -> str:
    return (
        f"SELECT {_INTENT.sql()}, {_METHOD.sql()} FROM payments_paymentintent i "  # noqa: S608
        "JOIN payments_paymentmethod m ON m.code = i.method_id "
        "WHERE i.order_id = %s ORDER BY i.created_at DESC"
    )


def lock_order_of_owner(*, owner, reference: str):
    """Lock the owner's account, then the owner's order with this reference (NotFound, a
    404, when the owner has none: another customer's order is never locked nor named).

    The account comes first, as in `orders.locks.lock_order`; both are found and locked
    in one statement, so the order need not be read before the locks. When the owner has
    no such order nothing is locked (and nothing is written: the answer is a 404). The
    order's `.owner` is the given account object (its row is locked, not read again)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _order_of_owner_statement(connection.vendor),
            [owner.pk, str(reference or "").upper()[:16]],
        )
        row = cursor.fetchone()
    if row is None:
        raise NotFound(_("No order with this reference on your account."))
    order = _ORDER.load(row)
    order.owner = owner
    return order


def lock_order_of_owner_with_method(*, owner, reference: str, method_code: str, fresh_since):
    """`lock_order_of_owner`, and in the same statement the method `method_code`, its
    asset's newest rate fetched since `fresh_since` and its network's watcher state (its
    `network`, `last_success_at` and `last_error_at` only; each None when there is none):
    (order, method, rate, chain state).

    The method, the rate and the state are read with the statement's snapshot, which
    may be older than the locks (taken before they were granted), as when they were read
    before the locks: none of them is what the locks protect."""
    with rows.prepared_cursor() as cursor:
        row = _lock_with_method(cursor, owner, reference, method_code, fresh_since)
    return _order_method_rate_state(row, owner)


def _lock_with_method(cursor, owner, reference, method_code, fresh_since):
    cursor.execute(
        _order_of_owner_with_method_statement(connection.vendor),
        [
            str(method_code or ""),
            rows.datetime_param(fresh_since),
            owner.pk,
            str(reference or "").upper()[:16],
        ],
    )
    row = cursor.fetchone()
    if row is None:
        raise NotFound(_("No order with this reference on your account."))
    return row


def lock_order_of_owner_with_method_and_intents(
    *, owner, reference: str, method_code: str, fresh_since
):
    """`lock_order_of_owner_with_method` and then `intents_of_locked_order`:
    (order, method, rate, chain state, intents).

    The instructions are read by a statement of their own, after the lock was granted
    (READ COMMITTED takes a snapshot per statement), so it sees every instructions
    committed before. Both are prepared statements on PostgreSQL (`rows.prepared_cursor`:
    parsed and planned once per connection; planning them cost PostgreSQL more CPU than
    the round trip they shared when sent as one query)."""
    with rows.prepared_cursor() as cursor:
        row = _lock_with_method(cursor, owner, reference, method_code, fresh_since)
        order, method, rate, state = _order_method_rate_state(row, owner)
        cursor.execute(_intents_of_order_statement(connection.vendor), [order.pk])
        found = cursor.fetchall()
    return order, method, rate, state, _intents_from_rows(found, order)


def _intents_from_rows(found, order) -> list[PaymentIntent]:
    intents = []
    for row in found:
        intent = _INTENT.load(row[: len(_INTENT)])
        PaymentIntent.method.field.set_cached_value(intent, _METHOD.load(row[len(_INTENT) :]))
        PaymentIntent.order.field.set_cached_value(intent, order)
        intents.append(intent)
    return intents


def intents_of_locked_order(order) -> list[PaymentIntent]:
    """The order's instructions, newest first, with their method (read under the order's
    lock, after it was taken: a statement of its own, so that it sees every instructions
    committed before the lock was granted). Each one's `.order` is the given object."""
    with rows.prepared_cursor() as cursor:
        cursor.execute(_intents_of_order_statement(connection.vendor), [order.pk])
        found = cursor.fetchall()
    return _intents_from_rows(found, order)


def lock_intent(intent_id) -> PaymentIntent:
    """Lock what the intent pays for (account, then order or top-up), then the intent.

    The owner, order and top-up of an intent never change, so reading them before the
    locks is safe; taking the parents first keeps one lock order for every path.
    """
    owner_id, order_id, topup_id = PaymentIntent.objects.values_list(
        "owner_id", "order_id", "topup_id"
    ).get(pk=intent_id)
    lock_account(owner_id)
    if order_id is not None:
        order_locks.lock_order(order_id)
    elif topup_id is not None:
        lock_topup(topup_id)
    return PaymentIntent.objects.select_for_update(no_key=True).get(pk=intent_id)


def lock_intents_of_order(*, order_id, **filters) -> list[PaymentIntent]:
    """Lock an order's intents (the order must be locked already), in primary-key order."""
    return lock_intents(order_id=order_id, **filters)


def lock_intents(**filters) -> list[PaymentIntent]:
    """Lock the intents `filters` select (what they pay for must be locked already), in
    primary-key order."""
    return list(
        PaymentIntent.objects.select_for_update(no_key=True).filter(**filters).order_by("pk")
    )
