"""The SVG picture of an estimate: a stacked bar of the parts beside each offer's memory.

Geometry only (numbers for <rect> and <text>); the template draws it. Computed here so the
template stays free of arithmetic.
"""

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from kernodeck.sizing import estimator

PART_LABELS = {
    "weights": _("Weights"),
    "kv_cache": _("KV cache"),
    "activations": _("Activations"),
    "gradients": _("Gradients"),
    "optimizer": _("Optimizer states"),
    "overhead": _("Context and overhead"),
}
PART_COLOURS = {
    "weights": "#2f5d8a",
    "kv_cache": "#3f8f6b",
    "activations": "#d08a2c",
    "gradients": "#8a4f9e",
    "optimizer": "#b84a4a",
    "overhead": "#7d7d7d",
}
WIDTH, LABEL_W, BAR_H, GAP, TOP = 640, 170, 22, 12, 8
PLOT_W = WIDTH - LABEL_W - 70


@dataclass(frozen=True)
class Segment:
    x: float
    width: float
    colour: str
    title: str


@dataclass(frozen=True)
class Row:
    y: float
    label: str
    value: str
    segments: list[Segment]
    margin_x: float | None = None
    fits: bool | None = None


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    label_w: int
    bar_h: int
    rows: list[Row]
    legend: list[tuple[str, str]]
    title: str


def build_chart(report) -> Chart:
    """Row 1: the per-GPU estimate by part; then one row per offer, its memory per card."""
    per_gpu = report.estimate.as_gib()
    need = sum(per_gpu.values())
    with_margin = need * (1 + report.margin)
    scale_max = max([with_margin, *[r.memory_gib for r in report.recommendations]])
    scale = PLOT_W / scale_max if scale_max else 0
    x = float(LABEL_W)
    segments = []
    for part in estimator.PARTS:
        size = per_gpu[part]
        if size <= 0:
            continue
        segments.append(
            Segment(x, size * scale, PART_COLOURS[part], f"{PART_LABELS[part]}: {size:.2f} GiB")
        )
        x += size * scale
    rows = [Row(TOP, str(_("Your job, per GPU")), f"{need:.1f} GiB", segments)]
    for i, r in enumerate(report.recommendations, start=1):
        colour = "#cfe3d4" if r.fits_as_requested else "#e8d5d5"
        rows.append(
            Row(
                TOP + i * (BAR_H + GAP),
                r.gpu,
                f"{r.memory_gib} GiB",
                [Segment(LABEL_W, r.memory_gib * scale, colour, f"{r.gpu}: {r.memory_gib} GiB")],
                margin_x=LABEL_W + with_margin * scale,
                fits=r.fits_as_requested,
            )
        )
    height = TOP + len(rows) * (BAR_H + GAP) + 4
    legend = [(PART_COLOURS[p], str(PART_LABELS[p])) for p in estimator.PARTS if per_gpu[p] > 0]
    title = str(
        _("Estimated %(need).1f GiB per GPU (%(margin).1f GiB with the %(percent)s%% margin)")
        % {"need": need, "margin": with_margin, "percent": report.margin_percent}
    )
    return Chart(WIDTH, height, LABEL_W, BAR_H, rows, legend, title)
