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

import datetime
import functools
import ipaddress
import json
import uuid
from decimal import Decimal

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _from_epoch_micros(value, expression, conn):
    # timedelta(0, 0, µs): positional, half the CPU of timedelta(microseconds=µs).
    return None if value is None else _EPOCH + datetime.timedelta(0, 0, value)


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
        # The moments read as numbers are made here, not through a converter call each:
        # a list of 50 rows with four moments each calls nothing per value.
        epochs = [i for i, _column, converters in found if converters == [_from_epoch_micros]]
        others = [entry for entry in found if entry[0] not in epochs]
        epoch, micros = _EPOCH, datetime.timedelta

        def convert(values) -> list:
            values = list(values)
            for i in epochs:
                value = values[i]
                if value is not None:
                    values[i] = epoch + micros(0, 0, value)  # positional: half the CPU
            for i, column, converters in others:
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


# psycopg prepares a statement only when asked (`prepare=True`): Django's own cursors bind
# their parameters in the client and are never prepared, whatever this number.
_ONLY_WHEN_ASKED = 2**31 - 1


@functools.cache
def _psycopg():
    """The preparing cursor's class, and what it takes to give it the connection's time
    zone, imported once and only where the database is PostgreSQL."""
    import psycopg
    from django.db.backends.postgresql.psycopg_any import register_tzloader

    class PreparingCursor(psycopg.Cursor):
        """Binds its parameters on the server and runs its statement prepared (parsed and
        planned once per connection)."""

        def execute(self, query, params=None, *, prepare=True, binary=None):
            super().execute(query, params, prepare=prepare, binary=binary)
            if self._query is None:  # psycopg keeps no text of a prepared execution
                self._query = _Statement(query, params)
            return self

    class _Statement:
        """What Django's query log reads of a cursor's last statement (`_query.query`,
        as `last_executed_query` reads it): the statement with its parameters in it,
        written out only when a log asks (under DEBUG, or a test counting queries)."""

        __slots__ = ("_params", "_sql", "params")

        def __init__(self, sql, params):
            self._sql, self._params, self.params = sql, params, None

        @property
        def query(self) -> bytes:
            return connection.ops.compose_sql(self._sql, self._params).encode()

    timestamptz = psycopg.adapters.types["timestamptz"].oid
    return PreparingCursor, register_tzloader, timestamptz, psycopg.pq.Format.TEXT


def prepared_cursor(conn=None):
    """A cursor for the few statements every request of a hot path sends (the API token,
    the orders list), which PostgreSQL then parses and plans once per connection instead
    of once per request: psycopg's prepared statements, by a cursor that binds its
    parameters on the server. PostgreSQL spent more CPU planning such a statement than
    running it (the list's instructions: 0.18 ms of planning, 0.04 ms of execution).

    It is Django's cursor in every other way: the same connection and transaction, its
    health check, query logging and counting (tests' budgets), execute wrappers and error
    wrapping; rows load with the connection's loaders, in its time zone, as Django's
    cursor loads them. psycopg keeps the prepared statements right across rollbacks and
    schema changes (it drops them all on a ROLLBACK, a DROP or an ALTER, and PostgreSQL
    plans a statement again when a table it reads changes). Elsewhere (SQLite), Django's
    own cursor."""
    conn = connections[DEFAULT_DB_ALIAS] if conn is None else conn  # not the proxy
    if conn.vendor != "postgresql":
        return conn.cursor()
    preparing_cursor, register_tzloader, timestamptz, text = _psycopg()
    conn.close_if_health_check_failed()
    conn.ensure_connection()
    with conn.wrap_database_errors:
        raw = conn.connection
        if raw.prepare_threshold is None:  # Django turns automatic preparing off
            raw.prepare_threshold = _ONLY_WHEN_ASKED
        cursor = preparing_cursor(raw)
        # As Django's `create_cursor`: its own time zone where the connection's differs.
        if conn.timezone != raw.adapters.get_loader(timestamptz, text).timezone:
            register_tzloader(conn.timezone, cursor)
    return conn._prepare_cursor(cursor)


