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


# One written form of a USD amount per language, used by pages, e-mails and API messages
# alike. Spanish follows the FAQ ("10 000 USD"): a (non-breaking) space between thousands
# and a decimal comma; English: a thousands comma and a decimal point. The currency code
# always follows the figure, so "USD" never needs a "$" beside it.
MONEY_SEPARATORS = {"es": ("\u00a0", ","), "en": (",", ".")}


def money(value, *, language: str | None = None, places: int = 2) -> str:
    """`value` in USD as the customer's language writes it: es "2 000,00 USD", en "2,000.00 USD".

    `places=0` drops the cents for whole amounts shown as choices ("100 USD").
    """
    return f"{money_figure(value, language=language, places=places)} USD"


def money_figure(value, *, language: str | None = None, places: int = 2) -> str:
    """The figure alone ("2 000,00"), for texts that already say "USD" after it."""
    from django.utils import translation

    code = (language or translation.get_language() or "en").split("-")[0]
    thousands, decimal_mark = MONEY_SEPARATORS.get(code, MONEY_SEPARATORS["en"])
    if isinstance(value, float):
        raise TypeError("USD amounts are never floats; pass a Decimal, int or str")
    amount = Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{abs(amount):,.{places}f}"
    text = text.replace(",", "\x00").replace(".", decimal_mark).replace("\x00", thousands)
    sign = "-" if amount < 0 else ""
    return f"{sign}{text}"


def rate_figure(value, *, language: str | None = None) -> str:
    """A USD-per-coin rate: cents from 1 USD up ("97 000,00"), four places below ("0,1234")."""
    return money_figure(value, language=language, places=2 if Decimal(value) >= 1 else 4)


def coin_figure(base_units: int, decimals: int, *, language: str | None = None) -> str:
    """An amount of a coin, exact, from its base units, as the language writes figures:
    (123450000, 8) -> es "1,2345", en "1.2345"; (1234560000, 6) -> es "1 234,56"."""
    from django.utils import translation

    if isinstance(base_units, bool) or not isinstance(base_units, int):
        raise TypeError("Coin amounts are whole numbers of base units")
    code = (language or translation.get_language() or "en").split("-")[0]
    thousands, decimal_mark = MONEY_SEPARATORS.get(code, MONEY_SEPARATORS["en"])
    whole, fraction = divmod(abs(base_units), 10**decimals)
    digits = str(fraction).rjust(decimals, "0").rstrip("0") if decimals else ""
    text = f"{whole:,}".replace(",", thousands)
    sign = "-" if base_units < 0 else ""
    return f"{sign}{text}{decimal_mark}{digits}" if digits else f"{sign}{text}"


def coin(base_units: int, decimals: int, asset: str, *, language: str | None = None) -> str:
    """`coin_figure` followed by the asset's code: "0,0123 BTC"."""
    return f"{coin_figure(base_units, decimals, language=language)} {asset}"
