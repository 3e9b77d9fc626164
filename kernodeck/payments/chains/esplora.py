"""Bitcoin and Litecoin through the Esplora REST API (Blockstream, mempool.space, litecoinspace).

`base_url` includes the API prefix, e.g. https://blockstream.info/api or
https://litecoinspace.org/api. Per scan: GET /blocks/tip/height (a bare integer as text/plain),
then per address, `concurrency` requests at a time, GET /address/:address/txs, which answers
up to 50 mempool transactions and the newest 25 confirmed ones, newest first; older confirmed
ones come 25 at a time from /address/:address/txs/chain/:last_seen_txid. Every output paying
the address is one transfer. A transaction replaced (RBF) or reorged out simply stops being
reported, and confirmations go down after a reorg: the adapter reports what the API shows now,
the watcher reconciles.

Block scanning (`scan_blocks`), where cost follows the chain instead of our addresses: read
the mempool's txids (GET /mempool/txids), then the tip, check that the last block scanned is
still on the chain (GET /block-height/:height against the hash stored with it; on a mismatch
walk back through the stored blocks to the fork), then read each new block (GET
/block/:hash for its time and size, GET /block/:hash/txs/:start_index, 25 transactions a
page) and report every output paying a watched address; transactions that entered the
mempool since the last scan (not in `examined`) are read one by one (GET /tx/:txid). The
first scan and a reorg deeper than the stored blocks answer `fallback` with a reason
instead: the watcher then polls every address once and starts again from the tip. So do
a chain more than `max_blocks` ahead (an outage) and more new mempool transactions than
`mempool_budget` (a flood), but only when polling every watched address costs fewer
requests than reading them all (`polling_cost`): at 10 000 watched addresses a backlog of
a few hundred pages or a few thousand mempool transactions is read, not 10 000 addresses.

The chain checked (`chain_mode` given): before its first scan in a process, the adapter
asks GET /block-height/0 and compares the genesis block's hash with the configured
chain's (GENESIS: mainnet, testnet, regtest per coin); a server on another chain fails
every scan as this network's error (asked again each pass until it answers right, then
remembered for the process: a server does not change chains under the same URL).
"""

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
    PollScan,
    ScanResult,
    WatchTarget,
    json_int,
    unix_time,
)
from kernodeck.payments.chains.http import (
    DEFAULT_TIMEOUT,
    each_concurrently,
    get_json,
    get_text,
    new_client,
)

logger = logging.getLogger(__name__)

ASSETS = {"bitcoin": "BTC", "litecoin": "LTC"}
KEPT_BLOCKS = 12  # [height, hash] pairs remembered: a reorg deeper than this falls back
# Reorg depth on Bitcoin and Litecoin: stored transfers in the last REORG_DEPTH blocks have
# their block's hash checked against the chain on every pass (`block_hashes`).
REORG_DEPTH = 12
MAX_BLOCKS_PER_SCAN = 6  # more new blocks than this (a long outage): poll addresses instead
MEMPOOL_BUDGET = 1000  # new mempool transactions read per scan; more: poll addresses instead
BLOCK_PAGE_SIZE = 25  # transactions per /block/:hash/txs/:start_index page
CHAIN_PAGE_SIZE = 25  # confirmed transactions per page (electrs CHAIN_TXS_PER_PAGE)
MAX_CHAIN_PAGES = 20  # older pages fetched per address after the first answer
BECH32_PREFIXES = ("bc1", "tb1", "bcrt1", "ltc1", "tltc1", "rltc1")

_HASH = re.compile(r"[0-9a-f]{64}")

