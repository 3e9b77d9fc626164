"""Driver steps, run by the task queue outside any transaction and without row locks.

Each function reads what it needs, calls the driver (which may take minutes and talk to
machines), then applies the outcome through one service, which locks and re-checks the
state: if an operator changed the rental meanwhile, the outcome is dropped.
"""

import hashlib
import logging
from dataclasses import replace
from datetime import datetime

from kernodeck.core.errors import ServiceError
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import node_health, selectors, services
from kernodeck.provisioning.drivers import driver_for
from kernodeck.provisioning.drivers.answers import clean_text
from kernodeck.provisioning.drivers.base import DriverError, NodeAllocation, NodeHealth
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
    holder = services.step_holder()
    automated = selectors.rental_driver_code(spec) != "manual"
    if automated and not services.step_lease_take(
        order_id=order.pk,
        step="prepare",
        seconds=services.step_lease_seconds(nodes=len(spec.allocation)),
        holder=holder,
    ):
        return  # another worker runs this step now
    try:
        _prepare_and_deliver(order, spec, driver, last_attempt=last_attempt)
    finally:
        if automated:
            services.step_lease_drop(order_id=order.pk, holder=holder)


def _prepare_and_deliver(order, spec, driver, *, last_attempt: bool) -> None:
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
        if node_health.error_blames_node(error):
            # The node is out of service now: other nodes take the rental when they can.
            services.rental_retry_elsewhere(order=order)
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
            socket=access.socket,
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


def steps_lost_sweep() -> int:
    """Run again every preparation whose worker died (its lease expired): the agent answers
    from its own state, so a node that had finished delivers at once. A final attempt: a
    failure now is the rental's reasoned failure, not another silent wait."""
    count = 0
    for order_id in services.rentals_with_lost_steps():
        try:
            rental_prepare_run(order_id=order_id, last_attempt=True)
        except Exception:
            logger.exception("taking up the step of order %s failed", order_id)
        count += 1
    return count


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


# -- the reconcile: every node converges to what the database says -----------------------


def keys_sha256(keys) -> str:
    """What the agent reports for an authorized_keys file holding exactly these keys."""
    cleaned = list(dict.fromkeys(key.strip() for key in keys))
    return hashlib.sha256("".join(key + "\n" for key in cleaned).encode()).hexdigest()


def node_reconcile(*, node_id: int) -> list[tuple[str, str]]:
    """Compare what the database says must exist on one node with what its agent reports
    (`status_all`, one call) and apply the difference through the driver, idempotently.

    Desired, per rental holding live slots on the node: `active` (its account unlocked
    with exactly the account's current keys and its end time), `suspended` (locked, no
    processes, no devices), or released (an ended rental whose release is pending). An
    account the node still runs for a rental that holds no slot there any more is released.
    Rentals still being prepared are their steps' business and left alone. Returns the
    (reference, action) pairs applied; one rental's failure is recorded on it and the
    others go on.
    """
    node = Node.objects.filter(pk=node_id).first()
    if node is None or node.state == "retired" or not node.host_key:
        return []
    driver = driver_for(node.driver)
    if not hasattr(driver, "node_report"):
        return []  # manual nodes: an operator is the controller
    ref = selectors.node_ref(node)
    try:
        report = driver.node_report(ref)
    except DriverError as error:
        logger.warning("reconcile %s: %s", node.name, error.message)
        node_health.driver_error_record(error=error, final=False)
        return []
    actual = {entry["reference"]: entry for entry in report["rentals"]}
    services.gpu_samples_record(node=node, samples=report["gpus"])
    applied = []
    # The node's rentals and their specs as one set (three queries at any number of
    # rentals); the driver is called only where the report differs.
    rentals = selectors.node_rental_specs(node)
    orders = [order for order, _spec in rentals]
    for order, spec in rentals:
        try:
            actions = _reconcile_rental(driver, order, spec, actual.get(order.reference))
        except DriverError as error:
            node_health.rental_step_record(order=order, step="reconcile", detail=error.message)
            node_health.driver_error_record(error=error, final=False)
            continue
        applied += [(order.reference, action) for action in actions]
    live = {order.reference for order in orders}
    for reference, entry in actual.items():
        if reference in live or entry["status"] != "active":
            continue
        order = Order.objects.filter(reference=reference).first()
        if order is None:
            continue  # not this installation's rental: left alone
        spec = replace(
            selectors.rental_spec(order=order),
            allocation=(NodeAllocation(node=ref, slots=tuple(entry["gpus"])),),
        )
        try:
            result = driver.release(spec)
        except DriverError as error:
            node_health.rental_step_record(order=order, step="reconcile", detail=error.message)
            continue
        node_health.rental_step_record(
            order=order, step="release", detail=f"left on {node.name}: {result.detail}"
        )
        applied.append((reference, "release"))
    return applied


def _reconcile_rental(driver, order, spec, entry) -> list[str]:
    state = order.rental_state
    if state == RentalState.ENDED:
        rental_release_run(order_id=order.pk)
        return ["release"]
    if state not in {RentalState.ACTIVE, RentalState.SUSPENDED}:
        return []
    if entry is None or entry["status"] != "active":
        return []
    steps = []
    if state == RentalState.SUSPENDED and not entry["suspended"]:
        steps.append(("suspend", driver.suspend(spec)))
    elif state == RentalState.ACTIVE and entry["suspended"]:
        steps.append(("resume", driver.resume(spec)))
    elif state == RentalState.ACTIVE and entry["keys_sha256"] != keys_sha256(spec.ssh_public_keys):
        steps.append(("keys", driver.keys(spec)))
    if order.ends_at and entry.get("until") != order.ends_at.isoformat():
        steps.append(("extend", driver.extend(spec, order.ends_at)))
    for action, result in steps:
        node_health.rental_step_record(
            order=order, step=action, detail=f"reconcile: {result.detail}"
        )
    return [action for action, _result in steps]


def nodes_reconcile() -> int:
    """Reconcile every automated node once (the minute tick). Returns actions applied."""
    applied = 0
    for node_id in selectors.nodes_to_reconcile():
        try:
            applied += len(node_reconcile(node_id=node_id))
        except Exception:  # one node's trouble never stops the others
            logger.exception("reconcile of node %s failed", node_id)
    return applied
