"""Delivery: an SMTP failure is recorded and retried with backoff; operators retry failed ones."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail

from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.notifications import services
from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from kernodeck.notifications.services import email_enqueue
from tests.factories import make_user
from tests.notifications.conftest import FAILING_BACKEND, LOCMEM_BACKEND

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
CONTEXT = {"amount_usd": "100.00", "balance_usd": "100.00"}


def _enqueue(send_after_commit, key="k"):
    with send_after_commit():
        return email_enqueue(
            account=make_user(preferred_language="en"),
            event="topup_credited",
            context=CONTEXT,
            dedupe_key=key,
        )


def test_an_smtp_failure_is_recorded_and_the_sweep_sends_it_after_the_backoff(
    settings, send_after_commit
):
    clock.freeze(NOW)
    settings.EMAIL_BACKEND = FAILING_BACKEND

    message = _enqueue(send_after_commit)

    message.refresh_from_db()
    assert message.status == OutboxStatus.PENDING
    assert message.attempts == 1
    assert message.last_error == "SMTPServerDisconnected: Connection unexpectedly closed (test)"
    assert message.next_attempt_at == NOW + timedelta(minutes=1)
    assert mail.outbox == []

    # Not due yet: the sweep leaves it alone even though the server is back.
    settings.EMAIL_BACKEND = LOCMEM_BACKEND
    clock.freeze(NOW + timedelta(seconds=59))
    assert services.outbox_send_due() == 0
    assert mail.outbox == []

    clock.freeze(NOW + timedelta(minutes=1))
    assert services.outbox_send_due() == 1
    assert services.outbox_send_due() == 0

    message.refresh_from_db()
    assert (message.status, message.attempts, message.last_error) == ("sent", 2, "")
    assert message.sent_at == NOW + timedelta(minutes=1)
    assert len(mail.outbox) == 1
    assert mail.outbox[0].body == message.body_text


def test_the_backoff_doubles_and_the_message_fails_after_the_last_attempt(
    settings, send_after_commit
):
    clock.freeze(NOW)
    settings.EMAIL_BACKEND = FAILING_BACKEND
    message = _enqueue(send_after_commit)
    waits = []
    moment = NOW
    for _attempt in range(services.MAX_ATTEMPTS - 1):
        message.refresh_from_db()
        waits.append(int((message.next_attempt_at - moment).total_seconds()))
        moment = message.next_attempt_at
        clock.freeze(moment)
        services.outbox_send_due()

    message.refresh_from_db()
    assert waits == [60, 120, 240, 480, 960, 1920, 3600]
    assert message.attempts == services.MAX_ATTEMPTS
    assert message.status == OutboxStatus.FAILED
    # A failed message waits for an operator: the sweep no longer touches it.
    clock.freeze(moment + timedelta(days=2))
    assert services.outbox_send_due() == 0
    message.refresh_from_db()
    assert message.attempts == services.MAX_ATTEMPTS


def test_an_operator_retry_gives_a_failed_message_a_fresh_start(settings, send_after_commit):
    clock.freeze(NOW)
    settings.EMAIL_BACKEND = FAILING_BACKEND
    message = _enqueue(send_after_commit)
    OutboxMessage.objects.filter(pk=message.pk).update(status=OutboxStatus.FAILED, attempts=8)
    operator = make_user(staff=True)
    settings.EMAIL_BACKEND = LOCMEM_BACKEND

    with send_after_commit():
        services.outbox_retry(message_id=message.pk, actor=operator)

    message.refresh_from_db()
    assert (message.status, message.attempts) == (OutboxStatus.SENT, 1)
    assert len(mail.outbox) == 1
    event = AuditEvent.objects.get(action="notifications.outbox_retried")
    assert event.actor == operator
    assert event.before == {"status": "failed", "attempts": 8}
    assert event.after == {"status": "pending", "attempts": 0}


def test_only_a_failed_message_can_be_retried(send_after_commit):
    message = _enqueue(send_after_commit)
    operator = make_user(staff=True)

    with pytest.raises(services.Conflict):
        services.outbox_retry(message_id=message.pk, actor=operator)
    with pytest.raises(services.NotFound):
        services.outbox_retry(message_id=message.pk + 1000, actor=operator)

    message.refresh_from_db()
    assert (message.status, message.attempts) == (OutboxStatus.SENT, 1)
    assert len(mail.outbox) == 1
    assert not AuditEvent.objects.filter(action="notifications.outbox_retried").exists()


def test_a_claimed_message_is_not_sent_twice(settings):
    clock.freeze(NOW)
    message = email_enqueue(
        account=make_user(), event="topup_credited", context=CONTEXT, dedupe_key="c"
    )  # on_commit never runs here: the row waits for the sweep

    first = services.outbox_deliver(message_id=message.pk)
    second = services.outbox_deliver(message_id=message.pk)

    assert first.status == OutboxStatus.SENT
    assert second is None
    assert len(mail.outbox) == 1


def test_a_lost_task_is_caught_by_the_sweep():
    clock.freeze(NOW)
    email_enqueue(account=make_user(), event="topup_credited", context=CONTEXT, dedupe_key="l")
    assert mail.outbox == []

    assert services.outbox_send_due() == 1
    assert len(mail.outbox) == 1