# Genesis block hashes per (network, KERNODECK_CHAIN_MODE): what /block-height/0 answers.
_BITCOIN_MAIN = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
_BITCOIN_TESTNET3 = "000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943"
_BITCOIN_TESTNET4 = "00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043"
_BITCOIN_SIGNET = "00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6"
_BITCOIN_REGTEST = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"
_LITECOIN_MAIN = "12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2"
_LITECOIN_TESTNET4 = "4966625a4b2851d9fdee139e56211a0d88575f59ed816ff5e6a63deb4e3e29a0"
_LITECOIN_REGTEST = "530827f38f93b43ed12af0b3ad25a288dc02ed74d6d7857862df51fc56c416f9"
GENESIS = {
    ("bitcoin", "mainnet"): frozenset({_BITCOIN_MAIN}),
    ("bitcoin", "testnet"): frozenset({_BITCOIN_TESTNET3, _BITCOIN_TESTNET4, _BITCOIN_SIGNET}),
    ("bitcoin", "regtest"): frozenset({_BITCOIN_REGTEST}),
    ("litecoin", "mainnet"): frozenset({_LITECOIN_MAIN}),
    ("litecoin", "testnet"): frozenset({_LITECOIN_TESTNET4}),
    ("litecoin", "regtest"): frozenset({_LITECOIN_REGTEST}),
}
# (network, base URL, chain mode) whose genesis block was found right in this process.
_GENESIS_CHECKED: set[tuple[str, str, str]] = set()
_GENESIS_LOCK = threading.Lock()


@dataclass
class BlockScan(ScanResult):
    """What a block scan saw, besides the transfers and the tip.

    `blocks`: the [height, hash] pairs to remember (oldest first), the new cursor.
    `rescanned_from`: the first height read in this scan; a stored transfer at or above it
    that was not reported is no longer in those blocks (a reorg took it away).
    `mempool`: the txids in the mempool when the scan began; `examined`: the txids read or
    known (to pass as `examined` next time).
    `fallback`: why the scan did nothing and the addresses must be polled instead ("" when
    it did its work); `blocks` is then the tip to start the next scan from."""

    blocks: list = field(default_factory=list)
    rescanned_from: int | None = None
    mempool: frozenset = frozenset()
    examined: frozenset = frozenset()
    fallback: str = ""


