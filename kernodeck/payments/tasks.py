import logging

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import HUEY, db_periodic_task, db_task
from huey.exceptions import TaskLockedException

from kernodeck.payments import selectors, services, watching

logger = logging.getLogger(__name__)


@db_periodic_task(crontab(minute="*"))
def refresh_rates():
    """Fetch exchange rates every minute, so they stay younger than KERNODECK_RATE_MAX_AGE."""
    services.rates_refresh()


@db_periodic_task(crontab(minute="*"))
def expire_intents():
    """Expire what nothing paid, even while no watcher runs."""
    watching.payment_intents_expire()


# One watcher pass at a time, across every worker and process sharing the queue: a pass
# that runs long is not joined by the next tick's, nor by an early pass after "I have
# paid" (that one's rescan request stays and the running or next pass honours it). Kept
# in the queue's storage, the lock is flushed when the consumer starts (HUEY "consumer":
# "flush_locks"), so a killed worker does not hold it for ever.
WATCH_LOCK = HUEY.lock_task("watch-chains")


def watch_exclusively(watch, *args) -> bool:
    """Run one pass unless another is running; False when it was skipped."""
    try:
        with WATCH_LOCK:
            watch(*args)
    except TaskLockedException:
        logger.info("watcher pass skipped: the previous pass is still running")
        return False
    return True


@db_task()
def watch_chains():
    """One pass of every configured watcher and the reconciliation."""
    watch_exclusively(watching.watch_all)


@db_task()
def watch_network(network: str):
    """An early pass over one network (after "I have paid"); its failures stay in it."""
    watch_exclusively(watching.watch_network_isolated, network)


@db_periodic_task(crontab(minute="*"))
def watch_chains_tick():
    """Watch every minute, and once more half-way (default interval: 30 s)."""
    watch_exclusively(watching.watch_all)
    interval = settings.KERNODECK_WATCH_INTERVAL
    if 0 < interval < 60:
        watch_chains.schedule(delay=interval)


@db_periodic_task(crontab(minute="*/5"))
def chain_health_check():
    for item in selectors.chain_states():
        if item["configured"] and not item["healthy"]:
            state = item["state"]
            logger.error(
                "%s watcher unhealthy: last success %s, last error %s",
                item["network"],
                state.last_success_at if state else None,
                state.last_error if state else "never ran",
            )
