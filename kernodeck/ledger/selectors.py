import functools
from datetime import datetime
from decimal import Decimal

from django.db import connection
from django.db.models import Sum

from kernodeck.core import clock, rows
from kernodeck.core.errors import NotFound
from kernodeck.ledger.models import EntryKind, LedgerEntry, TopUp, TopUpStatus
from kernodeck.orders.selectors import intents_prefetch


def balance_available(*, account) -> Decimal:
    """The sum of the account's entries (equal to the last entry's balance_after_usd)."""
    total = LedgerEntry.objects.filter(account=account).aggregate(total=Sum("amount_usd"))["total"]
    return (total or Decimal("0")).quantize(Decimal("0.01"))


def topups_pending(*, account):
    """Top-ups still waiting for money: not credited, and no operator decided their payment.

    A top-up whose payment an operator credited (or refunded) by hand stays unpaid as a
    top-up, but nothing is pending any more: the decision is on its page and in the
    statement, so it must not count as "pending" for ever.
    """
    return TopUp.objects.filter(account=account, status=TopUpStatus.AWAITING_PAYMENT).exclude(
        intents__resolution__gt=""
    )


_PENDING = rows.Columns(TopUp, "t", ("amount_usd", "created_at"), epoch_datetimes=True)
_PENDING_KEY = rows.Columns(TopUp, "t", ("id",))


@functools.cache
def _topups_pending_statement(vendor: str) -> str:
    # `topups_pending` written once per database (the names come from the models): the
    # ORM spent more CPU building it than PostgreSQL running it. PostgreSQL writes the
    # key as text itself (a UUID made and written again in Python was 3 µs a top-up).
    quote = connection.ops.quote_name
    intents = TopUp._meta.get_field("intents").related_model._meta.db_table
    key = "CAST(t.id AS text)" if vendor == "postgresql" else _PENDING_KEY.sql()
    return (
        f"SELECT {key}, {_PENDING.sql()} FROM {quote(TopUp._meta.db_table)} t "  # noqa: S608
        f"WHERE t.{quote('account_id')} = %s AND t.{quote('status')} = %s "
        f"AND NOT EXISTS (SELECT 1 FROM {quote(intents)} i "
        f"WHERE i.{quote('topup_id')} = t.{quote('id')} AND i.{quote('resolution')} > '') "
        f"ORDER BY t.{quote('created_at')} DESC"
    )


def topups_pending_rows(*, account) -> list[tuple[str, Decimal, datetime]]:
    """`topups_pending`'s (pk as text, amount_usd, created_at), newest first (its
    ordering): what the balance page lists of each, without a model instance per top-up
    (an account can have hundreds), in one hand-written statement with the moments read
    as numbers (`rows.Columns`' epoch_datetimes)."""
    with rows.prepared_cursor() as cursor:
        cursor.execute(
            _topups_pending_statement(connection.vendor),
            [account.pk, TopUpStatus.AWAITING_PAYMENT.value],
        )
        found = cursor.fetchall()
    convert = _PENDING.converter(connection)
    if connection.vendor == "postgresql":
        return [(row[0], *convert(row[1:])) for row in found]
    key = _PENDING_KEY.converter(connection)
    return [(str(key(row[:1])[0]), *convert(row[1:])) for row in found]


def topups_pending_total(found: list[tuple]) -> Decimal:
    """What `topups_pending_usd` answers, from `topups_pending_rows`' rows (no query)."""
    return sum((amount for _pk, amount, _at in found), Decimal("0")).quantize(Decimal("0.01"))


def topups_open_count(*, account) -> int:
    """Top-ups awaiting payment whose instructions are still watched (capped per account)."""
    return (
        TopUp.objects.filter(
            account=account,
            status=TopUpStatus.AWAITING_PAYMENT,
            intents__monitor_until__gt=clock.now(),
        )
        .distinct()
        .count()
    )


def topups_pending_usd(*, account) -> Decimal:
    total = topups_pending(account=account).aggregate(total=Sum("amount_usd"))["total"]
    return (total or Decimal("0")).quantize(Decimal("0.01"))


def order_balance_payment(*, order) -> dict | None:
    """What the balance paid for an order, read from the ledger: the charge's amount (a
    positive USD figure) and when, or None when the balance paid nothing."""
    entry = LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE, order=order).first()
    if entry is None:
        return None
    return {"amount_usd": -entry.amount_usd, "at": entry.created_at, "sequence": entry.sequence}


def statement(*, account):
    """Every entry, newest first, with its causes loaded."""
    return (
        LedgerEntry.objects.filter(account=account)
        .select_related("order", "topup", "intent")
        .order_by("-sequence")
    )


