"""What payment instructions are quoted with: the payment methods' rows and the exchange
rates (fetched from the providers, entered by an operator, or refused as stale).

Apart from the instructions because they are set-up, not a customer's action: the rows
and rates every new instruction reads, refreshed by tasks and commands.
"""

import logging
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import InvalidInput, Unavailable
from kernodeck.core.services import audit_record
from kernodeck.payments import methods, selectors
from kernodeck.payments.models import PaymentMethod, Purpose, Rate
from kernodeck.payments.rates.base import ASSETS
from kernodeck.payments.rates.providers import build_providers, fetch_rates

logger = logging.getLogger(__name__)

RATE_QUANTUM = Decimal("1e-10")  # Rate.usd_per_coin: 24 digits, 10 of them decimals
RATE_MAX = Decimal(10) ** 14


def payment_methods_ensure() -> int:
    """Create any missing method row from `methods.METHODS`; existing rows are left as the
    operators set them. Returns how many were created. (The data migration does the same
    on a new database; this repairs a flushed one, e.g. in transactional tests.)"""
    created = 0
    for order, spec in enumerate(methods.METHODS):
        _method, was_created = PaymentMethod.objects.get_or_create(
            code=spec.code,
            defaults={
                "asset": spec.asset,
                "network": spec.network,
                "chain": spec.chain,
                "decimals": spec.decimals,
                "precision": spec.precision,
                "confirmations": spec.confirmations,
                "sort_order": order,
            },
        )
        created += was_created
    return created


# -- exchange rates ------------------------------------------------------------------


def rates_refresh(assets=ASSETS) -> tuple[list[Rate], list[str]]:
    """Fetch rates from the configured providers (network first, no transaction open)."""
    providers = build_providers(
        demo=settings.KERNODECK_DEMO,
        names=settings.KERNODECK_RATE_PROVIDERS,
        kraken_url=settings.KERNODECK_KRAKEN_URL,
        coingecko_url=settings.KERNODECK_COINGECKO_URL,
        coingecko_api_key=settings.KERNODECK_COINGECKO_API_KEY,
        timeout=settings.KERNODECK_HTTP_TIMEOUT,
    )
    fetched, errors = fetch_rates(providers, list(assets))
    for error in errors:
        logger.warning("rate provider failed: %s", error)
    stored = Rate.objects.bulk_create(
        Rate(
            asset=rate.asset,
            usd_per_coin=rate.usd_per_coin,
            source=rate.source,
            fetched_at=rate.fetched_at,
        )
        for rate in fetched.values()
    )
    return stored, errors


def rate_record_manual(*, asset: str, usd_per_coin, actor=None) -> Rate:
    """Record a rate an operator read elsewhere (back-office or `kernodeck set_rate`)."""
    asset = str(asset or "").strip().upper()
    if asset not in ASSETS:
        raise InvalidInput(
            _("Unknown asset %(asset)s; use one of %(list)s.")
            % {"asset": asset, "list": ", ".join(ASSETS)},
            field="asset",
        )
    try:
        value = Decimal(str(usd_per_coin).strip())
    except (InvalidOperation, ValueError):
        value = Decimal(0)
    # As stored (10 decimals, 24 digits): a rate that rounds to 0 or overflows is refused
    # here, not by the database's check.
    if value.is_finite():
        value = value.quantize(RATE_QUANTUM, rounding=ROUND_HALF_UP)
    if not value.is_finite() or value <= 0 or value >= RATE_MAX:
        raise InvalidInput(
            _("The rate must be a positive number of USD per coin."), field="usd_per_coin"
        )
    with transaction.atomic():
        rate = Rate.objects.create(
            asset=asset,
            usd_per_coin=value,
            source="manual",
            fetched_at=clock.now(),
            entered_by=actor,
        )
        audit_record(
            action="rate.manual_recorded",
            target=rate,
            actor=actor,
            after={"asset": asset, "usd_per_coin": str(value)},
        )
    return rate


def _stale_rate_reassurance(purpose: str) -> str:
    """What is untouched by a stale rate, in the words of what was being paid."""
    if purpose == Purpose.TOPUP:
        return _(
            "Nothing was charged and your balance is unchanged; please try again in a few minutes."
        )
    if purpose == Purpose.EXTENSION:
        return _("The extension offer is unchanged; please try again in a few minutes.")
    return _("Your order is safe; please try again in a few minutes.")


def rate_stale_error(asset: str, *, purpose: str = Purpose.ORDER) -> Unavailable:
    """The 503 for a stale rate: it names the asset and what is left as it was (the order,
    the balance or the extension offer: `purpose`)."""
    return Unavailable(
        _("The %(asset)s exchange rate is out of date, so no amount can be computed right now.")
        % {"asset": asset}
        + " "
        + _stale_rate_reassurance(purpose)
    )


def rate_for_instructions(asset: str, *, purpose: str = Purpose.ORDER) -> Rate:
    """A fresh rate for new instructions, or `rate_stale_error` (503)."""
    rate = selectors.rate_current(asset)
    if rate is None and settings.KERNODECK_DEMO:
        rates_refresh([asset])
        rate = selectors.rate_current(asset)
    if rate is None:
        raise rate_stale_error(asset, purpose=purpose)
    return rate
