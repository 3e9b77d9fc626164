"""The outbox's rows, made in one pass in the view (issue 27), are the HTML the template's
loop made: in English and Spanish, every status, the retry form for failed messages (and
only for those who may retry), long texts cut like `truncatechars` and user-given words
escaped."""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission
from django.template import engines
from django.test import Client
from django.urls import reverse
from django.utils import translation

from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from tests.factories import make_user

pytestmark = pytest.mark.django_db

OUTBOX = "/backoffice/outbox/"
NASTY = "<script>&\"'"

# The template's loop before the rows were made in the view.
TEMPLATE_ROWS = """{% load i18n %}{% translate "Created" as label_created %}{% translate "Event" as label_event %}{% translate "To" as label_to %}{% translate "Language" as label_language %}{% translate "Subject" as label_subject %}{% translate "Status" as label_status %}{% translate "Attempts" as label_attempts %}{% translate "Next / sent" as label_next_sent %}{% translate "Last error" as label_last_error %}{% for message in messages %}<tr>
      <td data-label="{{ label_created }}">{{ message.created_at|date:"Y-m-d H:i" }}</td>
      <td data-label="{{ label_event }}"><code>{{ message.event }}</code></td>
      <td data-label="{{ label_to }}">{{ message.to_email }}</td>
      <td data-label="{{ label_language }}">{{ message.language }}</td>
      <td data-label="{{ label_subject }}">{{ message.subject|truncatechars:70 }}</td>
      <td data-label="{{ label_status }}"><span class="badge {% if message.status == 'sent' %}ok{% elif message.status == 'failed' %}bad{% else %}muted{% endif %}">{{ message.get_status_display }}</span></td>
      <td data-label="{{ label_attempts }}">{{ message.attempts }}</td>
      <td data-label="{{ label_next_sent }}">{% if message.sent_at %}{{ message.sent_at|date:"Y-m-d H:i" }}{% else %}{{ message.next_attempt_at|date:"Y-m-d H:i" }}{% endif %}</td>
      <td data-label="{{ label_last_error }}">{{ message.last_error|truncatechars:80|default:"—" }}</td>
      <td>{% if can_retry and message.status == 'failed' %}<form method="post" action="{% url 'notifications:outbox_retry' message.pk %}">{% csrf_token %}<button type="submit" class="small">{% translate "Retry" %}</button></form>{% endif %}</td>
    </tr>{% endfor %}"""  # noqa: E501


def _operator(*codenames):
    user = make_user(staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="notifications", codename__in=codenames)
    )
    return user


def _messages():
    account = make_user()
    moment = datetime(2026, 12, 3, 17, 4, 59, tzinfo=UTC)
    rows = [
        # (status, subject, last_error, sent)
        (OutboxStatus.PENDING, NASTY, "", False),
        (OutboxStatus.SENT, "x" * 70, "", True),
        (OutboxStatus.FAILED, "y" * 71 + NASTY, "E" * 81 + NASTY, False),
        (OutboxStatus.FAILED, "Café déjà vu " * 8, "é" * 79 + "e\u0301", False),
    ]
    for i, (status, subject, error, sent) in enumerate(rows):
        OutboxMessage.objects.create(
            dedupe_key=f"rows-{i}",
            account=account,
            event=f"event{NASTY}",
            language="es" if i % 2 else "en",
            to_email=f"a{i}{NASTY}@example.org",
            subject=subject,
            body_text="body",
            status=status,
            attempts=i,
            last_error=error,
            created_at=moment.replace(minute=i),
            next_attempt_at=moment.replace(hour=18, minute=i),
            sent_at=moment.replace(hour=19) if sent else None,
        )


def _tbody(html: str) -> str:
    return html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("can_retry", [True, False])
def test_the_outbox_rows_are_what_the_template_made(language, can_retry):
    _messages()
    codenames = ("view_outbox", "retry_outbox") if can_retry else ("view_outbox",)
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(_operator(*codenames))

    page = client.get(OUTBOX)

    assert page.status_code == 200
    rows = _tbody(page.content.decode())
    token = (
        rows.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
        if (can_retry)
        else ""
    )
    with translation.override(language):
        expected = (
            engines["django"]
            .from_string(TEMPLATE_ROWS)
            .render(
                {
                    "messages": OutboxMessage.objects.order_by("-created_at", "-id"),
                    "can_retry": can_retry,
                    "csrf_token": token,
                }
            )
        )
    assert rows == expected
    assert rows.count("<tr>") == 4
    assert ("csrfmiddlewaretoken" in rows) == can_retry
    assert "<script>" not in rows


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ['data-label="Next / sent"', ">Failed<", ">Retry<", "…"]),
        ("es", ['data-label="Siguiente / enviado"', ">Fallido<", ">Reintentar<", "…"]),
    ],
)
def test_the_outbox_rows_read_in_the_visitors_language(language, words):
    _messages()
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(_operator("view_outbox", "retry_outbox"))

    rows = _tbody(client.get(OUTBOX).content.decode())

    for word in words:
        assert word in rows, word
    failed = OutboxMessage.objects.filter(status=OutboxStatus.FAILED)
    for message in failed:
        assert f'action="{reverse("notifications:outbox_retry", args=[message.pk])}"' in rows
    assert rows.count("<form ") == 2
    assert "&lt;script&gt;&amp;&quot;&#x27;" in rows
    assert "a0&lt;script&gt;&amp;&quot;&#x27;@example.org" in rows