def lock_clause(of: tuple[str, ...] = ()) -> str:
    """`FOR NO KEY UPDATE` where the database has row locks (SQLite's transactions are
    immediate: the writer holds the whole database instead); `of`: only the rows of these
    table aliases (the others are read, not locked)."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    clause = " FOR NO KEY UPDATE" if features.has_select_for_no_key_update else " FOR UPDATE"
    if of and features.has_select_for_update_of:
        clause += " OF " + ", ".join(of)
    return clause


def one_of(column: str, vendor: str) -> str:
    """`column` is one of a list given as one parameter (`list_param`): a fixed statement
    for any number of keys (PostgreSQL: an array; SQLite: a JSON array)."""
    if vendor == "postgresql":
        return f"{column} = ANY(%s)"
    return f"{column} IN (SELECT value FROM json_each(%s))"  # noqa: S608 - a column name


def list_param(values: list, vendor: str):
    """The parameter of `one_of`: the keys as the database reads them."""
    return values if vendor == "postgresql" else json.dumps(values)


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
    return _with_parts(inserts)


def _with_parts(inserts: list[str]) -> str:
    """PostgreSQL: the first INSERTs as data-modifying CTEs, all in one statement."""
    ctes = ", ".join(f"w{n} AS ({insert})" for n, insert in enumerate(inserts[:-1]))
    return f"WITH {ctes} {inserts[-1]}"


@functools.cache
def _json_insert_statement(models: tuple) -> str:
    """PostgreSQL: each model's rows from one `jsonb` parameter (an array of objects keyed
    by column), turned into the table's row type by `jsonb_populate_recordset` (each value
    read by the column type's own input, as a literal would be), in the array's order.

    Short, and with one parameter a group: psycopg caches how it splits the statement
    (not for more than 50 parameters) and adapts one string instead of every value."""
    quote = connection.ops.quote_name
    inserts = []
    for model in models:
        table = quote(model._meta.db_table)
        columns = ", ".join(quote(field.column) for field in _insert_fields(model))
        inserts.append(
            f"INSERT INTO {table} ({columns}) SELECT {columns} "  # noqa: S608
            f"FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb) WITH ORDINALITY AS r "
            "ORDER BY r.ordinality"
        )
    return inserts[0] if len(inserts) == 1 else _with_parts(inserts)


class _NotJson(Exception):
    pass


_JSON_TEXT = (Decimal, uuid.UUID, ipaddress.IPv4Address, ipaddress.IPv6Address)


def _json_value(value):
    """A database value (what `get_db_prep_save` gives on PostgreSQL) as JSON whose text
    the column's input function reads as it reads the literal psycopg would send; anything
    else raises _NotJson (the caller then sends the values one by one)."""
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return value
    if isinstance(value, datetime.date | datetime.time):  # datetimes are dates
        return value.isoformat()
    if isinstance(value, _JSON_TEXT):
        return str(value)
    obj = getattr(value, "obj", None)
    # A JSONField's value (psycopg's Jsonb, dumped by plain json.dumps): its document is
    # the column's value. JSON null would read as SQL NULL: not here.
    if type(value).__name__ == "Jsonb" and value.dumps is json.dumps and obj is not None:
        return obj
    raise _NotJson


# How a field's value is spelled in the JSON document without `get_db_prep_save`, for the
# fields and the Python types where, on PostgreSQL, the ORM sends the value as it is (or
# its text): any other field or type takes the ORM's own path (`_json_value` of
# `get_db_prep_save`), field by field.
_TEXT_FIELDS = (models.CharField, models.TextField)
_INTEGER_FIELDS = (
    models.IntegerField,
    models.BigIntegerField,
    models.SmallIntegerField,
    models.PositiveIntegerField,
    models.PositiveBigIntegerField,
    models.PositiveSmallIntegerField,
    models.AutoField,
    models.BigAutoField,
    models.SmallAutoField,
)


def _kind(field) -> str:
    if field.is_relation:
        return _kind(field.target_field) if field.many_to_one else ""
    kind = type(field)
    if kind in _TEXT_FIELDS or kind in (models.SlugField, models.EmailField):
        return "text"
    if kind in _INTEGER_FIELDS:
        return "integer"
    if kind is models.BooleanField:
        return "boolean"
    if kind is models.DecimalField:
        return "decimal"
    if kind is models.DateTimeField:
        return "datetime"
    if kind is models.UUIDField:
        return "uuid"
    if kind is models.JSONField and field.encoder is None:
        return "json"
    if kind is models.GenericIPAddressField:
        return "ip"
    return ""


_PLAIN = {
    "text": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "json": (dict, list),
}


def _pre_save_needed(field) -> bool:
    """Whether the field's `pre_save` does more than read the attribute."""
    if isinstance(field, models.DateField):  # DateTimeField too
        return field.auto_now or field.auto_now_add
    return type(field).pre_save is not models.Field.pre_save


