"""The one interface every chain adapter implements (BTCPay-style: small, per network).

An adapter polls a public API over HTTP and reports every credit it sees to the addresses
(or Solana references) it was asked about. It never touches the database: the watcher
stores what it returns, then reconciles. Adapters hold no lock and keep no state between
calls; a cursor (e.g. the next Ethereum block to scan) is passed in and handed back.

The records an adapter returns check themselves when built (ObservedTransfer, ScanResult):
a chain API that answers nonsense (an amount beyond any supply or beyond the database
column, a negative height, a block time outside the chains' lifetime, an over-long or
binary string, `true` where a number belongs) fails that network's scan with a ChainError
instead of reaching the database, the pages or the other networks. The helpers below
(`json_int`, `unix_time`) turn raw JSON values into checked ones for the adapters.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from kernodeck.core import clock


class ChainError(Exception):
    """The chain's API gave no usable answer (network, timeout, HTTP error, bad body)."""


NETWORKS = frozenset({"bitcoin", "litecoin", "ethereum", "tron", "solana"})

# Largest believable amount per asset, in base units: about ten times each asset's whole
# supply (BTC 21 M, LTC 84 M, ETH ~120 M, TRX ~100 G, SOL ~600 M, USDT/USDC ~150 G). An
# answer above it is an API fault, not money. "TOKEN" (a contract we do not know, often
# spam) is bounded only by what Transfer.amount_base holds (Decimal(40, 0), and a CHECK at
# 10**39 - 1 so that SQLite, which keeps such numbers as floats, can still read them back);
# adapters drop unknown-token transfers above that (anyone can emit such an event) instead
# of failing.
AMOUNT_COLUMN_MAX = 10**39 - 1
MAX_AMOUNT_BASE = {
    "BTC": 21 * 10**7 * 10**8,
    "LTC": 84 * 10**7 * 10**8,
    "ETH": 10**10 * 10**18,
    "TRX": 10**12 * 10**6,
    "SOL": 10**10 * 10**9,
    "USDT": 10**13 * 10**6,
    "USDC": 10**13 * 10**6,
    "TOKEN": AMOUNT_COLUMN_MAX,
}
MAX_HEIGHT = 10**12  # blocks or slots; Solana, the fastest, is near 4 * 10**8
MAX_INDEX = 2**31 - 1  # Transfer.index and .confirmations are 32-bit integer columns
# Block times: not before the first chain (Bitcoin's genesis block), not more than a day
# ahead of our clock (chains allow a block's time a little ahead of real time).
EARLIEST_BLOCK_TIME = datetime(2009, 1, 3, tzinfo=UTC)
BLOCK_TIME_AHEAD = timedelta(days=1)

# Strings an API hands us end up in columns and pages: printable ASCII only, as the chains
# write them (hex, base58, bech32), no spaces, no control characters, never a NUL byte.
_TOKEN_TEXT = re.compile(r"[0-9A-Za-z]+")
# Each chain's own spelling of a transaction id, and of a token contract where it has one.
_BASE58 = "[1-9A-HJ-NP-Za-km-z]"
TXID_FORMATS = {
    "bitcoin": re.compile(r"[0-9a-fA-F]{64}"),
    "litecoin": re.compile(r"[0-9a-fA-F]{64}"),
    "tron": re.compile(r"[0-9a-fA-F]{64}"),
    "ethereum": re.compile(r"0x[0-9a-fA-F]{64}"),
    "solana": re.compile(_BASE58 + "{64,88}"),  # a 64-byte signature in base58
}
CONTRACT_FORMATS = {
    "ethereum": re.compile(r"0x[0-9a-fA-F]{40}"),
    "tron": re.compile(rf"T{_BASE58}{{33}}|[0-9A-Za-z]{{1,64}}"),  # TRC-20, or a TRC-10 id
}
TXID_MAX = 100  # Transfer.txid
ADDRESS_MAX = 100  # Transfer.address
CONTRACT_MAX = 64  # Transfer.token_contract
REFERENCE_MAX = 64  # Transfer.reference


