"""Row locks of the provisioning domain. Everywhere the order is: account, order, offer,
node, slots (by pk) — the order of the ledger and of settlement — so no two transactions
wait on each other in a cycle."""

from kernodeck.provisioning.models import GpuSlot, Node


def lock_node(node_id: int) -> Node:
    return Node.objects.select_for_update().get(pk=node_id)


def lock_slots(slot_ids) -> list[GpuSlot]:
    return list(GpuSlot.objects.select_for_update().filter(pk__in=slot_ids).order_by("pk"))
