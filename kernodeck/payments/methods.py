"""The eight payment methods (DESIGN.md section 3): exact asset + network pairs.

The table is the source for the `PaymentMethod` rows (created by a data migration); the
rows hold what operators may change (enabled flag, confirmations, quoting precision).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class MethodSpec:
    code: str
    asset: str
    network: str
    chain: str  # the wallet/address sequence it draws from
    decimals: int  # base-unit decimals of the asset
    precision: int  # decimals the amount is quoted to (rounded up)
    confirmations: int
    token_contract: dict[bool, str | None] | None = None  # testnet? -> contract
    label: str = ""


METHODS = (
    MethodSpec("btc-bitcoin", "BTC", "Bitcoin", "bitcoin", 8, 8, 2, label="BTC on Bitcoin"),
    MethodSpec("eth-ethereum", "ETH", "Ethereum", "ethereum", 18, 6, 12, label="ETH on Ethereum"),
    MethodSpec(
        "usdt-ethereum",
        "USDT",
        "Ethereum (ERC-20)",
        "ethereum",
        6,
        2,
        12,
        token_contract={False: "0xdAC17F958D2ee523a2206206994597C13D831ec7", True: None},
        label="USDT on Ethereum (ERC-20)",
    ),
    MethodSpec(
        "usdc-ethereum",
        "USDC",
        "Ethereum (ERC-20)",
        "ethereum",
        6,
        2,
        12,
        # Circle's USDC on Sepolia for testnet rehearsals.
        token_contract={
            False: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
            True: "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238",
        },
        label="USDC on Ethereum (ERC-20)",
    ),
    MethodSpec("trx-tron", "TRX", "Tron", "tron", 6, 2, 19, label="TRX on Tron"),
    MethodSpec(
        "usdt-tron",
        "USDT",
        "Tron (TRC-20)",
        "tron",
        6,
        2,
        19,
        token_contract={False: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", True: None},
        label="USDT on Tron (TRC-20)",
    ),
    MethodSpec("sol-solana", "SOL", "Solana", "solana", 9, 6, 32, label="SOL on Solana"),
    MethodSpec("ltc-litecoin", "LTC", "Litecoin", "litecoin", 8, 8, 6, label="LTC on Litecoin"),
)
BY_CODE = {spec.code: spec for spec in METHODS}
ETHEREUM_CHAIN_ID = {False: 1, True: 11155111}  # mainnet, Sepolia
# regtest (KERNODECK_CHAIN_MODE=regtest): the operator's dev chain, 1337 (ganache, geth
# --dev) unless KERNODECK_ETHEREUM_CHAIN_ID says otherwise (31337: Hardhat, Anvil).
ETHEREUM_DEV_CHAIN_ID = 1337


def spec(code: str) -> MethodSpec:
    return BY_CODE[code]


def token_contract(code: str, *, testnet: bool) -> str | None:
    method = BY_CODE[code]
    return method.token_contract[testnet] if method.token_contract else None


def missing_contract(code: str, *, testnet: bool) -> bool:
    """A token method with no known contract on this network (e.g. USDT on testnets)."""
    return bool(BY_CODE[code].token_contract) and token_contract(code, testnet=testnet) is None