def json_int(value: Any, what: str, *, low: int = 0, high: int = MAX_HEIGHT) -> int:
    """`value` from a JSON answer as an int in [low, high]; ChainError otherwise.

    `true` is no number (Python's bool is an int: refused by name), nor is a fraction
    (parsed as Decimal), a numeric string or anything nested."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChainError(f"{what} is not an integer: {_shown(value)}")
    if not low <= value <= high:
        raise ChainError(f"{what} is out of range: {_shown(value)}")
    return value


def unix_time(seconds: Any, what: str, *, milliseconds: bool = False) -> datetime:
    """A JSON Unix time (seconds, or milliseconds) as an aware UTC datetime inside the
    plausible window; ChainError for anything else (never OverflowError or OSError)."""
    scale = 1000 if milliseconds else 1
    latest = clock.now() + BLOCK_TIME_AHEAD
    value = json_int(
        seconds,
        what,
        low=int(EARLIEST_BLOCK_TIME.timestamp()) * scale,
        high=int(latest.timestamp()) * scale,
    )
    whole, fraction = divmod(value, scale)
    return datetime.fromtimestamp(whole, tz=UTC) + timedelta(milliseconds=fraction)


def _shown(value: Any) -> str:
    """A bad value for an error message: its type and the start of its text."""
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'…' if len(text) > 40 else ''}"


def _check_text(value: Any, what: str, *, longest: int, optional: bool = False) -> None:
    if optional and (value is None or value == ""):
        return  # absent (stored as "")
    if not isinstance(value, str):
        raise ChainError(f"{what} is not text: {_shown(value)}")
    if not 0 < len(value) <= longest:
        raise ChainError(f"{what} is empty or longer than {longest} characters")
    if not _TOKEN_TEXT.fullmatch(value):
        raise ChainError(f"{what} holds characters no chain uses: {_shown(value)}")


def _check_flag(value: Any, what: str) -> None:
    if not isinstance(value, bool):
        raise ChainError(f"{what} is not true or false: {_shown(value)}")


@dataclass(frozen=True)
class WatchTarget:
    """Something to look at: one of our addresses, or a Solana Pay reference key."""

    address: str  # our receive address (for Solana: the shared recipient)
    reference: str | None = None  # Solana Pay reference key of one intent


@dataclass(frozen=True)
class ObservedTransfer:
    """One credit to one of our addresses, as the chain shows it right now.

    Checked when built: a value that cannot be true or cannot be stored raises ChainError."""

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
    block_hash: str | None = None  # the block's hash where the adapter reports it
    # (Ethereum, Bitcoin and Litecoin)

    def __post_init__(self):
        if self.network not in NETWORKS:
            raise ChainError(f"unknown network {_shown(self.network)}")
        if self.asset not in MAX_AMOUNT_BASE:
            raise ChainError(f"{self.network}: unknown asset {_shown(self.asset)}")
        where = f"{self.network} transfer"
        _check_text(self.txid, f"{where}: txid", longest=TXID_MAX)
        where = f"{self.network} transfer {self.txid}"
        _check_text(self.address, f"{where}: address", longest=ADDRESS_MAX)
        _check_text(self.token_contract, f"{where}: contract", longest=CONTRACT_MAX, optional=True)
        _check_text(self.reference, f"{where}: reference", longest=REFERENCE_MAX, optional=True)
        _check_text(self.block_hash, f"{where}: block hash", longest=TXID_MAX, optional=True)
        json_int(self.index, f"{where}: index", high=MAX_INDEX)
        json_int(
            self.amount_base, f"{where}: amount of {self.asset}", high=MAX_AMOUNT_BASE[self.asset]
        )
        json_int(self.confirmations, f"{where}: confirmations", high=MAX_INDEX)
        if self.block_height is not None:
            json_int(self.block_height, f"{where}: block height")
        if self.block_time is not None:
            if not isinstance(self.block_time, datetime) or self.block_time.tzinfo is None:
                raise ChainError(f"{where}: block time is not an aware datetime")
            latest = clock.now() + BLOCK_TIME_AHEAD
            if not EARLIEST_BLOCK_TIME <= self.block_time <= latest:
                raise ChainError(f"{where}: block time {self.block_time} is impossible")
        _check_flag(self.failed, f"{where}: failed")
        _check_flag(self.final, f"{where}: final")


@dataclass
class ScanResult:
    """What one scan saw; checked when built like ObservedTransfer."""

    transfers: list[ObservedTransfer] = field(default_factory=list)
    tip: int = 0  # head height (slot for Solana) when the scan ran
    cursor: int | None = None  # where the next scan should resume (Ethereum blocks), else None
    # A block-window scan (Ethereum): the blocks [scanned_from, scanned_to] it read for
    # every target, so a stored transfer there that it did not report left the chain...
    scanned_from: int | None = None
    scanned_to: int | None = None
    # ...unless its transaction is among these (seen, but not judged yet: no receipt).
    undecided: frozenset = frozenset()
    # [height, hash] pairs of the blocks scanned, newest last, for the next scan's reorg
    # check (ChainState.scanned_blocks); None leaves the stored ones as they are.
    blocks: list | None = None
    # Balance of each target at block `balances_at`, in the native asset's base units,
    # where the scan read them (Ethereum's internal-transfer check).
    balances: dict = field(default_factory=dict)
    balances_at: int | None = None

    def __post_init__(self):
        json_int(self.tip, "chain tip")
        if self.cursor is not None:
            json_int(self.cursor, "scan cursor", high=MAX_HEIGHT + 1)
        for bound in (self.scanned_from, self.scanned_to, self.balances_at):
            if bound is not None:
                json_int(bound, "scanned block")
        for address, balance in self.balances.items():
            json_int(balance, f"balance of {address}", high=AMOUNT_COLUMN_MAX)
        if not all(isinstance(item, ObservedTransfer) for item in self.transfers):
            raise ChainError("a scan returned something that is not an observed transfer")


@dataclass
class PollScan(ScanResult):
    """A scan since per-key cursors (`scan_since`): where each key's next scan resumes
    (`cursors`, key -> position; only keys whose position is known), and the addresses
    whose whole window since their cursor was read (`complete`): a stored, not yet final
    transfer there that the scan did not report left the chain; elsewhere nothing is judged."""

    cursors: dict = field(default_factory=dict)
    complete: frozenset = frozenset()

    def __post_init__(self):
        super().__post_init__()
        for key, position in self.cursors.items():
            _check_text(key, "cursor key", longest=ADDRESS_MAX)
            _check_text(position, f"cursor of {key}", longest=TXID_MAX)


def scan_checked(
    adapter: "ChainAdapter", targets: Sequence[WatchTarget], *, cursor: int | None = None
) -> ScanResult:
    """`adapter.scan`, and a check that the answer is about what was asked (the adapter's
    own network, the targets' addresses and references) and spelled as the chain spells
    it (transaction ids, token contracts)."""
    return checked_scan(adapter, targets, adapter.scan(targets, cursor=cursor))


def checked_scan(
    adapter: "ChainAdapter", targets: Sequence[WatchTarget], result: Any
) -> ScanResult:
    """`result` of one of `adapter`'s scans of `targets`, checked as scan_checked does."""
    if not isinstance(result, ScanResult):
        raise ChainError(f"{adapter.network}: the scan returned no ScanResult")
    addresses = {target.address for target in targets}
    references = {target.reference for target in targets if target.reference}
    for transfer in result.transfers:
        if transfer.network != adapter.network:
            raise ChainError(f"{adapter.network}: a transfer on {transfer.network} came back")
        if transfer.address not in addresses:
            raise ChainError(f"{adapter.network}: transfer {transfer.txid} to an unasked address")
        if transfer.reference and transfer.reference not in references:
            raise ChainError(f"{adapter.network}: transfer {transfer.txid}: unasked reference")
        if not TXID_FORMATS[transfer.network].fullmatch(transfer.txid):
            raise ChainError(f"{adapter.network}: {transfer.txid} is no transaction id here")
        contract = CONTRACT_FORMATS.get(transfer.network)
        if transfer.token_contract and (
            not contract or not contract.fullmatch(transfer.token_contract)
        ):
            raise ChainError(
                f"{adapter.network}: {transfer.token_contract} is no token contract here"
            )
    return result


class ChainAdapter(Protocol):
    """What every adapter offers. One may offer more: Esplora's `scan_blocks` (new blocks
    and mempool transactions against the watched addresses), which the watcher prefers
    where KERNODECK_WATCH_BLOCK_SCAN allows it; its answer is checked with checked_scan."""

    network: str

    def scan(self, targets: Sequence[WatchTarget], *, cursor: int | None = None) -> ScanResult:
        """Report every credit to `targets`; raise ChainError if the API failed."""
        ...
