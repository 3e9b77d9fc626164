"""The rental clock's tasks: load by id, call one function. All are safe to run twice."""

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task

from kernodeck.provisioning import driving, node_health, services

DRIVER_RETRIES = 3
# Driver steps wait 60 s, then 120 s, then 240 s between attempts (huey's backoff).
DRIVER_RETRY = {"retries": DRIVER_RETRIES, "retry_delay": 60, "retry_backoff": 2}


@db_task()
def rental_allocate_task(order_id: int):
    services.rental_allocate(order=order_id)


@db_task()
def rentals_allocate_waiting_task():
    services.rentals_allocate_waiting()


@db_task(context=True, **DRIVER_RETRY)
def rental_prepare_task(order_id: int, task=None):
    last = task is None or task.retries == 0
    driving.rental_prepare_run(order_id=order_id, last_attempt=last)


@db_task(**DRIVER_RETRY)
def rental_extend_task(order_id: int):
    driving.rental_extend_run(order_id=order_id)


@db_task()
def rental_release_task(order_id: int):
    """Right after the end; never retried by huey: the sweep below retries every minute."""
    driving.rental_release_run(order_id=order_id)


@db_periodic_task(crontab(minute="*"))
def rental_releases_tick():
    """Every minute: re-run every release no node has confirmed yet, raise overdue alerts,
    take up the steps whose worker died."""
    driving.rentals_release_sweep()
    driving.steps_lost_sweep()


@db_periodic_task(crontab(minute="*"))
def rental_clock_tick():
    """Every minute: end rentals whose period is over (catching up after an outage), then
    give freed slots to the queue."""
    services.rentals_end_due()
    services.rentals_allocate_waiting()


@db_periodic_task(crontab(minute="*/10"))
def nodes_inspect_tick():
    driving.nodes_inspect()


@db_task()
def node_inspect_task(node_id: int):
    node_health.node_inspect(node_id=node_id)


@db_task()
def node_reconcile_task(node_id: int):
    """Right after a change of a rental on the node (suspend, resume)."""
    driving.node_reconcile(node_id=node_id)


@db_periodic_task(crontab(minute="*"))
def nodes_reconcile_tick():
    """Every minute: every automated node converges to the database (keys, suspension,
    end time, accounts left behind)."""
    driving.nodes_reconcile()
