from decimal import Decimal

import pytest

from kernodeck.core import clock
from kernodeck.payments.models import Rate
from kernodeck.payments.services import payment_methods_ensure
from kernodeck.payments.wallets import demo_wallet

CHAINS = ("bitcoin", "litecoin", "ethereum", "tron")


@pytest.fixture
def demo_mode(settings, db):
    """Demo mode: demo wallets and demo rates on demand."""
    settings.KERNODECK_DEMO = True
    payment_methods_ensure()
    return settings


@pytest.fixture
def configured(settings, db):
    """Production-like: keys given in settings (the public test keys), no demo fallback."""
    payment_methods_ensure()
    settings.KERNODECK_DEMO = False
    settings.KERNODECK_XPUBS = {c: demo_wallet(c, testnet=False).public_key for c in CHAINS}
    settings.KERNODECK_SOLANA_RECIPIENT = demo_wallet("solana", testnet=False).public_key
    return settings


@pytest.fixture
def fresh_rates(db):
    """One fresh manual-style rate per asset, as a provider would have stored."""
    values = {
        "BTC": "97000",
        "ETH": "3400",
        "USDT": "1.0002",
        "USDC": "0.9998",
        "TRX": "0.24",
        "SOL": "190",
        "LTC": "95",
    }
    return {
        asset: Rate.objects.create(
            asset=asset, usd_per_coin=Decimal(v), source="kraken", fetched_at=clock.now()
        )
        for asset, v in values.items()
    }
