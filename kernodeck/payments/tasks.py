from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from kernodeck.payments import services


@db_periodic_task(crontab(minute="*"))
def refresh_rates():
    """Fetch exchange rates every minute, so they stay younger than KERNODECK_RATE_MAX_AGE."""
    services.rates_refresh()


@db_periodic_task(crontab(minute="*"))
def expire_intents():
    services.payment_intents_expire()