@functools.cache
def _json_plan(model) -> tuple:
    """(column, attname, field, kind, whether `pre_save` must be asked) for each column
    an INSERT of the model writes."""
    return tuple(
        (field.column, field.attname, field, _kind(field), _pre_save_needed(field))
        for field in _insert_fields(model)
    )


def _json_field_value(instance, field, attname, kind, pre_save):
    value = field.pre_save(instance, True) if pre_save else getattr(instance, attname)
    if value is None:
        return None
    plain = _PLAIN.get(kind)
    if plain is not None:
        if type(value) in plain:
            return value
    elif kind == "datetime":
        if type(value) is datetime.datetime and value.tzinfo is not None:
            return value.isoformat()
    elif kind == "decimal":
        if type(value) is Decimal and value.is_finite():
            return str(value)
    elif kind == "uuid":
        if type(value) is uuid.UUID:
            return str(value)
    elif kind == "ip" and type(value) is str and ":" not in value:
        return value or None  # the ORM sends an empty address as NULL
    return _json_value(field.get_db_prep_save(value, connection))


def _json_documents(groups: list) -> list[str] | None:
    """Each group's rows as one JSON array of objects keyed by column, or None when a
    value has no such spelling."""
    documents = []
    for group in groups:
        plan = _json_plan(group[0].__class__)
        try:
            document = [
                {
                    column: _json_field_value(instance, field, attname, kind, pre_save)
                    for column, attname, field, kind, pre_save in plan
                }
                for instance in group
            ]
            documents.append(json.dumps(document, allow_nan=False, ensure_ascii=False))
        except (_NotJson, TypeError, ValueError):
            return None  # the ordinary path sends it, or raises what the ORM would
    return documents


def _insert_params(groups: list) -> list:
    params = []
    for group in groups:
        fields = _insert_fields(group[0].__class__)
        for instance in group:
            params.extend(
                field.get_db_prep_save(field.pre_save(instance, True), connection)
                for field in fields
            )
    return params


def insert_all(*groups: list) -> None:
    """Write new rows: each group a list of unsaved instances of one model, with
    the values `save()` would send (each field's `pre_save` and `get_db_prep_save`).

    On PostgreSQL every group goes in one statement (the first ones as data-modifying
    `WITH` parts, written in the given order), each group's rows as one `jsonb` parameter
    (`_json_insert_statement`); elsewhere, or for a value that has no such spelling, the
    values one by one (one INSERT per group outside PostgreSQL). A primary key the
    database assigns (an auto-increment one) is not read back: use it for rows nobody
    reads again in the request (audit events), or give the key (a UUID)."""
    groups = [group for group in groups if group]
    if not groups:
        return
    shape = tuple((group[0].__class__, len(group)) for group in groups)
    documents = _json_documents(groups) if connection.vendor == "postgresql" else None
    if documents is not None:
        # Prepared: the same few shapes come on every request of a hot path, and
        # PostgreSQL then parses and plans each once per connection.
        with prepared_cursor() as cursor:
            cursor.execute(_json_insert_statement(tuple(model for model, _ in shape)), documents)
    else:
        with connection.cursor() as cursor:
            params = _insert_params(groups)
            statement = _insert_statement(shape, connection.vendor)
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


