"""GPU use samples: what the reconcile stores from each node's `status_all` answer.

Bounded twice: at most one sample per node every KERNODECK_GPU_SAMPLE_SECONDS (a reconcile
run more often, after a change, stores nothing new), and samples older than
KERNODECK_GPU_SAMPLE_RETENTION_HOURS are dropped at each store, whatever node they are of.
"""

from datetime import timedelta

from django.conf import settings
from django.db.models import Max

from kernodeck.core import clock
from kernodeck.provisioning.models import GpuSample, GpuSlot, Node

# A reconcile tick comes a little early now and then: 10 % slack keeps one sample a minute.
SLACK = 0.9


def gpu_samples_record(*, node: Node, samples: list[dict]) -> int:
    """Store the node's checked GPU use `samples` (of its registered slots); returns how many."""
    now = clock.now()
    cutoff = now - timedelta(hours=settings.KERNODECK_GPU_SAMPLE_RETENTION_HOURS)
    GpuSample.objects.filter(taken_at__lt=cutoff).delete()
    if not samples:
        return 0
    last = GpuSample.objects.filter(node=node).aggregate(last=Max("taken_at"))["last"]
    every = timedelta(seconds=settings.KERNODECK_GPU_SAMPLE_SECONDS * SLACK)
    if last is not None and now - last < every:
        return 0
    slots = set(GpuSlot.objects.filter(node=node).values_list("index", flat=True))
    rows = [
        GpuSample(
            node=node,
            index=sample["index"],
            taken_at=now,
            utilization_pct=sample.get("utilization_pct"),
            memory_used_mib=_whole(sample.get("memory_used_mib")),
            memory_total_mib=_whole(sample.get("memory_total_mib")),
            temperature_c=sample.get("temperature_c"),
            power_w=sample.get("power_w"),
        )
        for sample in samples
        if sample["index"] in slots
    ]
    GpuSample.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _whole(value) -> int | None:
    return None if value is None else round(value)
