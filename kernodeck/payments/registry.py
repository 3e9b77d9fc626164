"""The watch-only wallets this installation is configured with (from settings)."""

import functools

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from kernodeck.payments import methods
from kernodeck.payments.chains.base import CONTRACT_FORMATS
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


# regtest: the ERC-20 contracts of the operator's dev chain. By default the mainnet ones,
# where a rehearsal places its tokens (ganache's evm_setAccountCode, Anvil's anvil_setCode);
# these settings name others. Mainnet and testnet contracts are fixed (payments.methods).
REGTEST_CONTRACT_SETTINGS = {
    "usdt-ethereum": "KERNODECK_ETHEREUM_USDT_CONTRACT",
    "usdc-ethereum": "KERNODECK_ETHEREUM_USDC_CONTRACT",
}
_EVM_ADDRESS = CONTRACT_FORMATS["ethereum"]  # what the watcher accepts from the chain


def contract_setting_problems() -> list[str]:
    """What is wrong with the regtest contract settings (the system check reports it)."""
    problems = []
    for name in REGTEST_CONTRACT_SETTINGS.values():
        value = getattr(settings, name, "")
        if not value:
            continue
        if not regtest():
            problems.append(
                f"{name} is for KERNODECK_CHAIN_MODE=regtest: mainnet and testnet token "
                "contracts are fixed."
            )
        elif not _EVM_ADDRESS.fullmatch(value):
            problems.append(f"{name} must be a 0x address (0x and 40 hex digits): {value[:50]!r}")
    return problems


def token_contract(code: str) -> str | None:
    """The token contract of method `code` in this chain mode (None: not a token, or no
    contract on this network, e.g. USDT on the testnets)."""
    if regtest() and code in REGTEST_CONTRACT_SETTINGS:
        name = REGTEST_CONTRACT_SETTINGS[code]
        value = getattr(settings, name, "")
        if not value:
            return methods.token_contract(code, testnet=False)
        if not _EVM_ADDRESS.fullmatch(value):
            raise ImproperlyConfigured(f"{name} must be a 0x address (0x and 40 hex digits).")
        return value
    return methods.token_contract(code, testnet=testnet())


def missing_contract(code: str) -> bool:
    """A token method with no known contract in this chain mode."""
    return bool(methods.spec(code).token_contract) and token_contract(code) is None
