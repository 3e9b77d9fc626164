"""Model instances from hand-written statements, for the hot paths (payment instructions,
API tokens).

The ORM spends more CPU building a statement than PostgreSQL spends running it: the few
statements that every such request sends are written once, and their rows are turned into
model instances with the same converters the ORM applies (so SQLite's text timestamps and
decimals come back as the ORM would give them); new rows are written with the values the
ORM would send (`insert_all`).

On PostgreSQL, Django loads every `timestamptz` with psycopg's pure-Python parser (its
`BaseTzLoader`), about 8 µs a value: a list of 50 rows with two moments each spends more
on that than on the rest of its statement. `Columns(..., epoch_datetimes=True)` selects the
moments as whole microseconds since 1970 instead (an exact `bigint`: `EXTRACT` answers
`numeric` on PostgreSQL 14 and later, the versions Django 5.2 supports) and makes the same
aware UTC datetimes of them in Python.
"""

import functools
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _from_epoch_micros(value, expression, conn):
    return None if value is None else _EPOCH + timedelta(microseconds=value)


class Columns:
    """A model's concrete columns (or the named ones: `names`, by attribute name) under a
    table alias, and how to load them (its moments as microseconds on PostgreSQL with
    `epoch_datetimes`, see above)."""

    def __init__(
        self,
        model,
        alias: str,
        names: tuple[str, ...] | None = None,
        *,
        epoch_datetimes: bool = False,
    ):
        self.model = model
        self.alias = alias
        self.epoch_datetimes = epoch_datetimes
        fields = list(model._meta.concrete_fields)
        if names is not None:
            by_name = {field.attname: field for field in fields}
            fields = [by_name[name] for name in names]
        self.fields = fields
        self.names = [field.attname for field in self.fields]
        self._converters: dict[str, list] = {}

    def _as_epoch(self, field, conn) -> bool:
        return (
            self.epoch_datetimes
            and field.get_internal_type() == "DateTimeField"
            and conn.vendor == "postgresql"
            and settings.USE_TZ
            and conn.timezone_name == "UTC"
        )

    def sql(self) -> str:
        quote = connection.ops.quote_name
        columns = []
        for field in self.fields:
            column = f"{self.alias}.{quote(field.column)}"
            if self._as_epoch(field, connection):
                column = f"CAST(EXTRACT(EPOCH FROM {column}) * 1000000 AS BIGINT)"
            columns.append(column)
        return ", ".join(columns)

    def __len__(self) -> int:
        return len(self.fields)

    def _converters_for(self, conn) -> list:
        converters = self._converters.get(conn.vendor)
        if converters is None:
            converters = []
            for i, field in enumerate(self.fields):
                column = field.get_col(self.model._meta.db_table)
                if self._as_epoch(field, conn):
                    found = [_from_epoch_micros]
                else:
                    found = conn.ops.get_db_converters(column) + field.get_db_converters(conn)
                if found:
                    converters.append((i, column, found))
            self._converters[conn.vendor] = converters
        return converters

    def converter(self, conn=connection):
        """A function from this model's slice of a row to its values as the ORM would give
        them, for lists that only read the values (no instance); `tuple` itself where no
        column needs converting (PostgreSQL's dates and decimals come back as they are)."""
        found = self._converters_for(conn)
        if not found:
            return tuple

        def convert(values) -> list:
            values = list(values)
            for i, column, converters in found:
                for converter in converters:
                    values[i] = converter(values[i], column, conn)
            return values

        return convert

    def load(self, values, conn=connection):
        """The instance from this model's slice of a row (None when its key is NULL, as
        after a LEFT JOIN that found nothing)."""
        values = list(values)
        if values[self.names.index(self.model._meta.pk.attname)] is None:
            return None
        for i, column, converters in self._converters_for(conn):
            for converter in converters:
                values[i] = converter(values[i], column, conn)
        return self.model.from_db(conn.alias, self.names, values)


def lock_clause() -> str:
    """`FOR NO KEY UPDATE` where the database has row locks (SQLite's transactions are
    immediate: the writer holds the whole database instead)."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    return " FOR NO KEY UPDATE" if features.has_select_for_no_key_update else " FOR UPDATE"


def datetime_param(value):
    return connection.ops.adapt_datetimefield_value(value)


def _insert_fields(model) -> list:
    """The columns an INSERT of the model writes: every concrete one but a key the
    database assigns (an auto-increment primary key)."""
    return [
        field
        for field in model._meta.local_concrete_fields
        if not (field.primary_key and field.db_returning) and not field.generated
    ]


@functools.cache
def _insert_statement(shape: tuple, vendor: str) -> str:
    quote = connection.ops.quote_name
    inserts = []
    for model, count in shape:
        fields = _insert_fields(model)
        row = "(" + ", ".join(["%s"] * len(fields)) + ")"
        columns = ", ".join(quote(field.column) for field in fields)
        inserts.append(
            f"INSERT INTO {quote(model._meta.db_table)} ({columns}) "  # noqa: S608
            "VALUES " + ", ".join([row] * count)
        )
    if vendor != "postgresql" or len(inserts) == 1:
        return ";".join(inserts)  # one statement per group, split again by `insert_all`
    # PostgreSQL: the first groups as data-modifying CTEs, all in one statement.
    ctes = ", ".join(f"w{n} AS ({insert})" for n, insert in enumerate(inserts[:-1]))
    return f"WITH {ctes} {inserts[-1]}"


def insert_all(*groups: list) -> None:
    """Write new rows: each group a list of unsaved instances of one model, with
    the values `save()` would send (each field's `pre_save` and `get_db_prep_save`).

    On PostgreSQL every group goes in one statement (the first ones as data-modifying
    `WITH` parts, written in the given order); elsewhere one INSERT per group. A primary
    key the database assigns (an auto-increment one) is not read back: use it for rows
    nobody reads again in the request (audit events), or give the key (a UUID)."""
    groups = [group for group in groups if group]
    if not groups:
        return
    shape = tuple((group[0].__class__, len(group)) for group in groups)
    params = []
    for group in groups:
        fields = _insert_fields(group[0].__class__)
        for instance in group:
            params.extend(
                field.get_db_prep_save(field.pre_save(instance, True), connection)
                for field in fields
            )
    statement = _insert_statement(shape, connection.vendor)
    with connection.cursor() as cursor:
        if ";" not in statement:
            cursor.execute(statement, params)
        else:
            start = 0
            for (model, count), part in zip(shape, statement.split(";"), strict=True):
                width = count * len(_insert_fields(model))
                cursor.execute(part, params[start : start + width])
                start += width
    for group in groups:
        for instance in group:
            instance._state.adding = False
            instance._state.db = connection.alias
