"""The operators' dashboard: the numbers behind each plot, for a period of 7, 30 or 90 days.

Every figure comes from `selectors` in a fixed number of queries; what is computed here
(per-day utilisation, percentiles) runs over the rows of the period only.
"""

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.observability import charts, selectors

PERIODS = (7, 30, 90)
DEFAULT_PERIOD = 30


def period_choose(raw) -> int:
    """The period asked for, or the default for anything else."""
    try:
        days = int(str(raw or ""))
    except ValueError:
        return DEFAULT_PERIOD
    return days if days in PERIODS else DEFAULT_PERIOD


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile (p50 of 1, 2, 3, 4 is 2); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Table:
    """The numbers behind a plot: a header row and one row per day."""

    header: list[str]
    rows: list[list]


@dataclass
class Plot:
    chart: charts.Chart
    table: Table


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def utilisation(*, days: list[date], now: datetime) -> tuple[dict, dict[str, int]]:
    """Per day and offer, the share (%) of the fleet's GPU time that rentals held."""
    gpus = selectors.fleet_gpus_by_offer()
    start, end = _midnight(days[0]), min(now, _midnight(days[-1]) + timedelta(days=1))
    busy: dict[date, dict[str, float]] = {}
    for offer, held_from, held_until in selectors.allocations_during(since=start, until=end):
        lo, hi = max(held_from, start), min(held_until or end, end)
        day = lo.date()
        while lo < hi:
            next_midnight = _midnight(day) + timedelta(days=1)
            piece = (min(hi, next_midnight) - lo).total_seconds()
            busy.setdefault(day, {})[offer] = busy.get(day, {}).get(offer, 0.0) + piece
            lo, day = next_midnight, day + timedelta(days=1)
    shares: dict[date, dict[str, float]] = {}
    for day in days:
        length = (min(end, _midnight(day) + timedelta(days=1)) - _midnight(day)).total_seconds()
        for offer, count in gpus.items():
            if length <= 0 or not count:
                continue
            held = busy.get(day, {}).get(offer, 0.0)
            shares.setdefault(day, {})[offer] = round(min(100.0, 100 * held / (length * count)), 1)
    return shares, gpus


def build(*, period: int, now: datetime | None = None) -> dict:
    """Everything the dashboard shows for the last `period` days (today included)."""
    now = now or clock.now()
    today = now.date()
    days = selectors.days_of(today - timedelta(days=period - 1), today)
    since = _midnight(days[0])

    orders = selectors.orders_per_day(since=since)
    sales = selectors.sales_per_day(since=since)
    delays = selectors.access_delays(since=since)
    shares, gpus = utilisation(days=days, now=now)

    ways = sorted({way for per_day in sales.values() for way in per_day})
    if selectors.BALANCE in ways:  # the balance last, after the payment methods
        ways = [w for w in ways if w != selectors.BALANCE] + [selectors.BALANCE]
    way_names = {w: (_("balance") if w == selectors.BALANCE else w) for w in ways}
    sales_named = {
        day: {way_names[w]: amount for w, amount in per_day.items()}
        for day, per_day in sales.items()
    }
    sales_plot = Plot(
        chart=charts.stacked_bars(
            title=_("Sales per day (USD), by how they were paid"),
            unit="USD",
            days=days,
            names=[way_names[w] for w in ways],
            values=sales_named,
        ),
        table=Table(
            header=[_("Day"), *[way_names[w] for w in ways], _("Total")],
            rows=[
                [
                    day,
                    *[sales.get(day, {}).get(w, Decimal("0.00")) for w in ways],
                    sum(sales.get(day, {}).values(), Decimal("0.00")),
                ]
                for day in days
            ],
        ),
    )
    new_name, settled_name = _("registered"), _("settled")
    orders_plot = Plot(
        chart=charts.lines(
            title=_("Orders per day"),
            unit="",
            days=days,
            names=[new_name, settled_name],
            values={
                day: {
                    new_name: orders.get(day, (0, 0))[0],
                    settled_name: orders.get(day, (0, 0))[1],
                }
                for day in days
            },
        ),
        table=Table(
            header=[_("Day"), new_name, settled_name],
            rows=[[day, *orders.get(day, (0, 0))] for day in days],
        ),
    )
    by_day: dict[date, list[float]] = {}
    for day, seconds in delays:
        by_day.setdefault(day, []).append(seconds)
    p50_name, p95_name = _("median"), _("95th percentile")
    delay_values = {
        day: {
            p50_name: _minutes(percentile(values, 0.5)),
            p95_name: _minutes(percentile(values, 0.95)),
        }
        for day, values in by_day.items()
    }
    all_delays = [seconds for _day, seconds in delays]
    access_plot = Plot(
        chart=charts.lines(
            title=_("From payment to access (minutes)"),
            unit="min",
            days=days,
            names=[p50_name, p95_name],
            values=delay_values,
        ),
        table=Table(
            header=[_("Day"), _("Rentals delivered"), p50_name, p95_name],
            rows=[
                [
                    day,
                    len(by_day.get(day, [])),
                    delay_values.get(day, {}).get(p50_name),
                    delay_values.get(day, {}).get(p95_name),
                ]
                for day in days
            ],
        ),
    )
    offers = sorted(gpus)
    fleet_plot = Plot(
        chart=charts.lines(
            title=_("Fleet utilisation (% of GPU time rented), per offer"),
            unit="%",
            days=days,
            names=offers,
            values=shares,
        ),
        table=Table(
            header=[_("Day"), *[f"{o} ({gpus[o]} GPU)" for o in offers]],
            rows=[[day, *[shares.get(day, {}).get(o) for o in offers]] for day in days],
        ),
    )
    fleet_now = selectors.nodes_overview()
    return {
        "period": period,
        "periods": PERIODS,
        "since": days[0],
        "until": today,
        "sales": sales_plot,
        "orders": orders_plot,
        "access": access_plot,
        "fleet": fleet_plot,
        "totals": {
            "orders_new": sum(orders.get(d, (0, 0))[0] for d in days),
            "orders_settled": sum(orders.get(d, (0, 0))[1] for d in days),
            "sales_usd": sum(
                (sum(v.values(), Decimal("0")) for v in sales.values()), Decimal("0.00")
            ),
            "delivered": len(all_delays),
            "access_p50": _minutes(percentile(all_delays, 0.5)),
            "access_p95": _minutes(percentile(all_delays, 0.95)),
            "gpus": sum(row.gpus for row in fleet_now if row.state != "retired"),
            "gpus_busy": sum(row.busy for row in fleet_now),
        },
        "watchers": selectors.watchers(now=now),
    }


def _minutes(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 60, 1)
