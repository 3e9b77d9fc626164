"""The audit list's rows, made in one pass by `{% audit_result_list %}` (issue 27), are the
HTML Django admin's own `{% result_list %}` makes: in English and Spanish, with an empty
actor, IP and action, words that need escaping and the page's filters kept in the links."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.template import Context, Template
from django.template.loader import render_to_string
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import dateformat, timezone, translation
from django.utils.html import conditional_escape

from kernodeck.backoffice.templatetags import audit_list
from kernodeck.core.models import AuditEvent
from tests.factories import make_user

pytestmark = pytest.mark.django_db

AUDIT = "/backoffice/core/auditevent/"


def _table(html: str) -> str:
    return html.split('id="result_list"', 1)[1].split("</table>", 1)[0]


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("query", ["", "?action=%3Cb%3E%26", "?q=order&o=-1"])
def test_the_audit_rows_are_the_admins_own(monkeypatch, language, query):
    someone = make_user(email="a&b@example.org")
    moments = [
        datetime(2026, 12, 3, 17, 0, tzinfo=UTC),
        datetime(2026, 1, 9, 9, 41, 5, tzinfo=UTC),
    ]
    for i, (action, actor, ip) in enumerate(
        [("<b>&", someone, "203.0.113.9"), (" ", None, None), ("order.paid", someone, None)]
    ):
        AuditEvent.objects.create(
            created_at=moments[i % 2],
            actor=actor,
            action=action,
            target_type="orders.order" if i else "<i>odd</i>",
            target_id=f"<{i}>",
            ip_address=ip,
        )
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_user(staff=True, is_superuser=True))

    fast = client.get(AUDIT + query)
    monkeypatch.setattr(audit_list, "COLUMNS", ["not", "these"])  # the admin's own rows
    admin = client.get(AUDIT + query)

    assert fast.status_code == admin.status_code == 200
    assert _table(fast.content.decode()) == _table(admin.content.decode())
    assert "<tr><th" in _table(fast.content.decode())
    assert ("_changelist_filters" in _table(fast.content.decode())) == bool(query)


def _sidebar(response) -> str:
    """The sidebar `{% include "admin/nav_sidebar.html" %}` writes for this response."""
    return render_to_string(
        "admin/nav_sidebar.html",
        {"available_apps": response.context["available_apps"]},
        request=response.wsgi_request,
    )


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_sidebar_is_the_admins_own_for_each_account(language):
    """The sidebar written once is reused only for the same language, path and models: an
    operator who may only read the audit trail never gets the superuser's."""
    audit_list.SIDEBARS.clear()
    superuser = Client(HTTP_ACCEPT_LANGUAGE=language)
    superuser.force_login(make_user(staff=True, is_superuser=True))
    auditor = make_user(staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    reader = Client(HTTP_ACCEPT_LANGUAGE=language)
    reader.force_login(auditor)

    for client in (superuser, reader, superuser, reader):
        response = client.get(AUDIT)
        page = response.content.decode()
        assert _sidebar(response) in page
        assert ('href="/backoffice/orders/order/"' in page) == (client is superuser)
    assert 'id="nav-sidebar"' in page
    assert len(audit_list.SIDEBARS) == 2


def test_the_count_of_the_whole_trail_is_shown_when_a_filter_narrows_it():
    for action in ("order.paid", "order.paid", "order.created"):
        AuditEvent.objects.create(
            created_at=datetime(2026, 12, 3, 17, 0, tzinfo=UTC),
            action=action,
            target_type="orders.order",
            target_id="1",
        )
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(make_user(staff=True, is_superuser=True))

    narrowed = client.get(AUDIT, {"action": "order.created"}).content.decode()
    whole = client.get(AUDIT).content.decode()

    assert '1 result (<a href="?">3 total</a>)' in narrowed
    assert "\n1 audit event\n" in narrowed
    assert "3 audit events" in whole
    assert " total</a>" not in whole


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("moment_format", ["N j, Y, P", r"j \d\e F \d\e Y \a \l\a\s H:i", "c s"])
def test_the_moments_are_written_as_dateformat_writes_them(language, moment_format):
    """Written once per minute for the process when the format reads no seconds, for each
    moment otherwise: in both cases the text `dateformat.format` gives."""
    moments = [
        datetime(2026, 12, 3, hour, minute, second, tzinfo=UTC)
        for hour, minute, second in [(0, 0, 0), (12, 0, 5), (12, 0, 59), (9, 41, 1), (9, 41, 2)]
    ]
    with translation.override(language), timezone.override("Europe/Madrid"):
        for _ in range(2):  # the second time from what the first wrote
            moment = audit_list._moment_writer(moment_format, "-")
            assert [moment(m) for m in moments] == [
                conditional_escape(dateformat.format(timezone.localtime(m), moment_format))
                for m in moments
            ]


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize(
    ("moments", "query", "listed"),
    [
        ([], "", 1),
        ([(2026, 12, 3)], "", 0),
        ([(2026, 12, 3), (2026, 12, 4)], "", 0),
        ([(2026, 12, 3), (2026, 12, 9)], "", 1),
        ([(2026, 11, 30), (2026, 12, 9)], "", 0),
        ([(2026, 3, 3), (2026, 12, 9)], "", 1),
        ([(2025, 3, 3), (2026, 12, 9)], "", 0),
        ([(2024, 3, 3), (2026, 12, 9)], "", 1),
        ([(2025, 3, 3), (2026, 12, 9)], "?created_at__year=2026", 1),
        ([(2026, 3, 3), (2026, 12, 9)], "?created_at__year=2026&created_at__month=12", 1),
        ([(2026, 12, 9)], "?created_at__year=2026&created_at__month=12&created_at__day=9", 0),
        ([(2025, 3, 3), (2026, 12, 9)], "?action=order.paid&q=order", 0),
        ([(2024, 3, 3), (2026, 12, 9)], "?action=order.paid&q=order", 1),
    ],
)
def test_the_date_hierarchy_is_the_admins_own_from_the_counts_query(
    language, moments, query, listed
):
    """The list's first and last moments are read once, with its count, and the date
    links are those the admin's `{% date_hierarchy %}` writes; its days, months or years
    are read only when one may lie between the first and the last moment's (`listed`)."""
    moments = [datetime(year, month, day, 12, tzinfo=UTC) for year, month, day in moments]
    page, admins, queries = _date_hierarchies(language, moments, query)

    assert 'class="toplinks"' in admins
    assert admins in page
    ranges = [q["sql"] for q in queries if "MIN(" in q["sql"] and "MAX(" in q["sql"]]
    assert len(ranges) == (0 if "created_at__" in query else 1)
    assert all("COUNT(" in sql for sql in ranges)
    units = [q["sql"] for q in queries if "DISTINCT" in q["sql"] or "RECURSIVE u(" in q["sql"]]
    assert len(units) == listed
    if connection.vendor == "postgresql" and not query:  # the whole trail, in UTC
        assert not any("DISTINCT" in sql for sql in units)


@pytest.mark.parametrize(
    ("zone", "first", "last"),
    [
        # One day in Madrid, two days and two years in UTC.
        (
            "Europe/Madrid",
            datetime(2026, 12, 31, 23, 30, tzinfo=UTC),
            datetime(2027, 1, 1, 0, 10, tzinfo=UTC),
        ),
        # Two adjacent days in Madrid, one in UTC.
        (
            "Europe/Madrid",
            datetime(2026, 12, 3, 22, 30, tzinfo=UTC),
            datetime(2026, 12, 3, 23, 10, tzinfo=UTC),
        ),
        # Months apart in New York, a year apart in UTC.
        (
            "America/New_York",
            datetime(2026, 10, 5, 12, tzinfo=UTC),
            datetime(2027, 1, 1, 2, tzinfo=UTC),
        ),
    ],
)
def test_the_date_hierarchy_is_the_admins_own_in_another_time_zone(zone, first, last):
    with timezone.override(zone):
        page, admins, _queries = _date_hierarchies("en", [first, last], "")

    assert 'class="toplinks"' in admins
    assert admins in page


def _date_hierarchies(language, moments, query) -> tuple[str, str, list]:
    """The page, what the admin's own `{% date_hierarchy %}` writes for its change list,
    and the page's queries."""
    for moment in moments:
        AuditEvent.objects.create(
            created_at=moment, action="order.paid", target_type="orders.order", target_id="1"
        )
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_user(staff=True, is_superuser=True))

    with CaptureQueriesContext(connection) as queries:
        response = client.get(AUDIT + query)
    assert response.status_code == 200
    cl = response.context["cl"]
    with translation.override(language):
        admins = Template("{% load admin_list %}{% date_hierarchy cl %}").render(
            Context({"cl": cl, "opts": cl.opts})
        )
    return response.content.decode(), admins, queries.captured_queries
