"""USD amounts: Decimal with two places, rounded half-up. Never floats."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def usd(value) -> Decimal:
    """Return `value` as a USD amount with exactly two decimal places."""
    if isinstance(value, float):
        raise TypeError("USD amounts are never floats; pass a Decimal, int or str")
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def usd_str(value: Decimal) -> str:
    """The API's form of an amount: a decimal string with two places, e.g. "1234.50"."""
    return f"{usd(value):.2f}"
