"""Crypto amounts: USD / rate, rounded UP at the method's precision, in base units."""

from decimal import ROUND_CEILING, Decimal, localcontext


def crypto_amount(
    amount_usd: Decimal, usd_per_coin: Decimal, *, decimals: int, precision: int
) -> int:
    """Base units to ask for, so that the coins are worth at least `amount_usd` at the rate.

    Every step rounds towards more coins (ceiling), so the customer never pays less than
    the total, and pays at most one quantum (10**-precision coins) more.
    """
    if amount_usd <= 0 or usd_per_coin <= 0:
        raise ValueError("amount and rate must be positive")
    if not 0 <= precision <= decimals:
        raise ValueError("precision must be between 0 and the asset's decimals")
    with localcontext() as context:
        context.prec = 80
        context.rounding = ROUND_CEILING
        coins = amount_usd / usd_per_coin
        quoted = coins.quantize(Decimal(1).scaleb(-precision), rounding=ROUND_CEILING)
        return int(quoted.scaleb(decimals))


def units_to_decimal(base_units: int, decimals: int) -> Decimal:
    return Decimal(int(base_units)).scaleb(-decimals)
