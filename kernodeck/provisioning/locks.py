"""Row locks of the provisioning domain, always taken in this order: offer, order, node,
slots (by pk) — so two allocators never wait on each other in a cycle."""

from kernodeck.provisioning.models import GpuSlot, Node


def lock_node(node_id: int) -> Node:
    return Node.objects.select_for_update().get(pk=node_id)


def lock_slots(slot_ids) -> list[GpuSlot]:
    return list(GpuSlot.objects.select_for_update().filter(pk__in=slot_ids).order_by("pk"))
