"""Provisioning reads: the fleet, the desk's queues, the specs drivers receive, access.

One module per reader, every public name re-exported here so callers keep writing
`selectors.rental_spec(...)`:

- `specs`: what drivers and driver steps work from (`RentalSpec`, `NodeRef`);
- `desk`: the operators' queues, the fleet with its slots, pending releases;
- `access`: access as its owner sees it, the one read that decrypts a secret;
- `overview`: the rental in the customer's words (stages, reason, calendar);
- `gpu_use`: the GPUs' use over the last hour, for the order file, the node page, the API.
"""

from kernodeck.provisioning.selectors.access import (
    AccessView,
    NodeAccess,
    access_for_owner,
    access_for_owner_by_order,
    access_view,
    latest_delivery,
)
from kernodeck.provisioning.selectors.desk import (
    DESK_STATES,
    DeskRental,
    alerts_for_desk,
    delivery_defaults,
    desk_page_rows,
    desk_rows,
    fleet_rows,
    node_get,
    nodes_with_slots,
    releases_pending_for_desk,
    rental_get,
    rentals_for_desk,
    ssh_key_fingerprints,
    ssh_key_fingerprints_of,
    step_in_flight,
    waiting_seconds,
)
from kernodeck.provisioning.selectors.gpu_use import WINDOW as GPU_USE_WINDOW
from kernodeck.provisioning.selectors.gpu_use import GpuUse, node_gpu_use, rental_gpu_use
from kernodeck.provisioning.selectors.overview import (
    CUSTOMER_REASON_STATES,
    END_BEING_APPLIED,
    RentalOverview,
    Stage,
    release_pending,
    rental_calendar,
    rental_overview,
    rental_overview_reason,
    rental_overview_reasons_by_order,
)
from kernodeck.provisioning.selectors.specs import (
    allocation_of,
    allocations_of,
    node_ref,
    node_rental_specs,
    nodes_to_reconcile,
    release_pending_nodes,
    rental_driver_code,
    rental_spec,
)

__all__ = [
    "CUSTOMER_REASON_STATES",
    "DESK_STATES",
    "END_BEING_APPLIED",
    "GPU_USE_WINDOW",
    "AccessView",
    "DeskRental",
    "GpuUse",
    "NodeAccess",
    "RentalOverview",
    "Stage",
    "access_for_owner",
    "access_for_owner_by_order",
    "access_view",
    "alerts_for_desk",
    "allocation_of",
    "allocations_of",
    "delivery_defaults",
    "desk_page_rows",
    "desk_rows",
    "fleet_rows",
    "latest_delivery",
    "node_get",
    "node_gpu_use",
    "node_ref",
    "node_rental_specs",
    "nodes_to_reconcile",
    "nodes_with_slots",
    "release_pending",
    "release_pending_nodes",
    "releases_pending_for_desk",
    "rental_calendar",
    "rental_driver_code",
    "rental_get",
    "rental_gpu_use",
    "rental_overview",
    "rental_overview_reason",
    "rental_overview_reasons_by_order",
    "rental_spec",
    "rentals_for_desk",
    "ssh_key_fingerprints",
    "ssh_key_fingerprints_of",
    "step_in_flight",
    "waiting_seconds",
]
