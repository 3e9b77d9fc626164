"""CoinGecko's `/simple/price`: an aggregated USD price per coin id.

One GET `/simple/price?ids=bitcoin,...&vs_currencies=usd` answers `{"bitcoin": {"usd":
67187.33}, ...}` with JSON numbers, parsed as Decimal so no digit is lost. Ids CoinGecko
does not know are silently left out of the answer. A 429 means rate limiting (the free tier
is tight); its body may be JSON or an HTML page, so only the status is relied on.
"""

import logging
from collections.abc import Sequence

from kernodeck.core import clock
from kernodeck.payments.rates.base import (
    FetchedRate,
    RateProviderError,
    get_json,
    positive_price,
    requested_assets,
)

logger = logging.getLogger(__name__)

COIN_IDS = {
    "BTC": "bitcoin",
    "ETH": "ethereum",
    "USDT": "tether",
    "USDC": "usd-coin",
    "TRX": "tron",
    "SOL": "solana",
    "LTC": "litecoin",
}


class CoinGeckoProvider:
    """Prices from CoinGecko's public API: one request, one attempt.

    `api_key` is a Demo-plan key, sent as `x-cg-demo-api-key` when set. A Pro key needs the
    Pro base URL and header, which this provider does not send.
    """

    name = "coingecko"

    def __init__(
        self,
        base_url: str = "https://api.coingecko.com/api/v3",
        timeout: float = 5.0,
        api_key: str = "",
    ):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.api_key = api_key

    def fetch(self, assets: Sequence[str]) -> dict[str, FetchedRate]:
        wanted = requested_assets(assets)
        if not wanted:
            return {}
        _response, body = get_json(
            f"{self.base_url}/simple/price",
            params={"ids": ",".join(COIN_IDS[asset] for asset in wanted), "vs_currencies": "usd"},
            headers={"x-cg-demo-api-key": self.api_key} if self.api_key else {},
            timeout=self.timeout,
        )
        if not isinstance(body, dict):
            raise RateProviderError("answer is not a CoinGecko price object")
        status = body.get("status")
        if isinstance(status, dict) and "error_code" in status:
            # The error envelope has been seen with a 429; refuse it whatever the status.
            message = status.get("error_message") or "no message"
            raise RateProviderError(f"CoinGecko error {status['error_code']}: {message}")
        fetched_at = clock.now()
        rates = {}
        for asset in wanted:
            entry = body.get(COIN_IDS[asset])
            # A string is not accepted: CoinGecko sends numbers, anything else is a wrong shape.
            value = entry.get("usd") if isinstance(entry, dict) else None
            price = None if isinstance(value, str) else positive_price(value)
            if price is None:
                logger.warning("coingecko: no usable USD price for %s", asset)
                continue
            rates[asset] = FetchedRate(asset, price, self.name, fetched_at)
        return rates
