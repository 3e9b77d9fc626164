"""The quote: offer + days + units + preparation -> GPUs, unit price and total.

A pure function of its inputs. The configurator page, the API and order registration all
call it, so the customer sees the very figures the order will store.
"""

from dataclasses import dataclass
from decimal import Decimal

from django.utils.translation import gettext as _

from kernodeck.catalog.models import DURATIONS, MAX_UNITS, MIN_UNITS, Preparation
from kernodeck.core.errors import InvalidInput
from kernodeck.core.inputs import parse_int
from kernodeck.core.money import usd


@dataclass(frozen=True)
class PriceSheet:
    """What a quote needs to know about an offer."""

    slug: str
    gpu_model: str
    gpus_per_unit: int
    unit_prices: dict[int, Decimal]  # days -> USD per unit
    preparations: tuple[str, ...]


@dataclass(frozen=True)
class Quote:
    offer: str
    gpu_model: str
    days: int
    units: int
    gpus: int
    gpus_per_unit: int
    preparation: str
    unit_price_usd: Decimal
    total_usd: Decimal

    @property
    def preparation_label(self) -> str:
        """The preparation's name for people ("PyTorch"); `preparation` is its code."""
        return str(dict(Preparation.choices).get(self.preparation, self.preparation))


def days_message() -> str:
    return _("Choose a duration of 3, 7 or 30 days.")


def units_message() -> str:
    return _("Choose between %(min)d and %(max)d units.") % {"min": MIN_UNITS, "max": MAX_UNITS}


def clean_days(sheet: PriceSheet, value) -> int:
    days = parse_int(value, field="days", message=days_message)
    if days not in DURATIONS:
        raise InvalidInput(days_message(), field="days")
    if days not in sheet.unit_prices:
        raise InvalidInput(
            _("This GPU is not rented for %(days)d days.") % {"days": days}, field="days"
        )
    return days


def clean_units(value) -> int:
    units = parse_int(value, field="units", message=units_message)
    if not MIN_UNITS <= units <= MAX_UNITS:
        raise InvalidInput(units_message(), field="units")
    return units


def clean_preparation(sheet: PriceSheet, value) -> str:
    if value not in sheet.preparations:
        raise InvalidInput(
            _("This GPU offers these preparations: %(list)s.")
            % {"list": ", ".join(sheet.preparations)},
            field="preparation",
        )
    return value


def quote_errors(sheet: PriceSheet, *, days, units, preparation) -> list[InvalidInput]:
    """Every reason the configuration cannot be quoted, one per field (for forms)."""
    errors = []
    for check in (
        lambda: clean_days(sheet, days),
        lambda: clean_units(units),
        lambda: clean_preparation(sheet, preparation),
    ):
        try:
            check()
        except InvalidInput as exc:
            errors.append(exc)
    return errors


def quote(sheet: PriceSheet, *, days, units, preparation) -> Quote:
    """Price a configuration, or raise InvalidInput naming the first field at fault."""
    days = clean_days(sheet, days)
    units = clean_units(units)
    preparation = clean_preparation(sheet, preparation)
    unit_price = sheet.unit_prices[days]
    return Quote(
        offer=sheet.slug,
        gpu_model=sheet.gpu_model,
        days=days,
        units=units,
        gpus=sheet.gpus_per_unit * units,
        gpus_per_unit=sheet.gpus_per_unit,
        preparation=preparation,
        unit_price_usd=usd(unit_price),
        total_usd=usd(unit_price * units),
    )
