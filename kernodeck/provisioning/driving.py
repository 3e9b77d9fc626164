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
from kernodeck.provisioning.drivers.base import DriverError
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
        services.rental_fail(order=order, reason=error.message, actor=None)
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


def rental_release_run(*, order_id: int) -> None:
    order = Order.objects.get(pk=order_id)
    if order.rental_state != RentalState.ENDED:
        return
    spec = selectors.rental_spec(order=order, include_released=True)
    try:
        result = _driver(spec).release(spec)
        node_health.rental_step_record(order=order, step="release", detail=result.detail)
    except DriverError as error:
        node_health.rental_step_record(order=order, step="release", detail=error.message)
        node_health.driver_error_record(error=error, final=False)
        raise


def nodes_inspect(*, now: datetime | None = None) -> int:
    """Ask each node's driver for a health report; store it. Returns nodes inspected."""
    count = 0
    for node in Node.objects.exclude(state="retired"):
        try:
            health = driver_for(node.driver).inspect(selectors.node_ref(node))
        except DriverError as error:
            logger.warning("inspect %s failed: %s", node.name, error.message)
            continue
        services.node_health_record(node=node, health=health)
        count += 1
    return count
