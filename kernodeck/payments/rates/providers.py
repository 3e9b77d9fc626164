"""Choosing providers from settings and asking them in order, primary first."""

from collections.abc import Sequence

from kernodeck.payments.rates.base import (
    FetchedRate,
    RateProvider,
    RateProviderError,
    requested_assets,
)
from kernodeck.payments.rates.coingecko import CoinGeckoProvider
from kernodeck.payments.rates.demo import DemoProvider
from kernodeck.payments.rates.kraken import KrakenProvider

PROVIDER_NAMES = ("kraken", "coingecko")


def fetch_rates(
    providers: Sequence[RateProvider], assets: Sequence[str]
) -> tuple[dict[str, FetchedRate], list[str]]:
    """The rates the providers could give, and what went wrong, in words.

    Each provider is asked only for the assets still missing, so a fallback fills the gaps
    of the one before it. A provider failure (RateProviderError) becomes an error string
    such as "kraken: HTTP 500" and the next provider is asked; an asset a provider answered
    without a usable price becomes "kraken: no usable price for TRX". Any other exception is
    a bug and propagates. Assets nobody priced are simply absent from the dict. Failures are
    returned, not logged: the caller decides where they go.
    """
    wanted = requested_assets(assets)
    rates: dict[str, FetchedRate] = {}
    errors: list[str] = []
    for provider in providers:
        missing = [asset for asset in wanted if asset not in rates]
        if not missing:
            break
        try:
            fetched = provider.fetch(missing)
        except RateProviderError as error:
            errors.append(f"{provider.name}: {error}")
            continue
        rates.update({asset: fetched[asset] for asset in missing if asset in fetched})
        unpriced = [asset for asset in missing if asset not in fetched]
        if unpriced:
            errors.append(f"{provider.name}: no usable price for {', '.join(unpriced)}")
    return rates, errors


def build_providers(
    *,
    demo: bool,
    names: Sequence[str],
    kraken_url: str,
    coingecko_url: str,
    coingecko_api_key: str,
    timeout: float,
) -> list[RateProvider]:
    """The providers to ask, in order: only the demo table in demo mode, else `names`.

    Raises ValueError for an unknown or missing name, so a bad setting stops start-up.
    A name given twice is used once.
    """
    if demo:
        return [DemoProvider()]
    unknown = [name for name in names if name not in PROVIDER_NAMES]
    if unknown:
        raise ValueError(
            f"Unknown rate provider(s) {', '.join(map(repr, unknown))}; "
            f"valid names: {', '.join(PROVIDER_NAMES)}"
        )
    if not names:
        raise ValueError(f"No rate provider configured; valid names: {', '.join(PROVIDER_NAMES)}")
    providers: list[RateProvider] = []
    for name in dict.fromkeys(names):
        if name == "kraken":
            providers.append(KrakenProvider(base_url=kraken_url, timeout=timeout))
        else:
            providers.append(
                CoinGeckoProvider(
                    base_url=coingecko_url, timeout=timeout, api_key=coingecko_api_key
                )
            )
    return providers