class Pages:
    """What Paginator reads of a list (`count()` and a slice), from a count already read
    and `page(offset, limit)` that reads one page's rows."""

    def __init__(self, *, count: int, page):
        self._count, self._page = count, page

    def count(self) -> int:
        return self._count

    def __getitem__(self, index: slice) -> list:
        return self._page(*_offset_limit(index))


def _offset_limit(index: slice) -> tuple[int, int]:
    """The offset and size of a page asked as Paginator asks it (`[bottom:top]`)."""
    if not isinstance(index, slice) or index.step is not None or index.stop is None:
        raise TypeError("A page is a slice with a stop and no step.")
    start = index.start or 0
    return start, max(0, index.stop - start)


class FixedList:
    """What Paginator reads of a list (`count()` and a slice), for a list whose filters
    and order are fixed (no value from input): its two statements made by the ORM once
    per database, from `rows` (a `values_list`) and `count` (the same rows' keys, without
    joins nor order), then sent as they are with the page's limit and offset as
    parameters, prepared on PostgreSQL (`prepared_cursor`). A page's rows are tuples in
    `rows`' order, converted as the ORM converts them (SQLite's text moments, decimals),
    each given to `make` (a NamedTuple's `_make`, say).

    The ORM spent more CPU building a list's statements and a model instance for each
    table of each row than PostgreSQL spent running them. On PostgreSQL the fixed values
    are written into the statements as literals, as Django's own client-side binding
    sends them: a prepared statement's generic plan cannot match a partial index's
    condition to parameters (the review queue's lists read such indexes)."""

    def __init__(self, *, rows, count, make=tuple):
        self._rows, self._count, self._make = rows, count, make
        self._statements: dict[str, tuple] = {}

    def _compiled(self, conn) -> tuple:
        found = self._statements.get(conn.vendor)
        if found is None:
            compiler = self._rows().query.get_compiler(connection=conn)
            rows_sql, rows_params = compiler.as_sql()
            converters = compiler.get_converters([column for column, *_ in compiler.select])
            counted = self._count().order_by().query
            count_sql, count_params = counted.get_compiler(connection=conn).as_sql()
            count_sql = f"SELECT COUNT(*) FROM ({count_sql}) listed"  # noqa: S608
            if conn.vendor == "postgresql":
                rows_sql = conn.ops.compose_sql(rows_sql, rows_params).replace("%", "%%")
                count_sql = conn.ops.compose_sql(count_sql, count_params).replace("%", "%%")
                rows_params, count_params = (), ()
            found = self._statements[conn.vendor] = (
                f"{rows_sql} LIMIT %s OFFSET %s",
                tuple(rows_params),
                list(converters.items()),
                count_sql,
                tuple(count_params),
            )
        return found

    def count(self) -> int:
        conn = connections[DEFAULT_DB_ALIAS]
        _rows_sql, _rows_params, _converters, count_sql, count_params = self._compiled(conn)
        with prepared_cursor(conn) as cursor:
            cursor.execute(count_sql, count_params)
            return cursor.fetchone()[0]

    def __getitem__(self, index: slice) -> list:
        offset, limit = _offset_limit(index)
        return self.page(offset=offset, limit=limit)

    def page(self, *, offset: int, limit: int) -> list:
        conn = connections[DEFAULT_DB_ALIAS]
        rows_sql, rows_params, converters, _count_sql, _count_params = self._compiled(conn)
        with prepared_cursor(conn) as cursor:
            cursor.execute(rows_sql, (*rows_params, limit, offset))
            found = cursor.fetchall()
        make = self._make
        if not converters:
            return [make(row) for row in found]
        converted = []
        for row in map(list, found):
            for position, (functions, expression) in converters:
                value = row[position]
                for function in functions:
                    value = function(value, expression, conn)
                row[position] = value
            converted.append(make(row))
        return converted
