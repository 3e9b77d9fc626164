import logging

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import HUEY, db_periodic_task, db_task
from huey.exceptions import TaskLockedException

from kernodeck.payments import selectors, services, watching
from kernodeck.payments.chains.adapters import configured_networks

logger = logging.getLogger(__name__)


@db_periodic_task(crontab(minute="*"))
def refresh_rates():
    """Fetch exchange rates every minute, so they stay younger than KERNODECK_RATE_MAX_AGE."""
    services.rates_refresh()


@db_periodic_task(crontab(minute="*"))
def expire_intents():
    """Expire what nothing paid, even while no watcher runs."""
    watching.payment_intents_expire()


# One pass per network at a time, across every worker and process sharing the queue: a
# network's pass that runs long is not joined by the next tick's, nor by an early pass after
# "I have paid" (that one's rescan request stays and the running or next pass honours it).
# Each network has its own lock and its own task, so a slow or hung chain API (bounded by
# KERNODECK_WATCH_PASS_DEADLINE) holds only its own network's passes. Kept in the queue's
# storage, the locks are flushed when the consumer starts (HUEY "consumer": "flush_locks"),
# so a killed worker does not hold one for ever.
def network_lock(network: str):
    """The queue's lock on one network's passes (a context manager)."""
    return HUEY.lock_task(f"watch-chains:{network}")


def watch_exclusively(network: str) -> dict | None:
    """One pass over `network` unless one is running already; None when it was skipped."""
    try:
        with network_lock(network):
            return watching.watch_network_isolated(network)
    except TaskLockedException:
        logger.info("%s watcher pass skipped: its previous pass is still running", network)
        return None


@db_task()
def watch_network(network: str):
    """One pass over one network; its failures, and its slowness, stay in it."""
    watch_exclusively(network)


@db_task()
def watch_chains():
    """A pass of every configured network, each its own task (and lock)."""
    for network in configured_networks():
        watch_network(network)


@db_periodic_task(crontab(minute="*"))
def watch_chains_tick():
    """Watch every minute, and once more half-way (default interval: 30 s)."""
    watch_chains()
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
