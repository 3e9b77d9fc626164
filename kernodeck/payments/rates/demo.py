"""Fixed demo prices: no network, for the demo environment and development."""

from collections.abc import Sequence
from decimal import Decimal

from kernodeck.core import clock
from kernodeck.payments.rates.base import FetchedRate, requested_assets

# Plausible 2026 prices, made up for the demo. They are not market data.
DEMO_PRICES = {
    "BTC": Decimal("97000.00"),
    "ETH": Decimal("3400.00"),
    "USDT": Decimal("1.0000"),
    "USDC": Decimal("1.0000"),
    "TRX": Decimal("0.2400"),
    "SOL": Decimal("190.00"),
    "LTC": Decimal("95.00"),
}


class DemoProvider:
    """DEMO RATES, not market prices: a fixed table, stamped with the current time.

    Used only when the demo mode is on, so a demo runs without network access; never
    configure it for real payments.
    """

    name = "demo"

    def fetch(self, assets: Sequence[str]) -> dict[str, FetchedRate]:
        fetched_at = clock.now()
        return {
            asset: FetchedRate(asset, DEMO_PRICES[asset], self.name, fetched_at)
            for asset in requested_assets(assets)
        }
