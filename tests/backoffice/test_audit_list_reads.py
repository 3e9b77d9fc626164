"""The audit list's reads (issue 27): the whole trail's page and count from fixed
statements, the rows as values, both filters' choices from one statement that steps through
the columns' indexes, and the targets' orders and payments from fixed statements. Each is
held to what the ORM (or the admin's own code) gives on the same rows."""

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Count, Max, Min
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from kernodeck.backoffice.admin import AuditEventAdmin
from kernodeck.backoffice.templatetags import audit_list
from kernodeck.core import selectors
from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import Order
from kernodeck.orders.selectors import order_references
from kernodeck.payments.models import PaymentIntent
from kernodeck.payments.selectors import intent_order_references
from tests.budgets.data import build
from tests.factories import make_user

pytestmark = pytest.mark.django_db

AUDIT = "/backoffice/core/auditevent/"
NOON = datetime(2026, 12, 3, 12, tzinfo=UTC)
# Values whose order depends on the database's collation, and an empty one.
TARGET_TYPES = ("orders.order", "accounts.user", "payments.paymentintent")
ODD_VALUES = ["order.paid", "B", "a", "é", "Z", "", "order.paid", "a b", "a-b", "Order.paid"]


def _events(count: int, *, actor=None, start=NOON, step=timedelta(seconds=1)) -> None:
    AuditEvent.objects.bulk_create(
        AuditEvent(
            created_at=start + i * step,
            actor=actor if i % 3 else None,
            action=f"test.action_{i % 3}",
            # Each action on all three kinds of target, even among 10 events.
            target_type=TARGET_TYPES[i // 3 % 3],
            target_id=str(uuid.UUID(int=i)) if i // 3 % 3 == 2 else str(i),
            ip_address="203.0.113.9" if i % 2 else None,
        )
        for i in range(count)
    )


def _operator(language="en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_user(staff=True, is_superuser=True))
    return client


def test_the_whole_trails_pages_and_summary_are_the_orms():
    someone = make_user(email="a&b@example.org")
    _events(25, actor=someone)
    # Two events at the same moment: the key orders them, as in the admin's ordering.
    AuditEvent.objects.filter(target_id__in=["3", "4"]).update(created_at=NOON)
    orm = AuditEvent.objects.order_by(*selectors.AUDIT_LIST_ORDER).values_list(
        *selectors.AUDIT_LIST_VALUES
    )

    pages, first, last = selectors.audit_trail_listed()

    summary = AuditEvent.objects.aggregate(c=Count("*"), f=Min("created_at"), l=Max("created_at"))
    assert (pages.count(), first, last) == (summary["c"], summary["f"], summary["l"])
    for offset, limit in ((0, 10), (10, 10), (20, 10), (30, 10), (0, 200)):
        page = pages[offset : offset + limit]
        assert [tuple(row) for row in page] == list(orm[offset : offset + limit])
        assert all(isinstance(row, selectors.AuditListRow) for row in page)
    assert pages[0:1][0].actor_email is None
    assert pages[1:2][0].actor_email == "a&b@example.org"


def test_an_empty_trail_reads_as_empty():
    pages, first, last = selectors.audit_trail_listed()

    assert (pages.count(), first, last, pages[0:100]) == (0, None, None, [])
    assert selectors.audit_trail_values() == {"action": [], "target_type": []}


def test_the_filters_values_are_the_orms_distinct_values_in_its_order():
    for i, value in enumerate(ODD_VALUES):
        AuditEvent.objects.create(
            created_at=NOON, action=value, target_type=ODD_VALUES[-1 - i], target_id=str(i)
        )

    found = selectors.audit_trail_values()

    for column in ("action", "target_type"):
        distinct = AuditEvent.objects.distinct().order_by(column).values_list(column, flat=True)
        assert found[column] == list(distinct)
    assert "" in found["action"]
    assert len(found["action"]) == len(set(ODD_VALUES))


@pytest.mark.parametrize("unit", ["day", "month", "year"])
def test_the_whole_trails_units_are_the_orms_in_utc(unit):
    """On PostgreSQL in UTC, what `datetimes()` answers, from one step per unit found;
    elsewhere (SQLite, another time zone) nothing, and the ORM's statement is used."""
    for moment in [
        datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2024, 3, 1, tzinfo=UTC),
        datetime(2024, 12, 31, 23, 0, tzinfo=UTC),
        datetime(2026, 1, 31, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 1, 31, 12, tzinfo=UTC),
        datetime(2026, 3, 3, 12, tzinfo=UTC),
    ]:
        AuditEvent.objects.create(
            created_at=moment, action="order.paid", target_type="orders.order", target_id="1"
        )

    found = selectors.audit_trail_units(unit)
    with timezone.override("Europe/Madrid"):
        elsewhere = selectors.audit_trail_units(unit)

    assert elsewhere is None
    if connection.vendor != "postgresql":
        assert found is None
        return
    orm = list(AuditEvent.objects.datetimes("created_at", unit))
    assert found == orm
    assert [moment.tzinfo for moment in found] == [moment.tzinfo for moment in orm]
    assert len(found) == {"day": 5, "month": 5, "year": 2}[unit]


def _filters(html: str) -> str:
    return html.split('id="changelist-filter"', 1)[1].split("</nav>", 1)[0]


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize(
    "query",
    [
        "",
        "?action=B",
        "?_facets=True",
        "?_facets=True&target_type=a&q=order",
        "?o=1&action=%C3%A9",
    ],
)
def test_the_filters_are_the_admins_own(monkeypatch, language, query):
    for i, value in enumerate(ODD_VALUES):
        AuditEvent.objects.create(
            created_at=NOON, action=value, target_type=ODD_VALUES[-1 - i], target_id=str(i)
        )
    client = _operator(language)

    ours = client.get(AUDIT + query)
    monkeypatch.setattr(AuditEventAdmin, "list_filter", ["action", "target_type"])
    admins = client.get(AUDIT + query)

    assert ours.status_code == admins.status_code == 200
    assert _filters(ours.content.decode()) == _filters(admins.content.decode())
    assert bool(re.search(r"\(\d+\)</a>", _filters(ours.content.decode()))) == ("_facets" in query)


@pytest.mark.parametrize("query", ["", "?_facets=True", "?_facets=True&action=test.action_1"])
def test_both_filters_values_are_read_in_one_statement_per_request(query):
    _events(12)
    client = _operator()

    with CaptureQueriesContext(connection) as queries:
        client.get(AUDIT + query)

    statements = [q["sql"] for q in queries.captured_queries]
    assert sum("WITH RECURSIVE" in sql for sql in statements) == 1
    assert not any("DISTINCT" in sql for sql in statements)


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize(
    ("events", "query", "rows"),
    [
        (230, "?p=2", 100),
        (230, "?p=3", 30),
        (230, "?all=", 100),  # more than the admin shows at once: the first page
        (150, "?all=", 150),
        (150, "?p=2", 50),
        (330, "?action=test.action_1&p=2", 10),
        (230, "?o=-1&p=2", 100),
        (230, "?o=3.1", 100),
    ],
)
def test_every_page_of_rows_is_the_admins_own(monkeypatch, language, events, query, rows):
    """Past the first page and with every event shown, through the fixed statements and
    through the ORM's values (a filter, another order), against the admin's own rows."""
    _events(events, actor=make_user(email="<b>@example.org"))
    client = _operator(language)

    ours = client.get(AUDIT + query)
    monkeypatch.setattr(audit_list, "COLUMNS", ["not", "these"])  # the admin's own rows
    admins = client.get(AUDIT + query)

    assert ours.status_code == admins.status_code == 200
    table = ours.content.decode().split('id="result_list"', 1)[1].split("</table>", 1)[0]
    assert table == admins.content.decode().split('id="result_list"', 1)[1].split("</table>")[0]
    assert table.count('<tr><th class="field-created_at') == rows


def test_the_popup_list_keeps_the_admins_own_rows():
    _events(3)
    client = _operator()

    response = client.get(AUDIT, {"_popup": "1", "_to_field": "id"})

    assert response.status_code == 200
    assert not response.context["cl"].rows_are_values
    assert isinstance(response.context["cl"].result_list[0], AuditEvent)


def test_the_target_words_read_orders_and_payments_as_the_orm_does():
    build(3)
    intents = dict(PaymentIntent.objects.values_list("pk", "order__reference"))
    assert None in intents.values()  # a top-up's

    assert intent_order_references([*intents, uuid.uuid4()]) == intents
    assert intent_order_references([]) == {}
    orders = dict(Order.objects.values_list("pk", "reference"))
    assert order_references([*orders, 10**12]) == orders
    assert order_references([]) == {}


PAGES = [
    "",
    "?p=2",
    "?action=test.action_1",
    "?q=test.action_2",
    "?_facets=True",
    "?o=1",
    "?created_at__year=2026&created_at__month=12",
    "?all=",
]


def test_the_audit_list_asks_as_many_queries_at_10_as_at_1000_events():
    """A query per event or per page row would show here: the counts are the same at both
    sizes, and the whole trail's first page is the session's and account's queries and
    five statements: both filters' values, the count with the first and last moments, the
    page with its actors, the orders' and the payments' references."""
    client = _operator()
    client.get(AUDIT)  # the session read (from the database, or its cache) for the rest
    actor = make_user()
    counts, statements = {}, {}
    for size in (10, 1000):
        AuditEvent.objects.all().delete()
        _events(size, actor=actor)
        for page in PAGES:
            with CaptureQueriesContext(connection) as queries:
                response = client.get(AUDIT + page)
            assert response.status_code == 200  # a page past the last: the first, as the admin
            counts[size, page] = len(queries.captured_queries)
            statements[size, page] = [
                q["sql"]
                for q in queries.captured_queries
                if "core_auditevent" in q["sql"] or "ANY(" in q["sql"] or "json_each" in q["sql"]
            ]
    assert all(counts[10, page] == counts[1000, page] for page in PAGES), str(counts)
    assert len(statements[10, ""]) == len(statements[1000, ""]) == 5, statements
    assert len(statements[1000, "?p=2"]) == 5
