"""GPU use as the pages and the API show it: per GPU the last hour of samples, the current
figures, and a small plot's geometry (server-rendered SVG, classes only: the CSP is strict).
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import reduce
from operator import or_

from django.conf import settings
from django.db.models import Q

from kernodeck.core import clock
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning.models import Allocation, GpuSample, Node

WINDOW = timedelta(hours=1)
PLOT_W, PLOT_H = 240, 60
# A sample older than this many sampling periods is not "now": the figures say when.
STALE_PERIODS = 3


@dataclass
class GpuUse:
    """One GPU: where it is, its latest sample (None: none yet) and the last hour's.

    `machine` numbers the rental's nodes from 1 (of `machines`): a customer is never shown
    the node's own name or address, which may be internal.
    """

    node: str
    machine: int
    machines: int
    index: int
    latest: dict | None
    stale: bool
    samples: list[dict] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)  # (css class, SVG points)

    @property
    def memory_used_gib(self) -> float | None:
        used = self.latest and self.latest["memory_used_mib"]
        return None if used is None else used / 1024

    @property
    def memory_total_gib(self) -> float | None:
        total = self.latest and self.latest["memory_total_mib"]
        return None if total is None else total / 1024

    @property
    def memory_pct(self) -> float | None:
        if not self.latest or not self.latest["memory_total_mib"]:
            return None
        if self.latest["memory_used_mib"] is None:
            return None
        return round(100 * self.latest["memory_used_mib"] / self.latest["memory_total_mib"], 1)


def _sample_out(row: GpuSample) -> dict:
    return {
        "at": row.taken_at,
        "utilization_pct": row.utilization_pct,
        "memory_used_mib": row.memory_used_mib,
        "memory_total_mib": row.memory_total_mib,
        "temperature_c": row.temperature_c,
        "power_w": row.power_w,
    }


def _memory_pct(sample: dict) -> float | None:
    used, total = sample["memory_used_mib"], sample["memory_total_mib"]
    return None if used is None or not total else 100 * used / total


def _polylines(samples: list[dict], value, *, since: datetime, until: datetime) -> list[str]:
    """SVG points over [since, until] x 0..100 %, broken where samples are missing."""
    span = (until - since).total_seconds() or 1
    gap = settings.KERNODECK_GPU_SAMPLE_SECONDS * STALE_PERIODS
    runs, run, previous = [], [], None
    for sample in samples:
        figure = value(sample)
        late = previous is not None and (sample["at"] - previous).total_seconds() > gap
        if figure is None or late:
            if run:
                runs.append(run)
            run = []
        previous = sample["at"]
        if figure is None:
            continue
        x = PLOT_W * (sample["at"] - since).total_seconds() / span
        y = PLOT_H * (1 - min(100.0, max(0.0, figure)) / 100)
        run.append((x, y))
    if run:
        runs.append(run)
    out = []
    for points in runs:
        if len(points) == 1:  # a lone sample: a short dash so it shows
            x, y = points[0]
            points = [(max(0.0, x - 2), y), (min(PLOT_W, x + 2), y)]
        out.append(" ".join(f"{x:.1f},{y:.1f}" for x, y in points))
    return out


def _gpu_uses(pairs: list[tuple[Node, int]], *, since: datetime) -> list[GpuUse]:
    now = clock.now()
    if not pairs:
        return []
    if len({node.pk for node, _index in pairs}) == 1:  # one machine (the node page): IN
        wanted = Q(node_id=pairs[0][0].pk, index__in=[index for _node, index in pairs])
    else:
        wanted = reduce(or_, (Q(node_id=node.pk, index=index) for node, index in pairs))
    by_gpu: dict[tuple[int, int], list[dict]] = {}
    rows = GpuSample.objects.filter(wanted, taken_at__gte=since, taken_at__lte=now)
    for row in rows.order_by("taken_at"):
        by_gpu.setdefault((row.node_id, row.index), []).append(_sample_out(row))
    stale_after = timedelta(seconds=settings.KERNODECK_GPU_SAMPLE_SECONDS * STALE_PERIODS)
    machines = list(dict.fromkeys(node.pk for node, _index in pairs))
    uses = []
    for node, index in pairs:
        samples = by_gpu.get((node.pk, index), [])
        latest = samples[-1] if samples else None
        lines = [
            ("gpu-line-util", points)
            for points in _polylines(
                samples, lambda s: s["utilization_pct"], since=now - WINDOW, until=now
            )
        ] + [
            ("gpu-line-mem", points)
            for points in _polylines(samples, _memory_pct, since=now - WINDOW, until=now)
        ]
        uses.append(
            GpuUse(
                node=node.name,
                machine=machines.index(node.pk) + 1,
                machines=len(machines),
                index=index,
                latest=latest,
                stale=latest is None or now - latest["at"] > stale_after,
                samples=samples,
                lines=lines,
            )
        )
    return uses


def rental_gpu_use(*, order: Order) -> list[GpuUse]:
    """The GPUs the rental holds now, each with its use over the last hour of the rental;
    none before the access is delivered or once the rental is over."""
    if order.rental_state not in {RentalState.ACTIVE, RentalState.SUSPENDED}:
        return []
    rows = (
        Allocation.objects.filter(order=order, released_at__isnull=True)
        .select_related("slot__node")
        .order_by("slot__node__name", "slot__index")
    )
    pairs = [(row.slot.node, row.slot.index) for row in rows]
    since = clock.now() - WINDOW
    if order.starts_at and order.starts_at > since:
        since = order.starts_at
    return _gpu_uses(pairs, since=since)


def node_gpu_use(*, node: Node) -> list[GpuUse]:
    """Every GPU slot of the node with its use over the last hour."""
    indexes = node.slots.order_by("index").values_list("index", flat=True)
    return _gpu_uses([(node, index) for index in indexes], since=clock.now() - WINDOW)
