"""Work handed to the task queue: what services enqueue after commit, and step leases.

Services never call a driver; they enqueue a task (`provisioning.tasks`) with
`transaction.on_commit`. A driver step run by a worker holds a lease on its rental
(`step_lease_take`), so a step whose worker died is found (`rentals_with_lost_steps`) and
taken up again rather than lost. Apart so that this is the one services module importing
`provisioning.tasks` (whose tasks call the services back): the others enqueue through it.
"""

import os
import socket
import threading
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef

from kernodeck.core import clock
from kernodeck.core.services import audit_record
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import tasks
from kernodeck.provisioning.models import Allocation, DriverCode, StepLease
from kernodeck.provisioning.services.moves import _lock_order


def _enqueue(task_name: str, *args):
    transaction.on_commit(lambda: getattr(tasks, task_name)(*args))


def _enqueue_reconcile(order: Order) -> None:
    """After commit, reconcile each automated node the rental holds slots on."""
    node_ids = list(
        Allocation.objects.filter(order=order, released_at__isnull=True)
        .exclude(slot__node__driver=DriverCode.MANUAL)
        .values_list("slot__node_id", flat=True)
        .distinct()
    )
    for node_id in node_ids:
        _enqueue("node_reconcile_task", node_id)


def _enqueue_allocate_waiting():
    tasks.rentals_allocate_waiting_task()


def step_holder() -> str:
    """Who runs a step: host, process and thread, for the desk."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"[:200]


def step_lease_take(*, order_id: int, step: str, seconds: int, holder: str) -> bool:
    """Take (or renew) the lease on a rental's step; False while another live holder has it."""
    now = clock.now()
    with transaction.atomic():
        _lock_order(order_id)
        lease = StepLease.objects.select_for_update().filter(order_id=order_id).first()
        if lease is not None and lease.until > now and lease.holder != holder:
            return False
        until = now + timedelta(seconds=max(1, seconds))
        if lease is None:
            StepLease.objects.create(
                order_id=order_id, step=step, holder=holder, since=now, until=until
            )
        else:
            taken_over = lease.holder != holder
            lease.step, lease.holder, lease.since, lease.until = step, holder, now, until
            lease.save(update_fields=["step", "holder", "since", "until"])
            if taken_over:
                audit_record(
                    action="provisioning.step_lease_expired",
                    target_type="orders.order",
                    target_id=str(order_id),
                    data={"step": step, "holder": holder},
                )
    return True


def step_lease_drop(*, order_id: int, holder: str) -> None:
    StepLease.objects.filter(order_id=order_id, holder=holder).delete()


def rentals_with_lost_steps() -> list[int]:
    """Automated rentals in `preparing` whose step nobody holds: a lease that expired, or
    none at all for longer than a lease lasts (a worker that died before taking it)."""
    now = clock.now()
    stale = now - timedelta(seconds=step_lease_seconds(nodes=1))
    preparing = (
        Order.objects.filter(rental_state=RentalState.PREPARING)
        .filter(Exists(Allocation.objects.filter(order=OuterRef("pk"), released_at=None)))
        .exclude(
            Exists(
                Allocation.objects.filter(
                    order=OuterRef("pk"), released_at=None, slot__node__driver=DriverCode.MANUAL
                )
            )
        )
    )
    expired = preparing.filter(
        Exists(StepLease.objects.filter(order=OuterRef("pk"), until__lte=now))
    )
    never = preparing.exclude(Exists(StepLease.objects.filter(order=OuterRef("pk")))).filter(
        rental_state_changed_at__lte=stale
    )
    lost = set(expired.values_list("pk", flat=True)) | set(never.values_list("pk", flat=True))
    return sorted(lost)


def step_lease_seconds(*, nodes: int) -> int:
    """How long a prepare step may hold its lease: create, prepare and deliver per node."""
    per_node = (
        settings.KERNODECK_SSH_PREPARE_TIMEOUT * 2
        + settings.KERNODECK_SSH_COMMAND_TIMEOUT * 2
        + settings.KERNODECK_SSH_CONNECT_TIMEOUT * 3
    )
    return per_node * max(1, nodes) + 60
