from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task

from kernodeck.notifications import reminders, services


@db_task()
def outbox_send(message_id: int):
    """Send one e-mail now (queued after the commit that stored it)."""
    services.outbox_deliver(message_id=message_id)


@db_periodic_task(crontab(minute="*"))
def outbox_sweep():
    """Send what is due: retries after a failure, and rows whose task was lost."""
    services.outbox_send_due()


@db_periodic_task(crontab(minute="*"))
def rental_reminders():
    """Store the reminder e-mails that have come due; they are sent after commit."""
    reminders.rental_reminders_send()
