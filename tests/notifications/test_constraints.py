"""Every constraint of notifications that a write can hit, and what answers when it does.

constraint (notifications_…)     kind      write path → answer
-------------------------------  --------  ---------------------------------------------------
OutboxMessage.dedupe_key unique  internal  services.email_enqueue, called by services and
                                           tasks: a repeat, even at the same moment from
                                           another worker, returns the first row (the
                                           IntegrityError is caught in a savepoint)
outbox_status_valid              internal  outbox_deliver writes OutboxStatus values only
outbox_sent_has_time             internal  outbox_deliver sets sent_at with status "sent";
                                           delivering again sends nothing more
"""

import pytest
from django.core import mail

from kernodeck.notifications import services
from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from tests.constraint_races import needs_postgres, race, unexpected
from tests.factories import make_user


def _enqueue(account, key="welcome:1"):
    return services.email_enqueue(
        account=account,
        event="topup_credited",
        context={"amount_usd": "100.00", "balance_usd": "100.00"},
        dedupe_key=key,
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_mail_enqueued_by_workers_at_the_same_moment_is_one_row():
    needs_postgres()
    account = make_user()
    outcomes = race(lambda i: _enqueue(account).pk, 5)
    assert unexpected(outcomes) == []
    assert len(set(outcomes)) == 1
    assert OutboxMessage.objects.filter(dedupe_key="welcome:1").count() == 1


@pytest.mark.django_db
def test_a_mail_enqueued_twice_is_one_row():
    account = make_user()
    assert _enqueue(account).pk == _enqueue(account).pk
    assert OutboxMessage.objects.filter(dedupe_key="welcome:1").count() == 1


@pytest.mark.django_db
def test_a_mail_delivered_twice_is_sent_once_with_its_time():
    message = _enqueue(make_user())
    mail.outbox.clear()
    services.outbox_deliver(message_id=message.pk)
    services.outbox_deliver(message_id=message.pk)
    message.refresh_from_db()
    assert message.status == OutboxStatus.SENT and message.sent_at is not None
    assert len(mail.outbox) == 1
    assert set(OutboxMessage.objects.values_list("status", flat=True)) <= set(OutboxStatus.values)