# The columns of the balance page's statement, in the order `statement_rows` gives them.
STATEMENT_COLUMNS = (
    "sequence",
    "created_at",
    "kind",
    "memo",
    "order__reference",
    "topup_id",
    "intent_id",
    "amount_usd",
    "balance_after_usd",
)


def statement_rows(*, account):
    """`statement` as tuples of STATEMENT_COLUMNS, newest first: the page shows these
    and no more (the order's reference is the one cause it joins)."""
    return (
        LedgerEntry.objects.filter(account=account)
        .order_by("-sequence")
        .values_list(*STATEMENT_COLUMNS)
    )


_ENTRY = rows.Columns(
    LedgerEntry, "e", ("sequence", "created_at", "kind", "memo"), epoch_datetimes=True
)
_ENTRY_ORDER = rows.Columns(LedgerEntry.order.field.related_model, "o", ("reference",))
_ENTRY_AMOUNTS = rows.Columns(
    LedgerEntry, "e", ("topup_id", "intent_id", "amount_usd", "balance_after_usd")
)
_ENTRY_SUM = rows.Columns(LedgerEntry, "e", ("amount_usd",))


@functools.cache
def _statement_statements(vendor: str) -> tuple[str, str]:
    # `statement_rows` and its count with `balance_available`'s sum, written once per
    # database (the names come from the models).
    quote = connection.ops.quote_name
    table = quote(LedgerEntry._meta.db_table)
    orders = quote(LedgerEntry.order.field.related_model._meta.db_table)
    summary = (
        f"SELECT COUNT(*), SUM(e.{quote('amount_usd')}) FROM {table} e "  # noqa: S608
        f"WHERE e.{quote('account_id')} = %s"
    )
    page = (
        f"SELECT {_ENTRY.sql()}, {_ENTRY_ORDER.sql()}, {_ENTRY_AMOUNTS.sql()} "  # noqa: S608
        f"FROM {table} e LEFT JOIN {orders} o ON o.{quote('id')} = e.{quote('order_id')} "
        f"WHERE e.{quote('account_id')} = %s ORDER BY e.{quote('sequence')} DESC "
        "LIMIT %s OFFSET %s"
    )
    return summary, page


def statement_listed(*, account) -> tuple[rows.Pages, Decimal]:
    """`statement_rows` for Paginator (each page one hand-written statement, the moments
    read as numbers) and `balance_available`, read with the entries' count in one
    statement."""
    summary, page = _statement_statements(connection.vendor)
    with rows.prepared_cursor() as cursor:
        cursor.execute(summary, [account.pk])
        count, total = cursor.fetchone()
    (total,) = _ENTRY_SUM.converter(connection)((total,))
    available = (total or Decimal("0")).quantize(Decimal("0.01"))
    entry, order = _ENTRY.converter(connection), _ENTRY_ORDER.converter(connection)
    amounts = _ENTRY_AMOUNTS.converter(connection)
    width = len(_ENTRY)

    def read(offset: int, limit: int) -> list[tuple]:
        with rows.prepared_cursor() as cursor:
            cursor.execute(page, [account.pk, limit, offset])
            found = cursor.fetchall()
        return [
            (*entry(row[:width]), *order(row[width : width + 1]), *amounts(row[width + 1 :]))
            for row in found
        ]

    return rows.Pages(count=count, page=read), available


def topups_for(*, account):
    """The account's top-ups, newest first, each with its instructions (one query for all
    the page's). Ordered to the last column, so that pages (`offset`) never overlap."""
    return (
        TopUp.objects.filter(account=account)
        .prefetch_related(intents_prefetch(TopUp))
        .order_by("-created_at", "-id")
    )


def topup_get_for_owner(*, account, topup_id):
    import uuid

    from django.utils.translation import gettext as _

    try:
        topup_id = uuid.UUID(str(topup_id))
    except ValueError:
        raise NotFound(_("No top-up with this id on your account.")) from None
    topup = TopUp.objects.filter(account=account, pk=topup_id).first()
    if topup is None:
        raise NotFound(_("No top-up with this id on your account."))
    return topup


def entry_cause(entry) -> str:
    """A short text naming what caused an entry (order reference, top-up, payment)."""
    if entry.order_id:
        return f"order {entry.order.reference}"
    if entry.topup_id:
        return f"top-up {entry.topup_id}"
    if entry.intent_id:
        return f"payment {entry.intent_id}"
    return "support"


def order_refund(*, order):
    """The refund of an order to its owner's balance (its one refund entry), or None."""
    return (
        LedgerEntry.objects.filter(
            account_id=order.owner_id, order=order, kind=EntryKind.REFUND_CREDIT
        )
        .order_by("sequence")
        .first()
    )
