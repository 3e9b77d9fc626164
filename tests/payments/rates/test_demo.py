from datetime import UTC, datetime, timedelta
from decimal import Decimal

from kernodeck.core import clock
from kernodeck.payments.rates.base import ASSETS, FetchedRate
from kernodeck.payments.rates.demo import DemoProvider

NOW = datetime(2026, 3, 2, 12, 30, tzinfo=UTC)


def test_prices_every_asset_as_demo():
    clock.freeze(NOW)

    rates = DemoProvider().fetch(ASSETS)

    assert rates == {
        "BTC": FetchedRate("BTC", Decimal("97000.00"), "demo", NOW),
        "ETH": FetchedRate("ETH", Decimal("3400.00"), "demo", NOW),
        "USDT": FetchedRate("USDT", Decimal("1.0000"), "demo", NOW),
        "USDC": FetchedRate("USDC", Decimal("1.0000"), "demo", NOW),
        "TRX": FetchedRate("TRX", Decimal("0.2400"), "demo", NOW),
        "SOL": FetchedRate("SOL", Decimal("190.00"), "demo", NOW),
        "LTC": FetchedRate("LTC", Decimal("95.00"), "demo", NOW),
    }


def test_each_answer_is_stamped_with_the_current_time():
    provider = DemoProvider()
    clock.freeze(NOW)
    first = provider.fetch(["BTC"])["BTC"]
    clock.freeze(NOW + timedelta(minutes=5))

    second = provider.fetch(["BTC"])["BTC"]

    assert first.fetched_at == NOW
    assert second.fetched_at == NOW + timedelta(minutes=5)


def test_unfrozen_stamp_is_aware_utc_and_fresh():
    before = datetime.now(UTC)

    rate = DemoProvider().fetch(["ETH"])["ETH"]

    assert rate.fetched_at.utcoffset() == timedelta(0)
    assert before <= rate.fetched_at <= datetime.now(UTC)


def test_answers_only_the_assets_asked_for():
    assert list(DemoProvider().fetch(["SOL", "TRX"])) == ["SOL", "TRX"]
