"""Kraken's public Ticker endpoint: the last trade price of each coin against USD.

One GET `/0/public/Ticker?pair=XBTUSD,ETHUSD,...` answers `{"error": [], "result": {KEY:
{"c": [last price, lot volume], ...}}}` with prices as strings. KEY is Kraken's canonical
pair name, which for older assets differs from the name asked (XBTUSD answers as XXBTZUSD),
hence the table below. Failures arrive as HTTP 200 with a non-empty `error` list, and one
unknown pair fails the whole request ("EQuery:Unknown asset pair").
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

# asset -> (pair sent in the request, result keys accepted in the answer). The canonical key
# comes first; the request name is accepted too in case Kraken ever answers with it.
PAIRS: dict[str, tuple[str, tuple[str, ...]]] = {
    "BTC": ("XBTUSD", ("XXBTZUSD", "XBTUSD")),
    "ETH": ("ETHUSD", ("XETHZUSD", "ETHUSD")),
    "USDT": ("USDTUSD", ("USDTZUSD", "USDTUSD")),
    "USDC": ("USDCUSD", ("USDCUSD",)),
    "TRX": ("TRXUSD", ("TRXUSD",)),
    "SOL": ("SOLUSD", ("SOLUSD",)),
    "LTC": ("LTCUSD", ("XLTCZUSD", "LTCUSD")),
}


class KrakenProvider:
    """Prices from Kraken's public Ticker (no API key): one request, one attempt."""

    name = "kraken"

    def __init__(self, base_url: str = "https://api.kraken.com", timeout: float = 5.0):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def fetch(self, assets: Sequence[str]) -> dict[str, FetchedRate]:
        wanted = requested_assets(assets)
        if not wanted:
            return {}
        _response, body = get_json(
            f"{self.base_url}/0/public/Ticker",
            params={"pair": ",".join(PAIRS[asset][0] for asset in wanted)},
            headers={},
            timeout=self.timeout,
        )
        result = _result(body)
        fetched_at = clock.now()
        rates = {}
        for asset in wanted:
            price = _last_trade_price(result, PAIRS[asset][1])
            if price is None:
                logger.warning("kraken: no usable last trade price for %s", asset)
                continue
            rates[asset] = FetchedRate(asset, price, self.name, fetched_at)
        return rates


def _result(body) -> dict:
    """The `result` object of the answer, once the `error` list says nothing went wrong.

    Entries starting with "W" are warnings in Kraken's `<severity><category>:<message>`
    format; they are logged and the result is used. Any other entry fails the request.
    """
    if not isinstance(body, dict) or not isinstance(body.get("error", []), list):
        raise RateProviderError("answer is not a Kraken ticker object")
    errors = [str(entry) for entry in body.get("error", [])]
    warnings = [entry for entry in errors if entry.startswith("W")]
    if warnings:
        logger.warning("kraken: warnings in the answer: %s", "; ".join(warnings))
    if len(warnings) < len(errors):
        raise RateProviderError(f"Kraken error: {'; '.join(errors)}")
    result = body.get("result")
    if not isinstance(result, dict):
        raise RateProviderError("answer has no `result` object")
    return result


def _last_trade_price(result: dict, keys: tuple[str, ...]):
    """The price of `c` (last trade closed: [price, lot volume]) under the first key present."""
    for key in keys:
        ticker = result.get(key)
        if ticker is None:
            continue
        last = ticker.get("c") if isinstance(ticker, dict) else None
        if isinstance(last, list) and last:
            return positive_price(last[0])
        return None
    return None
