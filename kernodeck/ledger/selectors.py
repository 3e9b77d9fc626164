import functools
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


_PENDING = rows.Columns(TopUp, "t", ("id", "amount_usd", "created_at"), epoch_datetimes=True)


@functools.cache
def _topups_pending_statement(vendor: str) -> str:
    # `topups_pending` written once per database (the names come from the models): the
    # ORM spent more CPU building it than PostgreSQL running it.
    quote = connection.ops.quote_name
    intents = TopUp._meta.get_field("intents").related_model._meta.db_table
    return (
        f"SELECT {_PENDING.sql()} FROM {quote(TopUp._meta.db_table)} t "  # noqa: S608
        f"WHERE t.{quote('account_id')} = %s AND t.{quote('status')} = %s "
        f"AND NOT EXISTS (SELECT 1 FROM {quote(intents)} i "
        f"WHERE i.{quote('topup_id')} = t.{quote('id')} AND i.{quote('resolution')} > '') "
        f"ORDER BY t.{quote('created_at')} DESC"
    )


def topups_pending_rows(*, account) -> list[tuple]:
    """`topups_pending`'s (pk, amount_usd, created_at), newest first (its ordering): what
    the balance page lists of each, without a model instance per top-up (an account can
    have hundreds), in one hand-written statement with the moments read as numbers
    (`rows.Columns`' epoch_datetimes)."""
    with rows.prepared_cursor() as cursor:
        cursor.execute(
            _topups_pending_statement(connection.vendor),
            [account.pk, TopUpStatus.AWAITING_PAYMENT.value],
        )
        found = cursor.fetchall()
    convert = _PENDING.converter(connection)
    return [tuple(convert(row)) for row in found]


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
