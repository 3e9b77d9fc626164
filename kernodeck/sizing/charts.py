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
# Offer bars by verdict: (CSS class, the fill the standalone SVG of the API keeps).
OFFER_STYLES = {
    estimator.FITS: ("offer-fits", "#cfe3d4"),
    estimator.MEASURE: ("offer-measure", "#f3e3bf"),
    estimator.DOES_NOT_FIT: ("offer-short", "#e8d5d5"),
}
WIDTH, LABEL_W, BAR_H, GAP, TOP = 640, 200, 22, 12, 8
PLOT_W = WIDTH - LABEL_W - 70
# The phone layout: each row's name and value on a line of their own above a full-width bar,
# so nothing is cut or scaled below a readable size at 390 px.
NARROW_W, NARROW_LINE = 360, 16


@dataclass(frozen=True)
class Segment:
    x: float
    width: float
    colour: str
    title: str
    css: str = ""


@dataclass(frozen=True)
class Row:
    y: float
    label: str
    value: str
    segments: list[Segment]
    margin_x: float | None = None
    fits: bool | None = None
    bar_y: float | None = None  # the narrow layout's bar sits below its text line
    text_y: float = 0.0


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    label_w: int
    bar_h: int
    rows: list[Row]
    legend: list[tuple[str, str]]
    title: str
    narrow: bool = False
    css: str = "chart-wide"


def build_chart(report, *, narrow: bool = False) -> Chart:
    """Row 1: the per-GPU estimate by part; then one row per offer, its memory per card.

    Wide: names on the left, bars in the middle, values on the right. Narrow (phones): name and
    value on a line above each bar, the bar across the whole width.
    """
    per_gpu = report.estimate.as_gib()
    need = sum(per_gpu.values())
    with_margin = estimator.with_margin(need * estimator.GIB, report.margin) / estimator.GIB
    scale_max = max([with_margin, *[r.memory_gib for r in report.recommendations]])
    width = NARROW_W if narrow else WIDTH
    left = 0 if narrow else LABEL_W
    plot_w = (NARROW_W - 4) if narrow else PLOT_W
    step = (NARROW_LINE + BAR_H + GAP) if narrow else (BAR_H + GAP)
    scale = plot_w / scale_max if scale_max else 0

    def place(i):
        y = TOP + i * step
        if narrow:
            return {"y": y, "text_y": y + 12, "bar_y": y + NARROW_LINE}
        return {"y": y, "text_y": y + 15, "bar_y": y}

    x = float(left)
    segments = []
    for part in estimator.PARTS:
        size = per_gpu[part]
        if size <= 0:
            continue
        segments.append(
            Segment(
                x,
                size * scale,
                PART_COLOURS[part],
                f"{PART_LABELS[part]}: {size:.2f} GiB",
                css=f"part-{part}",
            )
        )
        x += size * scale
    rows = [
        Row(
            label=str(_("Your job, per GPU")),
            value=f"{need:.1f} GiB",
            segments=segments,
            **place(0),
        )
    ]
    for i, r in enumerate(report.recommendations, start=1):
        css, colour = OFFER_STYLES[r.verdict]
        rows.append(
            Row(
                label=r.gpu,
                value=f"{r.memory_gib} GiB",
                segments=[
                    Segment(
                        left,
                        r.memory_gib * scale,
                        colour,
                        f"{r.gpu}: {r.memory_gib} GiB",
                        css=css,
                    )
                ],
                margin_x=left + with_margin * scale,
                fits=r.fits_as_requested,
                **place(i),
            )
        )
    height = TOP + len(rows) * step + 4
    legend = [(f"part-{p}", str(PART_LABELS[p])) for p in estimator.PARTS if per_gpu[p] > 0]
    title = str(
        _("Estimated %(need).1f GiB per GPU (%(margin).1f GiB with the %(percent)s%% margin)")
        % {"need": need, "margin": with_margin, "percent": report.margin_percent}
    )
    return Chart(
        width,
        height,
        left,
        BAR_H,
        rows,
        legend,
        title,
        narrow=narrow,
        css="chart-narrow" if narrow else "chart-wide",
    )
