from datetime import UTC, datetime
from decimal import Decimal

import pytest

from kernodeck.core import clock
from kernodeck.payments.rates.base import ASSETS, FetchedRate, RateProviderError
from kernodeck.payments.rates.kraken import KrakenProvider
from tests.loopback import LoopbackServer, Reply, sample, sample_reply

TICKER = "/0/public/Ticker"
NOW = datetime(2026, 3, 2, 12, 30, tzinfo=UTC)

# Last trade prices by canonical result key, as Kraken writes them (strings, fixed places).
LAST_PRICES = {
    "XXBTZUSD": "97123.40000",
    "XETHZUSD": "3412.56000",
    "USDTZUSD": "1.00012000",
    "USDCUSD": "0.99990000",
    "TRXUSD": "0.241230",
    "SOLUSD": "191.23000",
    "XLTCZUSD": "95.45000",
}


def ticker_body(prices: dict[str, str]) -> dict:
    """A Ticker answer for `prices`, each entry shaped like the recorded sample's entries."""
    entry = sample("prices/kraken-ticker.json")["response"]["result"]["XETCZUSD"]
    return {
        "error": [],
        "result": {key: {**entry, "c": [price, "0.01000000"]} for key, price in prices.items()},
    }


def test_prices_every_asset_from_its_canonical_pair_key(loopback):
    clock.freeze(NOW)
    loopback.route("GET", TICKER, json_body=ticker_body(LAST_PRICES))

    rates = KrakenProvider(base_url=loopback.url).fetch(ASSETS)

    assert rates == {
        "BTC": FetchedRate("BTC", Decimal("97123.40000"), "kraken", NOW),
        "ETH": FetchedRate("ETH", Decimal("3412.56000"), "kraken", NOW),
        "USDT": FetchedRate("USDT", Decimal("1.00012000"), "kraken", NOW),
        "USDC": FetchedRate("USDC", Decimal("0.99990000"), "kraken", NOW),
        "TRX": FetchedRate("TRX", Decimal("0.241230"), "kraken", NOW),
        "SOL": FetchedRate("SOL", Decimal("191.23000"), "kraken", NOW),
        "LTC": FetchedRate("LTC", Decimal("95.45000"), "kraken", NOW),
    }
    # Equal as numbers is not enough: the Decimal keeps Kraken's string digit for digit.
    assert [str(rate.usd_per_coin) for rate in rates.values()] == list(LAST_PRICES.values())
    [request] = loopback.requests
    assert (request.method, request.path) == ("GET", TICKER)
    assert request.query == {"pair": "XBTUSD,ETHUSD,USDTUSD,USDCUSD,TRXUSD,SOLUSD,LTCUSD"}


def test_reads_the_last_trade_price_of_the_recorded_sample_exactly(loopback):
    recorded = sample("prices/kraken-ticker.json")["response"]["result"]
    # The sample holds none of our pairs; serve its XMR/USD entry as the BTC/USD answer.
    loopback.route(
        "GET",
        TICKER,
        json_body={
            "error": [],
            "result": {
                "XXBTZUSD": recorded["XXMRZUSD"],
            },
        },
    )

    rates = KrakenProvider(base_url=loopback.url).fetch(["BTC"])

    # c[0], the last trade: not the ask (214.57), the bid (214.41) nor the open (210.64).
    assert rates["BTC"].usd_per_coin == Decimal("214.56")
    assert str(rates["BTC"].usd_per_coin) == recorded["XXMRZUSD"]["c"][0]


def test_recorded_sample_without_our_pairs_prices_nothing(loopback):
    # The sample's XXBTZEUR is bitcoin in euros and XETHXXBT ether in bitcoin: neither may be
    # taken for BTC or ETH in US dollars.
    loopback.route("GET", TICKER, sample_reply("prices/kraken-ticker.json"))

    assert KrakenProvider(base_url=loopback.url).fetch(ASSETS) == {}


def test_request_names_only_the_assets_asked_for(loopback):
    loopback.route("GET", TICKER, json_body=ticker_body(LAST_PRICES))

    rates = KrakenProvider(base_url=loopback.url).fetch(["LTC", "BTC", "LTC"])

    assert list(rates) == ["LTC", "BTC"]
    assert loopback.requests[0].query == {"pair": "LTCUSD,XBTUSD"}


def test_no_assets_asked_makes_no_request(loopback):
    assert KrakenProvider(base_url=loopback.url).fetch([]) == {}
    assert loopback.requests == []


def test_unknown_asset_is_a_programming_error(loopback):
    with pytest.raises(ValueError, match="DOGE"):
        KrakenProvider(base_url=loopback.url).fetch(["BTC", "DOGE"])
    assert loopback.requests == []


def test_accepts_the_request_name_as_result_key(loopback):
    loopback.route("GET", TICKER, json_body=ticker_body({"XBTUSD": "97000.1"}))

    rates = KrakenProvider(base_url=loopback.url).fetch(["BTC"])

    assert rates["BTC"].usd_per_coin == Decimal("97000.1")


def test_missing_pair_is_omitted(loopback):
    prices = {key: value for key, value in LAST_PRICES.items() if key != "SOLUSD"}
    loopback.route("GET", TICKER, json_body=ticker_body(prices))

    rates = KrakenProvider(base_url=loopback.url).fetch(ASSETS)

    assert sorted(rates) == sorted(set(ASSETS) - {"SOL"})


