"""What every exchange-rate provider shares: the assets, the answer, the error, the interface.

A provider turns one HTTP request into USD-per-coin prices. Prices are `Decimal` from the
wire on (JSON numbers parsed with `parse_float=Decimal`), never floats. A provider makes a
single attempt and raises `RateProviderError` when that attempt gives no usable answer; the
caller (`providers.fetch_rates`) falls back to the next provider.
"""

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

import httpx

from kernodeck.core import tls

logger = logging.getLogger(__name__)

ASSETS = ("BTC", "ETH", "USDT", "USDC", "TRX", "SOL", "LTC")

USER_AGENT = "Kernodeck rates"


@dataclass(frozen=True)
class FetchedRate:
    asset: str  # one of ASSETS
    usd_per_coin: Decimal  # > 0
    source: str  # "kraken", "coingecko" or "demo"
    fetched_at: datetime  # aware UTC, from kernodeck.core.clock.now()


class RateProviderError(Exception):
    """The provider gave no usable answer.

    Network error, timeout, HTTP error, rate limiting (429) or a malformed body.
    """


class RateProvider(Protocol):
    name: str

    def fetch(self, assets: Sequence[str]) -> dict[str, FetchedRate]: ...


def requested_assets(assets: Sequence[str]) -> list[str]:
    """The assets in the order asked, without repeats; an unknown asset is a programming error."""
    unknown = [asset for asset in assets if asset not in ASSETS]
    if unknown:
        raise ValueError(f"Unknown asset(s) {', '.join(unknown)}; known: {', '.join(ASSETS)}")
    return list(dict.fromkeys(assets))


def positive_price(value: Any) -> Decimal | None:
    """`value` as a finite Decimal above zero, or None when it is anything else.

    Accepts a decimal string (Kraken), an int or a Decimal (JSON numbers parsed with
    `parse_float=Decimal`). Floats and booleans are refused: they would carry binary rounding.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        return None
    try:
        price = Decimal(value)
    except InvalidOperation:
        return None
    if not price.is_finite() or price <= 0:
        return None
    return price


def get_json(
    url: str,
    *,
    params: Mapping[str, str],
    headers: Mapping[str, str],
    timeout: float,
) -> tuple[httpx.Response, Any]:
    """One GET; the response and its body parsed as JSON with Decimal numbers.

    Raises RateProviderError for a connection error, a timeout, rate limiting (429), any
    other status outside 2xx (a 3xx too: redirects are not followed) or a body that is not
    JSON (error pages are often HTML, so the status is checked before the body).
    `timeout` bounds connecting and each read, not the whole transfer.
    """
    try:
        with httpx.Client(
            timeout=httpx.Timeout(timeout), follow_redirects=False, verify=tls.client_context()
        ) as client:
            response = client.get(
                url,
                params=params,
                headers={"Accept": "application/json", "User-Agent": USER_AGENT, **headers},
            )
    except httpx.TimeoutException as error:
        raise RateProviderError(f"timed out after {timeout} s") from error
    except httpx.HTTPError as error:
        raise RateProviderError(f"request failed: {error or type(error).__name__}") from error
    if response.status_code == 429:
        retry_after = response.headers.get("retry-after", "").strip()
        wait = f", retry after {retry_after} s" if retry_after.isdigit() else ""
        raise RateProviderError(f"rate limited (HTTP 429){wait}")
    if not response.is_success:
        raise RateProviderError(f"HTTP {response.status_code}")
    try:
        body = json.loads(response.text, parse_float=Decimal, parse_constant=_refuse_constant)
    except ValueError as error:
        raise RateProviderError("answer is not valid JSON") from error
    return response, body


def _refuse_constant(name: str) -> None:
    """NaN and Infinity are not JSON; Python's parser accepts them unless told otherwise."""
    raise ValueError(f"{name} is not a JSON value")
