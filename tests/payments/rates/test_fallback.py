from decimal import Decimal

import pytest

from kernodeck.payments.rates.base import ASSETS
from kernodeck.payments.rates.coingecko import CoinGeckoProvider
from kernodeck.payments.rates.demo import DemoProvider
from kernodeck.payments.rates.kraken import KrakenProvider
from kernodeck.payments.rates.providers import build_providers, fetch_rates

TICKER = "/0/public/Ticker"
PRICE = "/api/v3/simple/price"

KRAKEN_PRICES = {
    "XXBTZUSD": "97123.4",
    "XETHZUSD": "3412.56",
    "USDTZUSD": "1.0001",
    "USDCUSD": "0.9999",
    "TRXUSD": "0.24123",
    "SOLUSD": "191.23",
    "XLTCZUSD": "95.45",
}
COINGECKO_BODY = """{"bitcoin": {"usd": 97001.5}, "ethereum": {"usd": 3401.25},
 "tether": {"usd": 1.0002}, "usd-coin": {"usd": 0.9998}, "tron": {"usd": 0.2399},
 "solana": {"usd": 190.5}, "litecoin": {"usd": 95.1}}"""


def kraken_body(prices):
    return {"error": [], "result": {key: {"c": [price, "0.1"]} for key, price in prices.items()}}


def providers_on(loopback, timeout=5.0):
    return [
        KrakenProvider(base_url=loopback.url, timeout=timeout),
        CoinGeckoProvider(base_url=loopback.url + "/api/v3", timeout=timeout),
    ]


def requests_to(loopback, path):
    return [request for request in loopback.requests if request.path == path]


def test_primary_answer_is_used_and_fallback_not_asked(loopback):
    loopback.route("GET", TICKER, json_body=kraken_body(KRAKEN_PRICES))
    loopback.route("GET", PRICE, body=COINGECKO_BODY)

    rates, errors = fetch_rates(providers_on(loopback), ASSETS)

    assert {rate.source for rate in rates.values()} == {"kraken"}
    assert sorted(rates) == sorted(ASSETS)
    assert errors == []
    assert requests_to(loopback, PRICE) == []


def test_primary_http_500_takes_every_asset_from_the_fallback(loopback):
    loopback.route("GET", TICKER, status=500, body="oops")
    loopback.route("GET", PRICE, body=COINGECKO_BODY, content_type="application/json")

    rates, errors = fetch_rates(providers_on(loopback), ASSETS)

    assert {asset: (rate.usd_per_coin, rate.source) for asset, rate in rates.items()} == {
        "BTC": (Decimal("97001.5"), "coingecko"),
        "ETH": (Decimal("3401.25"), "coingecko"),
        "USDT": (Decimal("1.0002"), "coingecko"),
        "USDC": (Decimal("0.9998"), "coingecko"),
        "TRX": (Decimal("0.2399"), "coingecko"),
        "SOL": (Decimal("190.5"), "coingecko"),
        "LTC": (Decimal("95.1"), "coingecko"),
    }
    assert errors == ["kraken: HTTP 500"]
    assert requests_to(loopback, PRICE)[0].query["ids"] == (
        "bitcoin,ethereum,tether,usd-coin,tron,solana,litecoin"
    )


def test_primary_partial_answer_asks_the_fallback_only_for_the_gaps(loopback):
    partial = {k: v for k, v in KRAKEN_PRICES.items() if k not in {"TRXUSD", "SOLUSD"}}
    loopback.route("GET", TICKER, json_body=kraken_body(partial))
    loopback.route("GET", PRICE, body=COINGECKO_BODY)

    rates, errors = fetch_rates(providers_on(loopback), ASSETS)

    assert {asset: (rate.usd_per_coin, rate.source) for asset, rate in rates.items()} == {
        "BTC": (Decimal("97123.4"), "kraken"),
        "ETH": (Decimal("3412.56"), "kraken"),
        "USDT": (Decimal("1.0001"), "kraken"),
        "USDC": (Decimal("0.9999"), "kraken"),
        "LTC": (Decimal("95.45"), "kraken"),
        "TRX": (Decimal("0.2399"), "coingecko"),
        "SOL": (Decimal("190.5"), "coingecko"),
    }
    assert errors == ["kraken: no usable price for TRX, SOL"]
    [fallback_request] = requests_to(loopback, PRICE)
    assert fallback_request.query == {"ids": "tron,solana", "vs_currencies": "usd"}


def test_both_failing_give_no_rate_and_two_errors(loopback):
    loopback.route("GET", TICKER, json_body={"error": ["EService:Unavailable"]})
    loopback.route("GET", PRICE, body=COINGECKO_BODY, delay=2.0)

    rates, errors = fetch_rates(providers_on(loopback, timeout=0.3), ASSETS)

    assert rates == {}
    assert errors == [
        "kraken: Kraken error: EService:Unavailable",
        "coingecko: timed out after 0.3 s",
    ]


def test_asset_nobody_prices_is_absent_and_reported(loopback):
    loopback.route("GET", TICKER, json_body=kraken_body({"XXBTZUSD": "97123.4"}))
    loopback.route("GET", PRICE, json_body={})

    rates, errors = fetch_rates(providers_on(loopback), ["BTC", "LTC"])

    assert list(rates) == ["BTC"]
    assert errors == ["kraken: no usable price for LTC", "coingecko: no usable price for LTC"]


def test_no_providers_give_no_rates():
    assert fetch_rates([], ASSETS) == ({}, [])


def test_unknown_asset_is_a_programming_error():
    with pytest.raises(ValueError, match="Unknown asset"):
        fetch_rates([DemoProvider()], ["BTC", "XMR"])


BUILD = {
    "kraken_url": "https://kraken.example",
    "coingecko_url": "https://coingecko.example/api/v3",
    "coingecko_api_key": "CG-key",
    "timeout": 3.5,
}


def test_demo_mode_builds_only_the_demo_provider():
    providers = build_providers(demo=True, names=["kraken", "coingecko"], **BUILD)

    assert [type(provider) for provider in providers] == [DemoProvider]


def test_builds_the_named_providers_in_order_with_their_settings():
    coingecko, kraken = build_providers(demo=False, names=["coingecko", "kraken"], **BUILD)

    assert isinstance(coingecko, CoinGeckoProvider)
    assert (coingecko.base_url, coingecko.api_key, coingecko.timeout) == (
        "https://coingecko.example/api/v3",
        "CG-key",
        3.5,
    )
    assert isinstance(kraken, KrakenProvider)
    assert (kraken.base_url, kraken.timeout) == ("https://kraken.example", 3.5)


def test_a_name_given_twice_is_used_once():
    providers = build_providers(demo=False, names=["kraken", "kraken"], **BUILD)

    assert [provider.name for provider in providers] == ["kraken"]


def test_unknown_name_is_refused_with_the_valid_names():
    with pytest.raises(ValueError, match=r"'binance'.*valid names: kraken, coingecko"):
        build_providers(demo=False, names=["kraken", "binance"], **BUILD)


def test_no_name_is_refused():
    with pytest.raises(ValueError, match="No rate provider configured"):
        build_providers(demo=False, names=[], **BUILD)
