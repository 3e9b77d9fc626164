"""The watch-only wallets this installation is configured with (from settings)."""

import functools

from django.conf import settings

from kernodeck.payments import methods
from kernodeck.payments.wallets import WatchOnlyWallet, load_wallets


@functools.cache
def _load(keys: tuple, solana_recipient: str, testnet: bool, demo: bool):
    return load_wallets(
        keys=dict(keys), solana_recipient=solana_recipient, testnet=testnet, demo=demo
    )


def testnet() -> bool:
    """Test coins: testnet, or regtest (which uses testnet keys, tpub/vpub…)."""
    return settings.KERNODECK_CHAIN_MODE in {"testnet", "regtest"}


def regtest() -> bool:
    """The operator's own regtest nodes (rehearsals): bcrt1…/rltc1… addresses."""
    return settings.KERNODECK_CHAIN_MODE == "regtest"


def ethereum_chain_id() -> int:
    """The EIP-155 chain id the Ethereum node must answer (and payment URIs carry):
    mainnet 1, testnet Sepolia, regtest the operator's dev chain (KERNODECK_ETHEREUM_CHAIN_ID,
    1337 unless set)."""
    if regtest():
        return settings.KERNODECK_ETHEREUM_CHAIN_ID or methods.ETHEREUM_DEV_CHAIN_ID
    return methods.ETHEREUM_CHAIN_ID[testnet()]


def configured_wallets() -> dict[str, WatchOnlyWallet]:
    """Wallets by chain; a chain without a key (outside demo mode) is absent."""
    return _load(
        tuple(sorted(settings.KERNODECK_XPUBS.items())),
        settings.KERNODECK_SOLANA_RECIPIENT,
        testnet(),
        settings.KERNODECK_DEMO,
    )
