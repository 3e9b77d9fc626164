"""Model instances from hand-written SELECTs, for the hot path of payment instructions.

The ORM spends more CPU building a statement than PostgreSQL spends running it: the few
statements that every request for instructions sends are written once here, and their rows
are turned into model instances with the same converters the ORM applies (so SQLite's
text timestamps and decimals come back as the ORM would give them).
"""

from django.db import connection


class Columns:
    """A model's concrete columns under a table alias, and how to load them."""

    def __init__(self, model, alias: str):
        self.model = model
        self.alias = alias
        self.fields = list(model._meta.concrete_fields)
        self.names = [field.attname for field in self.fields]
        self._converters: dict[str, list] = {}

    def sql(self) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{quote(field.column)}" for field in self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def _converters_for(self, conn) -> list:
        converters = self._converters.get(conn.vendor)
        if converters is None:
            converters = []
            for i, field in enumerate(self.fields):
                column = field.get_col(self.model._meta.db_table)
                found = conn.ops.get_db_converters(column) + field.get_db_converters(conn)
                if found:
                    converters.append((i, column, found))
            self._converters[conn.vendor] = converters
        return converters

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
