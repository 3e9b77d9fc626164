"""The default price of an extension, from the order's price sheet. A pure function."""

from decimal import ROUND_CEILING, Decimal

from kernodeck.core.money import CENT


def extension_price(*, unit_prices: dict[int, Decimal], units: int, days: int) -> Decimal:
    """USD for `days` more days of `units` units.

    A duration on the sheet (3, 7, 30) costs exactly its sheet price; any other number of
    days is charged at the daily rate of the longest sheet duration that fits in it (the
    shortest one below 3 days), rounded up to the cent, so an extension never costs less
    per day than the term it resembles.
    """
    if days < 1 or units < 1 or not unit_prices:
        raise ValueError("days, units and a price sheet are required")
    if days in unit_prices:
        return (unit_prices[days] * units).quantize(CENT)
    fitting = [d for d in unit_prices if d <= days]
    base = max(fitting) if fitting else min(unit_prices)
    per_day = unit_prices[base] / Decimal(base)
    return (per_day * days * units).quantize(CENT, rounding=ROUND_CEILING)
