"""The operators' outbox: every e-mail with its status, and a retry for failed ones."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from kernodeck.accounts.permissions import permission_required
from kernodeck.core.errors import ServiceError
from kernodeck.notifications import selectors, services
from kernodeck.notifications.models import OutboxStatus

MESSAGES_PER_PAGE = 50


@permission_required("notifications.view_outbox")
def outbox(request):
    status = request.GET.get("status", "")
    status = status if status in OutboxStatus.values else ""
    counts = selectors.outbox_counts()
    page = Paginator(selectors.outbox_messages(status=status), MESSAGES_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "notifications/backoffice/outbox.html",
        {
            "page": page,
            "status": status,
            "statuses": [(code, label, counts[code]) for code, label in OutboxStatus.choices],
            "can_retry": request.user.has_perm("notifications.retry_outbox"),
        },
    )


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
