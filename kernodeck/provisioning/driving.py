"""Driver steps, run by the task queue outside any transaction and without row locks.

Each function reads what it needs, calls the driver (which may take minutes and talk to
machines), then applies the outcome through one service, which locks and re-checks the
state: if an operator changed the rental meanwhile, the outcome is dropped.
"""

import logging
from datetime import datetime

from kernodeck.core.errors import ServiceError
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import node_health, selectors, services
from kernodeck.provisioning.drivers import driver_for
from kernodeck.provisioning.drivers.answers import clean_text
from kernodeck.provisioning.drivers.base import DriverError, NodeHealth
from kernodeck.provisioning.models import Node

logger = logging.getLogger(__name__)


def _driver(spec):
    return driver_for(selectors.rental_driver_code(spec))


def rental_prepare_run(*, order_id: int, last_attempt: bool = True) -> None:
    """prepare(), then deliver(); a driver that returns access activates the rental."""
    order = Order.objects.get(pk=order_id)
    if order.rental_state != RentalState.PREPARING:
        return
    spec = selectors.rental_spec(order=order)
    driver = _driver(spec)
    try:
        result = driver.prepare(spec)
        node_health.rental_step_record(order=order, step="prepare", detail=result.detail)
        access = driver.deliver(spec) if result.done else None
    except DriverError as error:
        node_health.rental_step_record(order=order, step="prepare", detail=error.message)
        node_health.driver_error_record(error=error, final=last_attempt)
        if error.retryable and not last_attempt:
            raise
        services.rental_fail(
            order=order, reason=str(services.MACHINE_FAILED), detail=error.message, actor=None
        )
        return
    if access is None:
        return  # a person delivers (manual driver)
    try:
        services.rental_deliver(
            order=order,
            host=access.host,
            port=access.port,
            user=access.user,
            url=access.url,
            token=access.token,
            actor=None,
        )
    except ServiceError as error:
        services.rental_fail(order=order, reason=error.message, actor=None)


def rental_extend_run(*, order_id: int) -> None:
    order = Order.objects.get(pk=order_id)
    if order.rental_state not in {RentalState.ACTIVE, RentalState.SUSPENDED}:
        return
    spec = selectors.rental_spec(order=order)
    try:
        result = _driver(spec).extend(spec, order.ends_at)
        node_health.rental_step_record(order=order, step="extend", detail=result.detail)
    except DriverError as error:
        node_health.rental_step_record(order=order, step="extend", detail=error.message)
        node_health.driver_error_record(error=error, final=False)
        raise


def rental_release_run(*, order_id: int) -> int:
    """Release an ended rental node by node; each node that confirms frees its slots there.

    A node that cannot be reached or refuses keeps its slots held and its error recorded;
    nothing is raised, because the sweep (`tasks.rental_releases_tick`) retries every
    pending release each minute, for as long as it takes. Returns the nodes confirmed.
    """
    order = Order.objects.get(pk=order_id)
    confirmed = 0
    for node_id in selectors.release_pending_nodes(order):
        spec = selectors.rental_spec(order=order, node_ids=[node_id])
        if not spec.allocation:
            continue
        try:
            result = _driver(spec).release(spec)
        except DriverError as error:
            node_health.rental_step_record(order=order, step="release", detail=error.message)
            services.rental_release_failed(order=order, node_id=node_id, reason=error.message)
            node_health.driver_error_record(error=error, final=False)
            continue
        node_health.rental_step_record(order=order, step="release", detail=result.detail)
        if result.done:
            services.rental_release_confirm(order=order, node_id=node_id, detail=result.detail)
            confirmed += 1
    return confirmed


def rentals_release_sweep() -> int:
    """Every pending release once, then the overdue alerts. Returns the nodes confirmed."""
    confirmed = 0
    for order_id in services.rentals_release_pending():
        try:
            confirmed += rental_release_run(order_id=order_id)
        except Exception:  # one rental's trouble never stops the others' releases
            logger.exception("release of order %s failed", order_id)
    services.releases_overdue_alert()
    return confirmed


def nodes_inspect(*, now: datetime | None = None) -> int:
    """Ask each node's driver for a health report; store it. Returns nodes inspected."""
    count = 0
    for node in Node.objects.exclude(state="retired"):
        try:
            health = driver_for(node.driver).inspect(selectors.node_ref(node))
        except DriverError as error:
            logger.warning("inspect %s failed: %s", node.name, error.message)
            health = NodeHealth(ok=False, detail=error.message, data={"problem": "bad_answer"})
        except Exception as error:  # one node's nonsense never stops the others' inspection
            logger.exception("inspect %s failed", node.name)
            health = NodeHealth(
                ok=False,
                detail=clean_text(f"{type(error).__name__}: {error}"),
                data={"problem": "bad_answer"},
            )
        try:
            services.node_health_record(node=node, health=health)
        except Exception:
            logger.exception("recording the health of %s failed", node.name)
            continue
        count += 1
    return count
