"""The audit list's rows, made in one pass by `{% audit_result_list %}` (issue 27), are the
HTML Django admin's own `{% result_list %}` makes: in English and Spanish, with an empty
actor, IP and action, words that need escaping and the page's filters kept in the links."""

from datetime import UTC, datetime

import pytest
from django.test import Client

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
