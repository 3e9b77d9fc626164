from datetime import UTC, datetime
from decimal import Decimal

import pytest

from kernodeck.core import clock
from kernodeck.payments.rates.base import ASSETS, FetchedRate, RateProviderError
from kernodeck.payments.rates.coingecko import CoinGeckoProvider
from tests.loopback import sample_reply

PRICE = "/api/v3/simple/price"
NOW = datetime(2026, 3, 2, 12, 30, tzinfo=UTC)

ALL_IDS = "bitcoin,ethereum,tether,usd-coin,tron,solana,litecoin"

# Inline JSON text, not a dict: the numbers must reach the provider digit for digit.
ALL_PRICES_BODY = """{
  "bitcoin": {"usd": 67187.3358936566},
  "ethereum": {"usd": 3412.5},
  "tether": {"usd": 0.99981234567890123456789},
  "usd-coin": {"usd": 1},
  "tron": {"usd": 2.4123e-1},
  "solana": {"usd": 191.23},
  "litecoin": {"usd": 95.45}
}"""


def provider(loopback, **kwargs) -> CoinGeckoProvider:
    return CoinGeckoProvider(base_url=loopback.url + "/api/v3", **kwargs)


def test_prices_every_asset_with_every_digit(loopback):
    clock.freeze(NOW)
    loopback.route("GET", PRICE, body=ALL_PRICES_BODY, content_type="application/json")

    rates = provider(loopback).fetch(ASSETS)

    assert rates == {
        "BTC": FetchedRate("BTC", Decimal("67187.3358936566"), "coingecko", NOW),
        "ETH": FetchedRate("ETH", Decimal("3412.5"), "coingecko", NOW),
        "USDT": FetchedRate("USDT", Decimal("0.99981234567890123456789"), "coingecko", NOW),
        "USDC": FetchedRate("USDC", Decimal("1"), "coingecko", NOW),
        "TRX": FetchedRate("TRX", Decimal("0.24123"), "coingecko", NOW),
        "SOL": FetchedRate("SOL", Decimal("191.23"), "coingecko", NOW),
        "LTC": FetchedRate("LTC", Decimal("95.45"), "coingecko", NOW),
    }
    assert str(rates["BTC"].usd_per_coin) == "67187.3358936566"
    [request] = loopback.requests
    assert (request.method, request.path) == ("GET", PRICE)
    assert request.query == {"ids": ALL_IDS, "vs_currencies": "usd"}
    assert "x-cg-demo-api-key" not in request.headers


def test_parses_the_recorded_single_price_sample(loopback):
    loopback.route("GET", PRICE, sample_reply("prices/coingecko-simple-price.json"))

    rates = provider(loopback).fetch(["BTC"])

    assert rates["BTC"].usd_per_coin == Decimal("91873.42")
    assert loopback.requests[0].query == {"ids": "bitcoin", "vs_currencies": "usd"}


def test_parses_the_recorded_multi_price_sample(loopback):
    loopback.route("GET", PRICE, sample_reply("prices/coingecko-simple-price-multi.json"))

    rates = provider(loopback).fetch(["USDC", "USDT", "ETH", "BTC"])

    assert {asset: rate.usd_per_coin for asset, rate in rates.items()} == {
        "USDC": Decimal("0.999871"),
        "USDT": Decimal("1.000214"),
        "ETH": Decimal("3107.66"),
        "BTC": Decimal("91874"),
    }
    assert loopback.requests[0].query["ids"] == "usd-coin,tether,ethereum,bitcoin"


def test_sends_the_demo_api_key_when_set(loopback):
    loopback.route("GET", PRICE, json_body={"bitcoin": {"usd": 1}})

    provider(loopback, api_key="CG-test-key").fetch(["BTC"])

    assert loopback.requests[0].headers["x-cg-demo-api-key"] == "CG-test-key"


def test_recorded_429_says_rate_limited(loopback):
    loopback.route("GET", PRICE, sample_reply("prices/coingecko-error-429.json"))

    with pytest.raises(RateProviderError, match=r"^rate limited \(HTTP 429\), retry after 47 s$"):
        provider(loopback).fetch(ASSETS)


def test_429_with_an_html_page_says_rate_limited(loopback):
    loopback.route("GET", PRICE, status=429, body="<html>1015</html>", content_type="text/html")

    with pytest.raises(RateProviderError, match=r"^rate limited \(HTTP 429\)$"):
        provider(loopback).fetch(ASSETS)


def test_error_envelope_with_status_200_is_refused(loopback):
    body = sample_reply("prices/coingecko-error-429.json").json_body
    loopback.route("GET", PRICE, json_body=body)

    with pytest.raises(RateProviderError, match=r"^CoinGecko error 429: Rate limit reached"):
        provider(loopback).fetch(ASSETS)


@pytest.mark.parametrize(
    "entry",
    [
        None,
        {},
        {"usd": 0},
        {"usd": 0.0},
        {"usd": -1.5},
        {"usd": "67187.33"},
        {"usd": None},
        {"usd": True},
        {"usd": [67187.33]},
        {"eur": 61000.1},
        67187.33,
    ],
)
def test_unusable_price_is_omitted_not_zero(loopback, entry):
    body = {"bitcoin": {"usd": 67187.33}}
    if entry is not None:
        body["solana"] = entry
    loopback.route("GET", PRICE, json_body=body)

    rates = provider(loopback).fetch(["SOL", "BTC"])

    assert list(rates) == ["BTC"]
    assert rates["BTC"].usd_per_coin == Decimal("67187.33")


def test_http_500_is_refused(loopback):
    loopback.route("GET", PRICE, status=500, json_body={"error": "internal"})

    with pytest.raises(RateProviderError, match=r"^HTTP 500$"):
        provider(loopback).fetch(ASSETS)


def test_slow_answer_times_out(loopback):
    loopback.route("GET", PRICE, body=ALL_PRICES_BODY, delay=2.0)

    # The error says the provider gave up waiting (closing the server ends the delay).
    with pytest.raises(RateProviderError, match=r"^timed out after 0.3 s$"):
        provider(loopback, timeout=0.3).fetch(ASSETS)
    assert len(loopback.requests) == 1  # asked once, not retried


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<!DOCTYPE html><html>Just a moment...</html>", "not valid JSON"),
        ('{"bitcoin": {"usd": NaN}}', "not valid JSON"),
        ('{"bitcoin": {"usd": 67187.33}', "not valid JSON"),
        ('[{"bitcoin": {"usd": 67187.33}}]', "not a CoinGecko price object"),
    ],
)
def test_malformed_answer_is_refused(loopback, body, message):
    loopback.route("GET", PRICE, body=body, content_type="application/json")

    with pytest.raises(RateProviderError, match=message):
        provider(loopback).fetch(ASSETS)


def test_no_assets_asked_makes_no_request(loopback):
    assert provider(loopback).fetch([]) == {}
    assert loopback.requests == []
