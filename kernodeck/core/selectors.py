import datetime
import functools
from typing import NamedTuple

from django.conf import settings
from django.db import connection
from django.utils import timezone

from kernodeck.core import rows
from kernodeck.core.models import AuditEvent


def audit_events_for(*, target_type: str, target_id: str):
    """The audit trail of one object, oldest first (a timeline)."""
    return (
        AuditEvent.objects.filter(target_type=target_type, target_id=str(target_id))
        .select_related("actor")
        .order_by("created_at", "id")
    )


_EVENT = rows.Columns(AuditEvent, "e", epoch_datetimes=True)


@functools.cache
def _audit_trail_statement(vendor: str) -> str:
    # Written once per database: the columns come from the model, never from input.
    quote = connection.ops.quote_name
    return (
        f"SELECT {_EVENT.sql()} FROM {quote(AuditEvent._meta.db_table)} e "  # noqa: S608
        f"WHERE e.{quote('target_type')} = %s AND e.{quote('target_id')} = %s "
        f"ORDER BY e.{quote('created_at')}, e.{quote('id')}"
    )


def audit_trail_of(*, target_type: str, target_id: str) -> list[AuditEvent]:
    """`audit_events_for` without the actors' rows: for a timeline that reads `actor_id`
    only (the order file's), one join and a user's columns less per event; one statement
    written once (the ORM spent more CPU building it than the database running it)."""
    with connection.cursor() as cursor:
        cursor.execute(_audit_trail_statement(connection.vendor), [target_type, str(target_id)])
        found = cursor.fetchall()
    return [_EVENT.load(row) for row in found]


# The audit list (the back-office's change list of AuditEvent): what a row shows of an
# event and of its actor, as a tuple rather than two model instances.
_ACTOR = AuditEvent._meta.get_field("actor").related_model


class AuditListRow(NamedTuple):
    id: int
    created_at: datetime.datetime
    action: str
    target_type: str
    target_id: str
    ip_address: str | None
    actor_id: int | None
    actor_email: str | None  # `str()` of the account (its e-mail); None without an actor


# `values_list` names of AuditListRow's fields, for a list the ORM narrows.
AUDIT_LIST_VALUES = (*AuditListRow._fields[:-1], f"actor__{_ACTOR.EMAIL_FIELD}")
# The whole trail's order, newest first, that `audit_trail_listed` writes in SQL.
AUDIT_LIST_ORDER = ("-created_at", "-id")
# The columns the audit list filters by, whose distinct values `audit_trail_values` reads:
# neither is ever empty (NULL), and each leads an index.
AUDIT_TRAIL_VALUE_COLUMNS = ("action", "target_type")

_LISTED = rows.Columns(AuditEvent, "e", AuditListRow._fields[:-1], epoch_datetimes=True)
_LISTED_ACTOR = rows.Columns(_ACTOR, "u", (_ACTOR.EMAIL_FIELD,))
_MOMENT = rows.Columns(AuditEvent, "e", ("created_at",))


@functools.cache
def _audit_list_statements(vendor: str) -> tuple[str, str, str]:
    # Written once per database: the names come from the models, never from input.
    quote = connection.ops.quote_name
    events, actors = quote(AuditEvent._meta.db_table), quote(_ACTOR._meta.db_table)
    created, key = quote("created_at"), quote("id")
    summary = f"SELECT COUNT(*), MIN(e.{created}), MAX(e.{created}) FROM {events} e"  # noqa: S608
    page = (
        f"SELECT {_LISTED.sql()}, {_LISTED_ACTOR.sql()} FROM {events} e "  # noqa: S608
        f"LEFT JOIN {actors} u ON u.{quote(_ACTOR._meta.pk.column)} = e.{quote('actor_id')} "
        f"ORDER BY e.{created} DESC, e.{key} DESC LIMIT %s OFFSET %s"
    )
    # Each column's distinct values, smallest first, one index step per value (the next
    # value above the last one found) rather than a pass over the whole trail; `n` keeps
    # the order the steps found them in, which is the column's own (its collation's).
    walks, picks = [], []
    for kind, name in enumerate(AUDIT_TRAIL_VALUE_COLUMNS):
        column = quote(name)
        walks.append(
            f"w{kind}(n, v) AS (SELECT 0, MIN(e.{column}) FROM {events} e "  # noqa: S608
            f"UNION ALL SELECT w{kind}.n + 1, (SELECT MIN(e.{column}) FROM {events} e "
            f"WHERE e.{column} > w{kind}.v) FROM w{kind} WHERE w{kind}.v IS NOT NULL)"
        )
        picks.append(f"SELECT {kind}, n, v FROM w{kind} WHERE v IS NOT NULL")  # noqa: S608
    values = f"WITH RECURSIVE {', '.join(walks)} {' UNION ALL '.join(picks)} ORDER BY 1, 2"
    return summary, page, values


