"""core/rows.py's `epoch_datetimes`: the instances and values it loads are the ORM's."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from kernodeck.accounts.models import ApiToken
from kernodeck.core import rows
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_moments_loaded_as_microseconds_are_the_orms():
    user = make_user()
    moment = datetime(2026, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
    token = ApiToken.objects.create(
        user=user, name="t", prefix="kd_x", digest="d" * 64, created_at=moment
    )
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=moment - timedelta(days=400))
    token.refresh_from_db()
    columns = rows.Columns(ApiToken, "t", epoch_datetimes=True)

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns.sql()} FROM accounts_apitoken t WHERE t.id = %s",  # noqa: S608
            [token.pk],
        )
        row = cursor.fetchone()
    loaded = columns.load(row)
    values = columns.converter()(row)

    fields = ("created_at", "last_used_at", "revoked_at", "name", "user_id")
    assert [getattr(loaded, name) for name in fields] == [getattr(token, name) for name in fields]
    assert [values[columns.names.index(name)] for name in fields] == [
        getattr(token, name) for name in fields
    ]
    # Numbers on PostgreSQL; elsewhere the columns as they are, through the ORM's converters.
    assert ("EXTRACT" in columns.sql()) == (connection.vendor == "postgresql")
