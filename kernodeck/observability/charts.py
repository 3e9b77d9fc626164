"""Plots as server-rendered SVG: the geometry is computed here, the template draws it.

No JavaScript and no inline style (the CSP allows neither): shapes carry classes that the
back-office stylesheet colours, and coordinates are plain attributes in a viewBox, so a
plot scales to any width, a 390 px phone's included.
"""

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

WIDTH, HEIGHT = 360, 190
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 26
SERIES_CLASSES = 6  # .kd-s0 … .kd-s5 in dashboard.css


@dataclass
class Tick:
    y: float
    label: str


@dataclass
class XLabel:
    x: float
    label: str
    anchor: str


@dataclass
class Shape:
    """A bar (x, y, w, h) or a polyline (points) of one series, with its hover title."""

    css: str
    title: str = ""
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0
    points: str = ""


@dataclass
class Chart:
    kind: str  # "bars" (stacked) or "lines"
    title: str
    unit: str
    series: list[tuple[str, str]]  # (name, css class) for the legend
    shapes: list[Shape] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    xlabels: list[XLabel] = field(default_factory=list)
    empty: bool = True
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: int = LEFT
    plot_right: int = WIDTH - RIGHT
    plot_bottom: int = HEIGHT - BOTTOM


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times 10^n at or above `value` (an axis maximum)."""
    if value <= 0:
        return 1
    magnitude = 1.0
    while magnitude * 10 <= value:
        magnitude *= 10
    while magnitude > value:
        magnitude /= 10
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def _number(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _frame(chart: Chart, days: list[date], top: float) -> tuple:
    """Axis ticks and day labels; returns functions from (day index, value) to x, y."""
    plot_w = chart.plot_right - chart.plot_left
    plot_h = chart.plot_bottom - TOP
    slot = plot_w / max(1, len(days))
    chart.ticks = [
        Tick(y=chart.plot_bottom - plot_h * fraction, label=_number(top * fraction))
        for fraction in (0, 0.5, 1)
    ]
    if days:
        picks = sorted({0, len(days) // 2, len(days) - 1})
        anchors = {0: "start", len(days) - 1: "end"}
        chart.xlabels = [
            XLabel(
                x=chart.plot_left + slot * (i + 0.5),
                label=days[i].strftime("%d/%m"),
                anchor=anchors.get(i, "middle"),
            )
            for i in picks
        ]

    def x_of(index: int) -> float:
        return chart.plot_left + slot * index

    def y_of(value: float) -> float:
        return chart.plot_bottom - plot_h * (value / top)

    return x_of, y_of, slot


def stacked_bars(
    *, title: str, unit: str, days: list[date], names: list[str], values: dict
) -> Chart:
    """One bar per day, stacked by series; `values[day][name]` (missing: 0)."""
    chart = Chart(
        kind="bars",
        title=title,
        unit=unit,
        series=[(name, f"kd-s{i % SERIES_CLASSES}") for i, name in enumerate(names)],
    )
    totals = [sum(float(values.get(day, {}).get(n, 0)) for n in names) for day in days]
    chart.empty = not any(totals)
    x_of, y_of, slot = _frame(chart, days, _nice_ceiling(max(totals, default=0)))
    gap = min(2.0, slot * 0.2)
    for i, day in enumerate(days):
        base = 0.0
        for name, css in chart.series:
            amount = float(values.get(day, {}).get(name, 0))
            if not amount:
                continue
            top_y, bottom_y = y_of(base + amount), y_of(base)
            chart.shapes.append(
                Shape(
                    css=css,
                    title=f"{day.isoformat()} {name}: {_amount_text(values[day][name])} {unit}",
                    x=round(x_of(i) + gap / 2, 2),
                    y=round(top_y, 2),
                    w=round(max(0.5, slot - gap), 2),
                    h=round(max(0.5, bottom_y - top_y), 2),
                )
            )
            base += amount
    return chart


def lines(*, title: str, unit: str, days: list[date], names: list[str], values: dict) -> Chart:
    """One line per series over the days; `values[day][name]` (None or missing: a gap)."""
    chart = Chart(
        kind="lines",
        title=title,
        unit=unit,
        series=[(name, f"kd-s{i % SERIES_CLASSES}") for i, name in enumerate(names)],
    )
    seen = [
        float(v)
        for day in days
        for v in (values.get(day, {}).get(n) for n in names)
        if v is not None
    ]
    chart.empty = not any(seen)
    x_of, y_of, slot = _frame(chart, days, _nice_ceiling(max(seen, default=0)))
    for name, css in chart.series:
        run: list[str] = []
        runs: list[list[str]] = []
        for i, day in enumerate(days):
            amount = values.get(day, {}).get(name)
            if amount is None:
                if run:
                    runs.append(run)
                run = []
                continue
            run.append(f"{x_of(i) + slot / 2:.1f},{y_of(float(amount)):.1f}")
        if run:
            runs.append(run)
        for points in runs:
            if len(points) == 1:  # a lone day: a short dash so it shows
                x, y = points[0].split(",")
                points = [f"{float(x) - 2:.1f},{y}", f"{float(x) + 2:.1f},{y}"]
            chart.shapes.append(Shape(css=css, title=name, points=" ".join(points)))
    return chart


def _amount_text(value) -> str:
    if isinstance(value, Decimal):
        return f"{value:,.2f}"
    return f"{value:g}" if isinstance(value, float) else str(value)