@pytest.mark.parametrize(
    "ticker",
    [
        {"c": ["0.00000000", "1.0"]},
        {"c": ["-3.5", "1.0"]},
        {"c": ["n/a", "1.0"]},
        {"c": ["NaN", "1.0"]},
        {"c": ["Infinity", "1.0"]},
        {"c": []},
        {"c": "191.23"},
        {"a": ["191.23", "1", "1.000"]},
        "191.23",
        None,
    ],
)
def test_unusable_price_is_omitted_not_zero(loopback, ticker):
    loopback.route(
        "GET",
        TICKER,
        json_body={
            "error": [],
            "result": {
                "SOLUSD": ticker,
                "XXBTZUSD": {"c": ["97000.0", "0.1"]},
            },
        },
    )

    rates = KrakenProvider(base_url=loopback.url).fetch(["SOL", "BTC"])

    assert list(rates) == ["BTC"]


def test_recorded_error_answer_is_refused(loopback):
    loopback.route("GET", TICKER, sample_reply("prices/kraken-error.json"))

    with pytest.raises(RateProviderError, match=r"^Kraken error: EService:Unavailable$"):
        KrakenProvider(base_url=loopback.url).fetch(ASSETS)


def test_unknown_pair_error_fails_the_whole_request(loopback):
    loopback.route("GET", TICKER, json_body={"error": ["EQuery:Unknown asset pair"], "result": {}})

    with pytest.raises(RateProviderError, match="EQuery:Unknown asset pair"):
        KrakenProvider(base_url=loopback.url).fetch(ASSETS)


def test_error_list_fails_even_with_prices_in_the_result(loopback):
    body = ticker_body(LAST_PRICES) | {"error": ["EGeneral:Too many requests"]}
    loopback.route("GET", TICKER, json_body=body)

    with pytest.raises(RateProviderError, match="EGeneral:Too many requests"):
        KrakenProvider(base_url=loopback.url).fetch(ASSETS)


def test_warnings_alone_do_not_fail_the_request(loopback):
    body = ticker_body({"XXBTZUSD": "97000.0"}) | {"error": ["WGeneral:Something noted"]}
    loopback.route("GET", TICKER, json_body=body)

    rates = KrakenProvider(base_url=loopback.url).fetch(["BTC"])

    assert rates["BTC"].usd_per_coin == Decimal("97000.0")


def test_http_500_is_refused(loopback):
    loopback.route("GET", TICKER, status=500, body="Internal Server Error")

    with pytest.raises(RateProviderError, match=r"^HTTP 500$"):
        KrakenProvider(base_url=loopback.url).fetch(ASSETS)


def test_http_429_says_rate_limited(loopback):
    loopback.route(
        "GET",
        TICKER,
        status=429,
        body="<html>slow down</html>",
        content_type="text/html",
        headers={"Retry-After": "30"},
    )

    with pytest.raises(RateProviderError, match=r"rate limited \(HTTP 429\), retry after 30 s"):
        KrakenProvider(base_url=loopback.url).fetch(ASSETS)


def test_redirect_is_not_followed(loopback):
    loopback.route("GET", TICKER, status=302, headers={"Location": "/elsewhere"})

    with pytest.raises(RateProviderError, match="HTTP 302"):
        KrakenProvider(base_url=loopback.url).fetch(ASSETS)
    assert len(loopback.requests) == 1


def test_slow_answer_times_out(loopback):
    loopback.route("GET", TICKER, json_body=ticker_body(LAST_PRICES), delay=2.0)

    # The error says the provider gave up waiting (closing the server ends the delay).
    with pytest.raises(RateProviderError, match=r"^timed out after 0.3 s$"):
        KrakenProvider(base_url=loopback.url, timeout=0.3).fetch(ASSETS)
    assert len(loopback.requests) == 1  # asked once, not retried


def test_connection_refused_is_refused():
    with LoopbackServer() as server:
        url = server.url  # nothing listens there once the server is closed

    with pytest.raises(RateProviderError, match=r"^request failed: "):
        KrakenProvider(base_url=url, timeout=0.5).fetch(ASSETS)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<html><body>Bad gateway</body></html>", "not valid JSON"),
        ('{"error": [], "result": {"XXBTZUSD": {"c": ["1"', "not valid JSON"),
        ("[]", "not a Kraken ticker object"),
        ('{"error": "EGeneral:Internal error"}', "not a Kraken ticker object"),
        ('{"error": []}', "no `result` object"),
        ('{"error": [], "result": []}', "no `result` object"),
    ],
)
def test_malformed_answer_is_refused(loopback, body, message):
    loopback.route("GET", TICKER, body=body, content_type="application/json")

    with pytest.raises(RateProviderError, match=message):
        KrakenProvider(base_url=loopback.url).fetch(ASSETS)


def test_base_url_may_end_with_a_slash(loopback):
    loopback.route("GET", TICKER, json_body=ticker_body(LAST_PRICES))

    KrakenProvider(base_url=loopback.url + "/").fetch(["BTC"])

    assert loopback.requests[0].path == TICKER


def test_server_sequence_answers_in_turn(loopback):
    loopback.route("GET", TICKER, Reply(status=500), Reply(json_body=ticker_body(LAST_PRICES)))
    provider = KrakenProvider(base_url=loopback.url)

    with pytest.raises(RateProviderError, match="HTTP 500"):
        provider.fetch(["BTC"])
    assert provider.fetch(["BTC"])["BTC"].usd_per_coin == Decimal("97123.40000")
    assert provider.fetch(["BTC"])["BTC"].usd_per_coin == Decimal("97123.40000")
