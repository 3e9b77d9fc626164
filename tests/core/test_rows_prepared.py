"""core/rows.py's `prepared_cursor`: Django's cursor in all but the statement's preparing
(PostgreSQL parses and plans it once per connection), with the same rows, logged and
counted as any, right after a rolled-back savepoint or a failed statement."""

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from kernodeck.accounts.models import ApiToken
from kernodeck.core import rows
from tests.factories import make_user

pytestmark = pytest.mark.django_db

PROBE = (
    "SELECT t.id, t.name, t.created_at, t.last_used_at FROM accounts_apitoken t "
    "WHERE t.user_id = %s AND t.name <> %s ORDER BY t.id /* prepared-probe */"
)


def _prepared_probes() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%prepared-probe%"],
        )
        return cursor.fetchone()[0]


def _probe(user, cursor_of=rows.prepared_cursor):
    with cursor_of() as cursor:
        cursor.execute(PROBE, [user.pk, "none"])
        return cursor.fetchall()


@pytest.fixture
def tokens():
    user = make_user()
    moment = datetime(2026, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
    for n in range(2):
        ApiToken.objects.create(
            user=user, name=f"t{n}", prefix="kd_x", digest=str(n) * 64, created_at=moment
        )
    return user


def test_the_rows_are_django_cursors_rows(tokens):
    found = _probe(tokens)

    assert found == _probe(tokens, connection.cursor)
    assert [row[1] for row in found] == ["t0", "t1"]
    assert found[0][3] is None
    if connection.vendor == "postgresql":  # loaded in the connection's time zone, UTC
        assert found[0][2] == datetime(2026, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
        assert found[0][2].utcoffset().total_seconds() == 0


def test_the_statement_is_logged_and_counted_with_its_parameters(tokens):
    with CaptureQueriesContext(connection) as captured:
        _probe(tokens)
        _probe(tokens)

    assert len(captured.captured_queries) == 2
    assert all("prepared-probe" in query["sql"] for query in captured.captured_queries)
    assert all("'none'" in query["sql"] for query in captured.captured_queries)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared on PostgreSQL only")
def test_postgresql_prepares_the_statement_once_and_nothing_else(tokens):
    for _ in range(3):
        _probe(tokens)
    list(ApiToken.objects.filter(user=tokens).values_list("name", flat=True))

    assert _prepared_probes() == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert all("prepared-probe" in statement for statement in prepared)  # no ORM query


def test_it_still_answers_after_a_rolled_back_savepoint_and_a_failed_statement(tokens):
    expected = _probe(tokens, connection.cursor)
    with pytest.raises(RuntimeError), transaction.atomic():
        assert _probe(tokens) == expected
        raise RuntimeError
    assert _probe(tokens) == expected
    with pytest.raises(IntegrityError), transaction.atomic():
        _probe(tokens)
        ApiToken.objects.create(
            user=tokens, name="dup", prefix="kd_x", digest="0" * 64, created_at=datetime.now(UTC)
        )
    assert _probe(tokens) == expected
