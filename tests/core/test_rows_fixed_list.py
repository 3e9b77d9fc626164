"""core/rows.py's `FixedList`: a list of fixed filters read by two statements the ORM
makes once per database, giving Paginator the rows and the count the querysets give, in
their order and converted as the ORM converts them; on PostgreSQL its fixed values are
written in as literals (a partial index's condition stays visible to the planner)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernodeck.core import rows
from kernodeck.payments.models import Transfer
from kernodeck.payments.models.transfers import REVIEW_TRANSFER_CASES

pytestmark = pytest.mark.django_db

COLUMNS = ("id", "first_seen_at", "txid", "amount_base", "kind")


def _queryset():
    return Transfer.objects.filter(REVIEW_TRANSFER_CASES).order_by("first_seen_at", "id")


def _listed():
    return rows.FixedList(
        rows=lambda: _queryset().values_list(*COLUMNS),
        count=lambda: Transfer.objects.filter(REVIEW_TRANSFER_CASES).values_list("pk"),
    )


@pytest.fixture
def transfers():
    start = datetime(2026, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
    for n in range(7):
        Transfer.objects.create(
            network="bitcoin",
            txid=f"tx%{n}'",
            index=n,
            address="bc1qaddress",
            asset="BTC",
            amount_base=Decimal(123456789 + n),
            first_seen_at=start - timedelta(minutes=n),
            last_seen_at=start,
            kind="resolved" if n == 3 else "unallocated",
        )


def test_pages_and_count_are_the_querysets(transfers):
    listed = _listed()
    expected = list(_queryset().values_list(*COLUMNS))

    assert listed.count() == len(expected) == 6
    assert listed[0:4] == expected[:4]
    assert listed[4:8] == expected[4:]
    assert listed[6:10] == []
    assert listed.page(offset=1, limit=2) == expected[1:3]
    assert isinstance(listed[0:1][0][1], datetime) and listed[0:1][0][1].tzinfo is not None
    assert listed[0:1][0][3] == Decimal(123456795)


def test_paginator_reads_it_as_a_queryset(transfers):
    ours = Paginator(_listed(), 4).get_page(2)
    theirs = Paginator(_queryset().values_list(*COLUMNS), 4).get_page(2)

    assert ours.object_list == list(theirs.object_list)
    assert (ours.number, ours.paginator.count, ours.paginator.num_pages) == (2, 6, 2)


def test_rows_are_given_to_make(transfers):
    listed = rows.FixedList(
        rows=lambda: _queryset().values_list("txid"),
        count=lambda: _queryset().values_list("pk"),
        make=lambda row: row[0],
    )

    assert listed[0:2] == list(_queryset().values_list("txid", flat=True)[:2])


def test_each_read_is_one_statement_with_the_fixed_values_written_in(transfers):
    listed = _listed()
    listed.count()  # compiled once, before the counted reads

    with CaptureQueriesContext(connection) as captured:
        listed.count()
        listed[0:3]

    assert len(captured.captured_queries) == 2
    if connection.vendor == "postgresql":
        assert all("'unallocated'" in query["sql"] for query in captured.captured_queries)


@pytest.mark.parametrize("index", [0, slice(0, 4, 2), slice(2, None)])
def test_only_a_page_is_given(index):
    with pytest.raises(TypeError):
        _listed()[index]