class EsploraAdapter:
    """Credits to our receive addresses on Bitcoin or Litecoin, read from an Esplora API."""

    reorg_depth = REORG_DEPTH
    # Its address polling asks per address (no multi-address route): a pass may poll them
    # in turns (watching.rotation).
    polls_each_address = True

    def __init__(
        self,
        network: str,
        base_url: str,
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int = 1,
        max_blocks: int = MAX_BLOCKS_PER_SCAN,
        mempool_budget: int = MEMPOOL_BUDGET,
        chain_mode: str | None = None,
    ):
        if network not in ASSETS:
            raise ValueError(f"Esplora serves bitcoin or litecoin, not {network!r}")
        # None: no genesis check (an adapter built by hand, e.g. a test's).
        self.chain_mode = chain_mode
        self.genesis = GENESIS[(network, chain_mode)] if chain_mode else frozenset()
        self.network = network
        self.asset = ASSETS[network]
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.sleep = sleep
        self.concurrency = concurrency
        self.max_blocks = max_blocks
        self.mempool_budget = mempool_budget

    def scan(self, targets: Sequence[WatchTarget], *, cursor: int | None = None) -> ScanResult:
        """Every output paying one of `targets`, mempool included; `cursor` is not used."""
        addresses = list(dict.fromkeys(target.address for target in targets))
        with new_client() as client:
            self._check_chain(client)
            tip = self._tip(client)
            # One request (or a few pages) per address, `concurrency` at a time.
            histories = each_concurrently(
                lambda address: self._history(client, address),
                addresses,
                workers=self.concurrency,
            )
        transfers: dict[tuple[str, int], ObservedTransfer] = {}
        for address, history in zip(addresses, histories, strict=True):
            for tx in history:
                for transfer in self._credits(tx, address, tip):
                    transfers.setdefault((transfer.txid, transfer.index), transfer)
        return ScanResult(transfers=list(transfers.values()), tip=tip)

    def scan_since(self, targets: Sequence[WatchTarget], *, cursors: dict) -> PollScan:
        """What `scan` reports, skipping the history of each address whose counters
        (GET /address/:address: chain_stats and mempool_stats, a digest of which is its
        cursor) are those of its cursor: no transaction came, went or changed there. The
        watcher gives no cursor for an address with a transfer it must still re-check
        (unconfirmed, or within REORG_DEPTH blocks), so those are read in full each pass.

        An address without a cursor has its history read; only one with a history then
        has its counters read, and they become its cursor only where they count the
        transactions read (nothing came in between). An address never paid costs its
        (empty) history each pass, which is as cheap as its counters."""
        addresses = list(dict.fromkeys(target.address for target in targets))
        with new_client() as client:
            self._check_chain(client)
            tip = self._tip(client)

            def counters(address: str) -> tuple[str | None, int | None]:
                # An API that does not answer them has the history read (never a skip).
                try:
                    return self._counters(client, address)
                except ChainError as exc:
                    logger.debug("%s: no counters of %s (%s)", self.network, address, exc)
                    return None, None

            def poll(address: str) -> tuple[str | None, list[dict] | None]:
                if address in cursors:
                    # The counters first, the history after: whatever arrives in between
                    # is in the history, and changes the counters the next pass compares.
                    digest, _count = counters(address)
                    if digest is not None and cursors[address] == digest:
                        return digest, None
                    return digest, self._history(client, address)
                history = self._history(client, address)
                if not history:
                    return None, history
                digest, count = counters(address)
                return (digest if count == len(history) else None), history

            polled = each_concurrently(poll, addresses, workers=self.concurrency)
        transfers: dict[tuple[str, int], ObservedTransfer] = {}
        positions, complete = {}, set()
        for address, (digest, history) in zip(addresses, polled, strict=True):
            if digest is not None:
                positions[address] = digest
            if history is None:
                continue
            complete.add(address)
            for tx in history:
                for transfer in self._credits(tx, address, tip):
                    transfers.setdefault((transfer.txid, transfer.index), transfer)
        return PollScan(
            transfers=list(transfers.values()),
            tip=tip,
            cursors=positions,
            complete=frozenset(complete),
        )

    def _counters(self, client: httpx.Client, address: str) -> tuple[str, int]:
        """A digest of the address's chain_stats and mempool_stats (GET /address/:address),
        and the number of transactions they count."""
        body = self._get(client, f"/address/{quote(address, safe='')}")
        body = body if isinstance(body, dict) else {}
        stats = {name: body.get(name) for name in ("chain_stats", "mempool_stats")}
        if not all(isinstance(value, dict) for value in stats.values()):
            raise ChainError(f"{self.network}: /address/{address} has no transaction counters")
        counts = [value.get("tx_count") for value in stats.values()]
        if not all(isinstance(count, int) and not isinstance(count, bool) for count in counts):
            raise ChainError(f"{self.network}: /address/{address} has no transaction counts")
        text = json.dumps(stats, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32], sum(counts)

    def scan_blocks(
        self,
        watched: Callable[[set[str]], Iterable[str]],
        *,
        blocks: Sequence[Sequence],
        examined: frozenset = frozenset(),
        polling_cost: Callable[[], int] | None = None,
    ) -> BlockScan:
        """Credits to watched addresses in the blocks after the last of `blocks` (the
        cursor, as [height, hash] pairs) and in the mempool transactions not in `examined`.

        `watched(addresses)` answers which of the addresses these transactions pay are
        watched (bech32 ones given in lower case), so the cost follows the blocks, not
        the number of watched addresses (`watched_among(targets)` for a fixed list).

        More than `max_blocks` new blocks or `mempool_budget` new mempool transactions
        fall back to polling the addresses only where that is cheaper: `polling_cost()`
        (asked only then) is the requests polling every watched address would take (one
        an address), and the scan goes on while its own requests (two per new block, its
        pages, one per new mempool transaction) are no more than that. Either way every
        new block and every new mempool transaction is read, or every address polled:
        nothing is left for a later pass."""
        with new_client() as client:
            self._check_chain(client)
            # The mempool first, the tip after: a transaction that leaves the mempool in
            # between is in a block at or below the tip, so it is never missed by both.
            mempool = self._mempool(client)
            tip = self._tip(client)
            kept = self._still_on_chain(client, blocks, tip)
            if kept is None:
                reason = "no block scanned yet" if not blocks else "a reorg deeper than we keep"
                return self._fallback(client, tip, mempool, reason)
            start = kept[-1][0] + 1
            heights = list(range(start, tip + 1))
            new = [txid for txid in mempool if txid not in examined]
            over = ""
            if len(heights) > self.max_blocks:
                over = f"{len(heights)} new blocks"
            elif len(new) > self.mempool_budget:
                over = f"{len(new)} new mempool txs"
            budget = None
            if over:
                # The least the scan costs (no page read yet) against polling every address.
                budget = polling_cost() if polling_cost is not None else 0
                if 2 * len(heights) + len(new) > budget:
                    return self._fallback(client, tip, mempool, _cheaper(over, budget))
            headers = []
            for height in heights:
                block_hash = self._block_hash(client, height)
                headers.append((height, block_hash, self._block_header(client, block_hash)))
            if budget is not None:
                pages = sum(-(-count // BLOCK_PAGE_SIZE) for _h, _hash, (count, _t) in headers)
                if 2 * len(heights) + pages + len(new) > budget:
                    return self._fallback(client, tip, mempool, _cheaper(over, budget))
                logger.info("%s: %s, scanned (polling would cost %d)", self.network, over, budget)
            txs = []  # the blocks' transactions first: they win over a mempool copy
            for height, block_hash, header in headers:
                txs.extend(self._block_txs(client, height, block_hash, header))
                kept.append([height, block_hash])
            fetched = each_concurrently(
                lambda txid: self._get(client, f"/tx/{txid}"), new, workers=self.concurrency
            )
        for tx in fetched:
            if not isinstance(tx, dict) or not isinstance(tx.get("txid"), str):
                raise ChainError(f"{self.network}: a mempool transaction without a txid")
            txs.append(tx)
        ours = _Addresses(watched({key for tx in txs for key in _output_keys(tx)}))
        transfers: dict[tuple[str, int], ObservedTransfer] = {}
        for tx in txs:
            for address in ours.paid_by(tx):
                for transfer in self._credits(tx, address, tip):
                    transfers.setdefault((transfer.txid, transfer.index), transfer)
        return BlockScan(
            transfers=list(transfers.values()),
            tip=tip,
            blocks=kept[-KEPT_BLOCKS:],
            rescanned_from=start,
            mempool=frozenset(mempool),
            examined=frozenset(mempool),
        )

    def _fallback(self, client, tip: int, mempool: list[str], reason: str) -> BlockScan:
        """Nothing scanned: the next scan starts after the tip, the addresses cover the rest."""
        return BlockScan(
            tip=tip,
            blocks=[[tip, self._block_hash(client, tip)]],
            mempool=frozenset(mempool),
            examined=frozenset(mempool),
            fallback=reason,
        )

    def block_hashes(self, heights: Iterable[int]) -> dict[int, str]:
        """The chain's block hash at each of `heights` now (GET /block-height/:height), for
        the watcher to see which stored transfers' blocks a reorg replaced; a height above
        the tip is absent (its block is gone too)."""
        heights = sorted(set(heights))
        with new_client() as client:
            self._check_chain(client)
            tip = self._tip(client)
            below = [height for height in heights if height <= tip]
            hashes = each_concurrently(
                lambda height: self._block_hash(client, height), below, workers=self.concurrency
            )
        return dict(zip(below, hashes, strict=True))

    def _check_chain(self, client: httpx.Client) -> None:
        """The server is on the configured chain (its genesis block), or ChainError: a
        mainnet install pointed at a testnet or regtest server would count worthless coins.
        Asked once per process and server once it answered right."""
        if not self.genesis:
            return
        key = (self.network, self.base_url, self.chain_mode)
        with _GENESIS_LOCK:
            if key in _GENESIS_CHECKED:
                return
        found = self._block_hash(client, 0)
        if found not in self.genesis:
            raise ChainError(
                f"{self.network}: the Esplora server at {self.base_url} is on another chain "
                f"(genesis block {found[:16]}…, not the {self.chain_mode} one): its answers "
                "are refused (check KERNODECK_CHAIN_MODE and the server's URL)"
            )
        with _GENESIS_LOCK:
            _GENESIS_CHECKED.add(key)

    def _still_on_chain(self, client, blocks: Sequence[Sequence], tip: int) -> list | None:
        """The stored blocks up to the newest one still on the chain (a reorg replaced the
        ones after it); None when there are none or none is."""
        kept = [[int(height), str(block_hash)] for height, block_hash in blocks]
        while kept:
            height, block_hash = kept[-1]
            if height <= tip and self._block_hash(client, height) == block_hash:
                return kept
            kept.pop()
        return None

    def _mempool(self, client: httpx.Client) -> list[str]:
        txids = self._get(client, "/mempool/txids")
        if not isinstance(txids, list) or not all(
            isinstance(txid, str) and _HASH.fullmatch(txid) for txid in txids
        ):
            raise ChainError(f"{self.network}: the mempool's txids are not a list of txids")
        return txids

    def _block_hash(self, client: httpx.Client, height: int) -> str:
        text = get_text(
            f"{self.base_url}/block-height/{height}",
            timeout=self.timeout,
            sleep=self.sleep,
            client=client,
        )
        if not _HASH.fullmatch(text):
            raise ChainError(f"{self.network}: block {height} has no hash: {text[:80]!r}")
        return text

    def _block_header(self, client: httpx.Client, block_hash: str) -> tuple[int, Any]:
        """The block's number of transactions and its time (GET /block/:hash)."""
        block = self._get(client, f"/block/{block_hash}")
        if not isinstance(block, dict) or block.get("id") != block_hash:
            raise ChainError(f"{self.network}: block {block_hash} answered another block")
        count = json_int(block.get("tx_count"), f"{self.network}: tx_count", high=10**7)
        return count, block.get("timestamp")

    def _block_txs(
        self, client: httpx.Client, height: int, block_hash: str, header: tuple[int, Any]
    ) -> list[dict]:
        """The block's transactions, each with the block's status (pages carry none)."""
        count, timestamp = header
        status = {
            "confirmed": True,
            "block_height": height,
            "block_hash": block_hash,
            "block_time": timestamp,
        }
        pages = each_concurrently(
            lambda start: self._get(client, f"/block/{block_hash}/txs/{start}"),
            list(range(0, count, BLOCK_PAGE_SIZE)),
            workers=self.concurrency,
        )
        return [
            {**tx, "status": status}
            for page in pages
            for tx in _tx_list(page, f"block {block_hash}")
        ]

    def _get(self, client: httpx.Client, path: str) -> Any:
        return get_json(
            f"{self.base_url}{path}", timeout=self.timeout, sleep=self.sleep, client=client
        )

    def _tip(self, client: httpx.Client) -> int:
        text = get_text(
            f"{self.base_url}/blocks/tip/height",
            timeout=self.timeout,
            sleep=self.sleep,
            client=client,
        )
        # A bounded length first: int() of thousands of digits is slow, then refused.
        if not text.isascii() or not text.isdigit() or len(text) > 20:
            raise ChainError(f"{self.network}: tip height is not a number: {text[:40]!r}")
        return json_int(int(text), f"{self.network}: tip height")

    def _history(self, client: httpx.Client, address: str) -> list[dict]:
        """The address's transactions: mempool ones and all confirmed ones, page by page."""
        quoted = quote(address, safe="")
        txs = _tx_list(self._get(client, f"/address/{quoted}/txs"), address)
        page = [tx for tx in txs if _status(tx).get("confirmed") is True]
        for _ in range(MAX_CHAIN_PAGES):
            if len(page) < CHAIN_PAGE_SIZE:
                return txs
            last_seen = quote(page[-1]["txid"], safe="")
            page = _tx_list(self._get(client, f"/address/{quoted}/txs/chain/{last_seen}"), address)
            txs.extend(page)
        if len(page) >= CHAIN_PAGE_SIZE:
            logger.warning(
                "%s: stopped paging %s after %d older pages; older transactions not scanned",
                self.network,
                address,
                MAX_CHAIN_PAGES,
            )
        return txs

    def _credits(self, tx: dict, address: str, tip: int) -> list[ObservedTransfer]:
        status = _status(tx)
        confirmed = status.get("confirmed") is True
        height = block_time = block_hash = None
        if confirmed:
            height = json_int(status.get("block_height"), f"{self.network}: block_height")
            if status.get("block_time") is not None:
                block_time = unix_time(status["block_time"], f"{self.network}: block_time")
            block_hash = status.get("block_hash")
            if block_hash is not None and not (
                isinstance(block_hash, str) and _HASH.fullmatch(block_hash)
            ):
                raise ChainError(f"{self.network}: {tx['txid']}'s block hash is no hash")
        # A block found between the tip request and this one would give 0: it is in a block.
        confirmations = max(tip - height + 1, 1) if height is not None else 0
        vout = tx.get("vout")
        if not isinstance(vout, list):
            raise ChainError(f"{self.network}: transaction {tx['txid']} has no vout list")
        credits = []
        for index, output in enumerate(vout):
            # OP_RETURN and other non-standard outputs have no scriptpubkey_address.
            paid_to = output.get("scriptpubkey_address") if isinstance(output, dict) else None
            if not isinstance(paid_to, str) or not _same_address(paid_to, address):
                continue
            value = _optional_int(output.get("value"))
            if value is None:
                raise ChainError(f"{self.network}: output {tx['txid']}:{index} has no value")
            credits.append(
                ObservedTransfer(
                    network=self.network,
                    txid=tx["txid"],
                    index=index,
                    address=address,
                    asset=self.asset,
                    amount_base=value,
                    confirmations=confirmations,
                    block_height=height,
                    block_time=block_time,
                    block_hash=block_hash,
                )
            )
        return credits


class _Addresses:
    """The watched addresses, to find the outputs of a transaction that pay one of them."""

    def __init__(self, addresses):
        self.by_key = {_address_key(address): address for address in addresses}

    def paid_by(self, tx: dict) -> list[str]:
        """Our addresses (as the targets spell them) that outputs of `tx` pay, once each."""
        vout = tx.get("vout")
        if not isinstance(vout, list):
            return []  # _credits refuses it if it mattered: only ours are looked at
        found = []
        for output in vout:
            paid_to = output.get("scriptpubkey_address") if isinstance(output, dict) else None
            if isinstance(paid_to, str):
                address = self.by_key.get(_address_key(paid_to))
                if address is not None and address not in found:
                    found.append(address)
        return found


def _cheaper(over: str, addresses: int) -> str:
    """Why a block scan fell back: too much to read, and polling the addresses cheaper."""
    return f"{over}, more requests than polling {addresses} addresses" if addresses else over


def watched_among(targets: Sequence[WatchTarget]) -> Callable[[set[str]], list[str]]:
    """A `watched` answer for scan_blocks from a fixed list of targets."""
    by_key = {_address_key(target.address): target.address for target in targets}
    return lambda keys: [address for key, address in by_key.items() if key in keys]


def _output_keys(tx: dict) -> list[str]:
    vout = tx.get("vout")
    if not isinstance(vout, list):
        return []
    return [
        _address_key(output["scriptpubkey_address"])
        for output in vout
        if isinstance(output, dict) and isinstance(output.get("scriptpubkey_address"), str)
    ]


def _address_key(address: str) -> str:
    return address.lower() if address.lower().startswith(BECH32_PREFIXES) else address


def _tx_list(body: Any, address: str) -> list[dict]:
    if not isinstance(body, list):
        raise ChainError(f"history of {address} is not a list of transactions")
    for tx in body:
        if not isinstance(tx, dict) or not isinstance(tx.get("txid"), str):
            raise ChainError(f"history of {address} holds an entry without a txid")
    return list(body)


def _status(tx: dict) -> dict:
    status = tx.get("status")
    return status if isinstance(status, dict) else {}


def _optional_int(value: Any) -> int | None:
    """An integer from the JSON body (a Decimal means a fraction: refused); None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChainError(f"expected an integer, got {value!r}")
    return value


def _same_address(a: str, b: str) -> bool:
    """Bech32 addresses are case-insensitive (and lower-case by convention); base58 are not."""
    if a.lower().startswith(BECH32_PREFIXES):
        return a.lower() == b.lower()
    return a == b
