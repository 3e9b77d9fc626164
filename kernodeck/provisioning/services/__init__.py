"""Provisioning actions: the only code that writes nodes, slots, allocations, deliveries and
the rental state of orders.

One module per seam, every public name re-exported here so callers keep writing
`services.rental_end(...)`:

- `fleet`: nodes added, put in or out of service (their health: `node_health`);
- `allocation`: free slots given to queued rentals, the fleet's capacity;
- `preparation`: queue, prepare, deliver, fail, retry, refund (before access);
- `running`: suspend, resume, extend, end, the staff's access reveal (after access);
- `releases`: slots freed once their node confirms, overdue releases;
- `queueing`: tasks enqueued after commit, step leases;
- `moves`: the one state move they all apply (`_move`), with its refusal;
- `gpu_use`: the GPU use samples the reconcile stores, bounded.
"""

from kernodeck.provisioning.node_health import node_health_record
from kernodeck.provisioning.services.allocation import (
    rental_allocate,
    rental_retry_elsewhere,
    rentals_allocate_waiting,
)
from kernodeck.provisioning.services.fleet import (
    fleet_create_for_offer,
    node_create,
    node_state_set,
)
from kernodeck.provisioning.services.gpu_use import gpu_samples_record
from kernodeck.provisioning.services.preparation import (
    HOST_RE,
    MACHINE_FAILED,
    REFUNDABLE_STATES,
    URL_RE,
    USER_RE,
    rental_deliver,
    rental_fail,
    rental_prepare,
    rental_queue,
    rental_refund,
    rental_retry,
)
from kernodeck.provisioning.services.queueing import (
    rentals_with_lost_steps,
    step_holder,
    step_lease_drop,
    step_lease_seconds,
    step_lease_take,
)
from kernodeck.provisioning.services.releases import (
    RELEASE_OVERDUE_CAUSE,
    releases_overdue_alert,
    rental_release_confirm,
    rental_release_failed,
    rentals_release_pending,
)
from kernodeck.provisioning.services.running import (
    PERIOD_OVER,
    access_reveal_to_staff,
    rental_end,
    rental_extend,
    rental_resume,
    rental_suspend,
    rentals_end_due,
)

__all__ = [
    "HOST_RE",
    "MACHINE_FAILED",
    "PERIOD_OVER",
    "REFUNDABLE_STATES",
    "RELEASE_OVERDUE_CAUSE",
    "URL_RE",
    "USER_RE",
    "access_reveal_to_staff",
    "fleet_create_for_offer",
    "gpu_samples_record",
    "node_create",
    "node_health_record",
    "node_state_set",
    "releases_overdue_alert",
    "rental_allocate",
    "rental_deliver",
    "rental_end",
    "rental_extend",
    "rental_fail",
    "rental_prepare",
    "rental_queue",
    "rental_refund",
    "rental_release_confirm",
    "rental_release_failed",
    "rental_resume",
    "rental_retry",
    "rental_retry_elsewhere",
    "rental_suspend",
    "rentals_allocate_waiting",
    "rentals_end_due",
    "rentals_release_pending",
    "rentals_with_lost_steps",
    "step_holder",
    "step_lease_drop",
    "step_lease_seconds",
    "step_lease_take",
]
