"""The one interface every chain adapter implements (BTCPay-style: small, per network).

An adapter polls a public API over HTTP and reports every credit it sees to the addresses
(or Solana references) it was asked about. It never touches the database: the watcher
stores what it returns, then reconciles. Adapters hold no lock and keep no state between
calls; a cursor (e.g. the next Ethereum block to scan) is passed in and handed back.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol


class ChainError(Exception):
    """The chain's API gave no usable answer (network, timeout, HTTP error, bad body)."""


@dataclass(frozen=True)
class WatchTarget:
    """Something to look at: one of our addresses, or a Solana Pay reference key."""

    address: str  # our receive address (for Solana: the shared recipient)
    reference: str | None = None  # Solana Pay reference key of one intent


@dataclass(frozen=True)
class ObservedTransfer:
    """One credit to one of our addresses, as the chain shows it right now."""

    network: str  # "bitcoin", "litecoin", "ethereum", "tron", "solana"
    txid: str
    index: int  # output index (UTXO) or log index (tokens); 0 for native ETH/TRX/SOL
    address: str  # our address that received it
    asset: str  # "BTC", "LTC", "ETH", "TRX", "SOL", "USDT", "USDC", or "TOKEN" (unknown contract)
    amount_base: int  # integer base units of `asset` (for "TOKEN": the raw token amount)
    confirmations: int  # 0 while in the mempool / not in a block
    block_height: int | None = None  # block (or slot) it was included in
    block_time: datetime | None = None  # aware UTC, from the block
    token_contract: str | None = None  # contract of a token transfer, as the chain spells it
    failed: bool = False  # included but failed (reverted, OUT_OF_ENERGY, err) — never credited
    final: bool = False  # finalized / solidified where the chain has that notion
    reference: str | None = None  # Solana: the reference key found in the transaction


@dataclass
class ScanResult:
    transfers: list[ObservedTransfer] = field(default_factory=list)
    tip: int = 0  # head height (slot for Solana) when the scan ran
    cursor: int | None = None  # where the next scan should resume (Ethereum blocks), else None


class ChainAdapter(Protocol):
    network: str

    def scan(self, targets: Sequence[WatchTarget], *, cursor: int | None = None) -> ScanResult:
        """Report every credit to `targets`; raise ChainError if the API failed."""
        ...