def audit_trail_listed() -> tuple[rows.Pages, datetime.datetime | None, datetime.datetime | None]:
    """The whole audit trail newest first (AUDIT_LIST_ORDER) for Paginator, a page an
    AuditListRow per event, and its first and last moments, read with its count in one
    statement: the audit list when nothing narrows it, each statement written once (the
    ORM spent more CPU building them and 200 model instances than PostgreSQL spent
    running them) and the moments read as numbers (`rows.Columns`' epoch_datetimes)."""
    summary, page, _values = _audit_list_statements(connection.vendor)
    with rows.prepared_cursor() as cursor:
        cursor.execute(summary)
        count, first, last = cursor.fetchone()
    moment = _MOMENT.converter(connection)
    (first,), (last,) = moment((first,)), moment((last,))
    event, actor = _LISTED.converter(connection), _LISTED_ACTOR.converter(connection)
    width = len(_LISTED)

    def read(offset: int, limit: int) -> list[AuditListRow]:
        with rows.prepared_cursor() as cursor:
            cursor.execute(page, [limit, offset])
            found = cursor.fetchall()
        return [AuditListRow(*event(row[:width]), *actor(row[width:])) for row in found]

    return rows.Pages(count=count, page=read), first, last


def audit_trail_values() -> dict[str, list[str]]:
    """The distinct values of each of AUDIT_TRAIL_VALUE_COLUMNS in the whole trail, in the
    order `ORDER BY` the column gives (the admin's list filters' choices), both in one
    statement that costs a step of the column's index per value found, not a read of
    every event."""
    _summary, _page, statement = _audit_list_statements(connection.vendor)
    with rows.prepared_cursor() as cursor:
        cursor.execute(statement)
        found = cursor.fetchall()
    values = {name: [] for name in AUDIT_TRAIL_VALUE_COLUMNS}
    for kind, _n, value in found:
        values[AUDIT_TRAIL_VALUE_COLUMNS[kind]].append(value)
    return values


# How far each unit of the admin's date hierarchy reaches, for `audit_trail_units`.
_UNIT_STEPS = {"day": "1 day", "month": "1 month", "year": "1 year"}


@functools.cache
def _audit_units_statement(unit: str) -> str:
    # Written once per unit (a key of _UNIT_STEPS, never input): from the first moment,
    # the start of its unit, then the first moment past that unit, one index step each.
    quote = connection.ops.quote_name
    events, created = quote(AuditEvent._meta.db_table), quote("created_at")
    first = (
        f"SELECT DATE_TRUNC('{unit}', MIN(e.{created}) AT TIME ZONE 'UTC') "  # noqa: S608
        f"FROM {events} e"
    )
    return (
        f"WITH RECURSIVE u(m) AS ({first} UNION ALL SELECT ({first} "  # noqa: S608
        f"WHERE e.{created} >= (u.m + INTERVAL '{_UNIT_STEPS[unit]}') AT TIME ZONE 'UTC') "
        "FROM u WHERE u.m IS NOT NULL) SELECT m FROM u WHERE m IS NOT NULL ORDER BY m"
    )


def audit_trail_units(unit: str) -> list[datetime.datetime] | None:
    """What `AuditEvent.objects.datetimes("created_at", unit)` answers for the whole trail
    (the admin's date hierarchy's days, months or years), in one step of the moments'
    index per unit found instead of a read of every event; None where only the ORM's
    statement can tell: outside PostgreSQL, and in a time zone other than UTC (where a
    unit's first moment is not its start plus a day, month or year in UTC)."""
    if (
        connection.vendor != "postgresql"
        or not settings.USE_TZ
        or connection.timezone_name != "UTC"
        or timezone.get_current_timezone_name() != "UTC"
    ):
        return None
    zone = timezone.get_current_timezone()
    with rows.prepared_cursor() as cursor:
        cursor.execute(_audit_units_statement(unit))
        return [moment.replace(tzinfo=zone) for (moment,) in cursor.fetchall()]
