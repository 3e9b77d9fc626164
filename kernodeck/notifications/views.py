"""The operators' outbox: every e-mail with its status, and a retry for failed ones."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from kernodeck.accounts.permissions import permission_required
from kernodeck.core import pagecache
from kernodeck.core.errors import ServiceError
from kernodeck.core.links import escape_text as _escape
from kernodeck.core.links import link_maker
from kernodeck.core.listing import minute_text, truncate_chars
from kernodeck.core.signedpages import signed_page
from kernodeck.notifications import selectors, services
from kernodeck.notifications.models import OutboxStatus

MESSAGES_PER_PAGE = 50


@permission_required("notifications.view_outbox")
@signed_page
def outbox(request):
    status = request.GET.get("status", "")
    status = status if status in OutboxStatus.values else ""
    counts = selectors.outbox_counts()
    paginator = Paginator(selectors.outbox_rows(status=status), MESSAGES_PER_PAGE)
    # The page count from the counts just read (no second COUNT(*) of the same table).
    paginator.count = counts[status] if status else sum(counts.values())
    page = paginator.get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    can_retry = request.user.has_perm("notifications.retry_outbox")
    return render(
        request,
        "notifications/backoffice/outbox.html",
        {
            "page": page,
            "rows": _rows(request, page.object_list, can_retry=can_retry),
            "status": status,
            "statuses": [(code, label, counts[code]) for code, label in OutboxStatus.choices],
            "can_retry": can_retry,
        },
    )


_TONES = {OutboxStatus.SENT: "ok", OutboxStatus.FAILED: "bad"}


def _rows(request, messages, *, can_retry: bool) -> str:
    """The outbox's rows as HTML, made here in one pass from `selectors.outbox_rows`'
    tuples: the column labels, the statuses' words and the retry link made once for the
    page, every value escaped. The same HTML the template's loop made."""
    label = {
        key: _escape(text)
        for key, text in (
            ("created", _("Created")),
            ("event", _("Event")),
            ("to", _("To")),
            ("language", _("Language")),
            ("subject", _("Subject")),
            ("status", _("Status")),
            ("attempts", _("Attempts")),
            ("next_sent", _("Next / sent")),
            ("last_error", _("Last error")),
        )
    }
    statuses = {value: _escape(text) for value, text in OutboxStatus.choices}
    retry_url = link_maker("notifications:outbox_retry")
    retry = ""
    rows = []
    for (
        pk,
        created_at,
        event,
        to_email,
        language,
        subject,
        status,
        attempts,
        sent_at,
        next_attempt_at,
        last_error,
    ) in messages:
        if can_retry and status == OutboxStatus.FAILED:
            retry = retry or (
                '<input type="hidden" name="csrfmiddlewaretoken" '
                f'value="{_escape(pagecache.form_token(request))}">'
                '<button type="submit" class="small">'
                f"{_escape(_('Retry'))}</button></form>"
            )
            action = f'<form method="post" action="{_escape(retry_url(pk))}">{retry}'
        else:
            action = ""
        rows.append(
            "<tr>\n"
            f'      <td data-label="{label["created"]}">{minute_text(created_at)}</td>\n'
            f'      <td data-label="{label["event"]}"><code>{_escape(event)}</code></td>\n'
            f'      <td data-label="{label["to"]}">{_escape(to_email)}</td>\n'
            f'      <td data-label="{label["language"]}">{_escape(language)}</td>\n'
            f'      <td data-label="{label["subject"]}">{_escape(truncate_chars(subject, 70))}'
            "</td>\n"
            f'      <td data-label="{label["status"]}"><span class="badge '
            f'{_TONES.get(status, "muted")}">{statuses.get(status) or _escape(status)}</span>'
            "</td>\n"
            f'      <td data-label="{label["attempts"]}">{attempts}</td>\n'
            f'      <td data-label="{label["next_sent"]}">'
            f"{minute_text(sent_at or next_attempt_at)}</td>\n"
            f'      <td data-label="{label["last_error"]}">'
            f"{_escape(truncate_chars(last_error, 80) or '—')}</td>\n"
            f"      <td>{action}</td>\n"
            "    </tr>"
        )
    return mark_safe("".join(rows))  # noqa: S308 - every value in it is escaped


@permission_required("notifications.retry_outbox")
@require_POST
def outbox_retry(request, message_id: int):
    try:
        services.outbox_retry(message_id=message_id, actor=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "The e-mail is queued again.")
    return redirect(reverse("notifications:outbox") + "?status=failed")
