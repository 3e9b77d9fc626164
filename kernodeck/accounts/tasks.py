from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from kernodeck.accounts import services


@db_periodic_task(crontab(minute="17", hour="3"))
def clear_expired_sessions():
    """Delete expired sign-in sessions once a day."""
    services.sessions_clear_expired()
