"""The operators' outbox: staff with notifications.view_outbox only; retry needs retry_outbox."""

import pytest
from django.contrib.auth.models import Permission
from django.core import mail
from django.urls import reverse

from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from kernodeck.notifications.services import email_enqueue
from tests.factories import make_user

pytestmark = pytest.mark.django_db

OUTBOX = "/backoffice/outbox/"


def operator(*codenames, staff=True):
    user = make_user(staff=staff)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="notifications", codename__in=codenames)
    )
    return user


def message(n, status=OutboxStatus.PENDING):
    row = email_enqueue(
        account=make_user(preferred_language="en"),
        event="topup_credited",
        context={"amount_usd": f"{n}.00", "balance_usd": f"{n}.00"},
        dedupe_key=f"m{n}",
    )
    OutboxMessage.objects.filter(pk=row.pk).update(
        status=status, last_error="SMTPServerDisconnected: down" if status == "failed" else ""
    )
    return row


def test_the_urls_are_named():
    assert reverse("notifications:outbox") == OUTBOX
    assert reverse("notifications:outbox_retry", args=[7]) == OUTBOX + "7/retry/"


def test_signed_out_visitors_are_sent_to_sign_in(client):
    response = client.get(OUTBOX)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:signin"))


@pytest.mark.parametrize(
    "user_factory",
    [
        lambda: make_user(),  # a customer
        lambda: operator(),  # staff without the permission
        lambda: operator("view_outbox", staff=False),  # the permission, but not staff
    ],
    ids=["customer", "staff-without-permission", "non-staff-with-permission"],
)
def test_without_staff_and_permission_the_outbox_is_forbidden(client, user_factory):
    failed = message(1, OutboxStatus.FAILED)
    client.force_login(user_factory())

    assert client.get(OUTBOX).status_code == 403
    assert client.post(reverse("notifications:outbox_retry", args=[failed.pk])).status_code == 403
    failed.refresh_from_db()
    assert failed.status == OutboxStatus.FAILED


def test_staff_with_the_permission_see_every_message_and_filter_by_status(client):
    first = message(1)
    second = message(2, OutboxStatus.FAILED)
    third = message(3, OutboxStatus.FAILED)
    client.force_login(operator("view_outbox"))

    everything = client.get(OUTBOX)
    failed = client.get(OUTBOX, {"status": "failed"})

    assert everything.status_code == 200
    # The page's rows are (pk, …) tuples (selectors.OUTBOX_COLUMNS), newest first.
    listed = [row[0] for row in everything.context["page"].object_list]
    assert listed == [third.pk, second.pk, first.pk]
    assert [row[0] for row in failed.context["page"].object_list] == [third.pk, second.pk]
    assert everything.context["statuses"] == [
        ("pending", "Pending", 1),
        ("sent", "Sent", 0),
        ("failed", "Failed", 2),
    ]
    html = failed.content.decode()
    assert "SMTPServerDisconnected: down" in html
    assert "Retry" not in html  # viewing is not retrying


def test_the_outbox_is_paginated(client):
    for n in range(55):
        message(n)
    client.force_login(operator("view_outbox"))

    first = client.get(OUTBOX)
    second = client.get(OUTBOX, {"page": 2})

    assert len(first.context["page"].object_list) == 50
    assert len(second.context["page"].object_list) == 5
    assert "Page 1 of 2" in first.content.decode()


@pytest.mark.parametrize(
    "query",
    [{"status": "nonsense"}, {"page": "٣"}, {"page": "³"}, {"page": "-1"}],
)
def test_nonsense_filters_show_a_page_not_an_error(client, query):
    message(1)
    client.force_login(operator("view_outbox"))

    response = client.get(OUTBOX, query)

    assert response.status_code == 200
    assert len(response.context["page"].object_list) == 1


def test_a_failed_message_is_retried_by_an_operator_with_the_retry_permission(
    client, django_capture_on_commit_callbacks
):
    failed = message(1, OutboxStatus.FAILED)
    mail.outbox.clear()
    client.force_login(operator("view_outbox", "retry_outbox"))

    assert "Retry" in client.get(OUTBOX, {"status": "failed"}).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("notifications:outbox_retry", args=[failed.pk]))

    assert response.status_code == 302
    assert response["Location"] == OUTBOX + "?status=failed"
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == (OutboxStatus.SENT, 1)
    assert len(mail.outbox) == 1


def test_retrying_what_cannot_be_retried_says_so_and_changes_nothing(client):
    pending = message(1)
    client.force_login(operator("view_outbox", "retry_outbox"))

    response = client.post(reverse("notifications:outbox_retry", args=[pending.pk]), follow=True)
    missing = client.post(reverse("notifications:outbox_retry", args=[999999]), follow=True)

    assert "Only a failed e-mail can be retried" in response.content.decode()
    assert "No such e-mail in the outbox." in missing.content.decode()
    pending.refresh_from_db()
    assert (pending.status, pending.attempts) == (OutboxStatus.PENDING, 0)
    assert client.get(reverse("notifications:outbox_retry", args=[pending.pk])).status_code == 405


def test_a_nul_byte_in_a_filter_is_refused_at_the_edge(client):
    """NUL bytes are refused for every URL by core.middleware.InputGuardMiddleware."""
    client.force_login(operator("view_outbox"))

    response = client.get(OUTBOX, {"status": "a\x00"})

    assert response.status_code == 400
    assert "status: contains a NUL byte" in response.content.decode()
