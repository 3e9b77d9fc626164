"""Bitcoin and Litecoin through the operator's own node: Bitcoin Core's (or Litecoin Core's)
JSON-RPC interface, instead of a third party's Esplora server.

Kernodeck scans blocks; it does not load a watch-only wallet into the node. Each pass asks
`getblockchaininfo` (the node must be on the configured chain: `main`, `test`, `regtest`,
else the pass fails as this network's error and nothing it said is believed),
`getrawmempool`, `getblockhash` for the blocks it remembers (a reorg shows as another hash
at a remembered height: the scan goes back to the newest block still on the chain; one
deeper than all of them is followed back to its fork with `getblockheader`), then
`getblock <hash> 2` for each new block (every transaction with its outputs) and
`getrawtransaction <txid> true` for each mempool transaction it has not read yet. Every
output paying a watched address is one transfer, exactly as with Esplora's block scan
(`EsploraAdapter.scan_blocks`): the watcher stores and reconciles both the same way.

Why a block scan and not a watch-only descriptor wallet with `listsinceblock`: the scan
needs nothing from the node but the RPC (a pruned node and one built without a wallet
serve it, no `txindex` is needed: blocks are read by hash and mempool transactions are in
the mempool), it keeps no state of ours in the node (no import, no rescan of the chain for
each new address, nothing to lose when the node is rebuilt), and it is the same code path
the Esplora block scan already proved, reorgs included. Its cost follows the blocks (one
`getblock` per block), not the number of addresses.

Calls go in JSON-RPC batches (a list of calls in one POST), which every Core version
answers with HTTP 200 and one result or error per call (a single call's error is an HTTP
500 on Core before v28). Credentials come from the URL (http://user:password@host:port/)
or from the node's cookie file (read on each pass: the node writes a new one at start-up).

Core versions differ: an output's address is `scriptPubKey.address` from Bitcoin Core 22
on, `scriptPubKey.addresses` (a list) before, as in Litecoin Core 0.21; both are read.

Unlike Esplora, a node has no address index: `scan(targets)` (the watcher's address poll)
can only look at the mempool. It is used for instructions created since the last pass (a
mempool transaction read before they existed); a pass whose block scan failed does not
fall back on it (it would report confirmed payments as gone): the scan's error stands.
"""

import base64
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
    ScanResult,
    WatchTarget,
    json_int,
    unix_time,
)
from kernodeck.payments.chains.esplora import (
    ASSETS,
    KEPT_BLOCKS,
    BlockScan,
    _address_key,
    _same_address,
)
from kernodeck.payments.chains.http import DEFAULT_TIMEOUT, new_client, post_json

logger = logging.getLogger(__name__)

# The chain names getblockchaininfo answers, per network and Kernodeck's chain mode.
CHAINS = {
    ("bitcoin", "mainnet"): {"main"},
    ("bitcoin", "testnet"): {"test", "testnet4", "signet"},
    ("bitcoin", "regtest"): {"regtest"},
    ("litecoin", "mainnet"): {"main"},
    ("litecoin", "testnet"): {"test"},
    ("litecoin", "regtest"): {"regtest"},
}
START_DEPTH = KEPT_BLOCKS  # the first scan (or one after a deeper reorg) reads this many
MAX_BLOCKS_PER_SCAN = 50  # blocks read per pass; a longer outage is caught up pass by pass
MEMPOOL_BUDGET = 2000  # new mempool transactions read per pass; the rest in the next ones
BATCH = 200  # calls per JSON-RPC batch (getrawtransaction, getblockhash)
BLOCK_TX_CHUNK = 25  # transactions per batch of a block too large to read at once
COIN = 10**8  # satoshis (litoshis) per coin: Core writes values in coins, 8 decimals
MAX_REWIND = 1000  # replaced blocks walked back through to find a deep reorg's fork
TX_NOT_FOUND = -5  # RPC_INVALID_ADDRESS_OR_KEY: the transaction left the mempool


class CoreRpcAdapter:
    """Credits to our receive addresses on Bitcoin or Litecoin, read from the operator's
    own Bitcoin Core or Litecoin Core node over JSON-RPC."""

    scans_blocks_only = True  # no address index: the watcher must scan blocks

    def __init__(
        self,
        network: str,
        url: str,
        *,
        chain_mode: str = "mainnet",
        cookie_file: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        max_blocks: int = MAX_BLOCKS_PER_SCAN,
        mempool_budget: int = MEMPOOL_BUDGET,
        start_depth: int = START_DEPTH,
    ):
        if network not in ASSETS:
            raise ValueError(f"Core RPC serves bitcoin or litecoin, not {network!r}")
        self.network = network
        self.asset = ASSETS[network]
        self.chains = CHAINS[(network, chain_mode)]
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        netloc += f":{parts.port}" if parts.port else ""
        # Without the credentials: what the cache key and the error messages show.
        self.base_url = urlunsplit((parts.scheme, netloc, parts.path or "/", "", ""))
        self._user_password = None
        if parts.username is not None:
            self._user_password = f"{parts.username}:{parts.password or ''}"
        self.cookie_file = cookie_file
        self.timeout = timeout
        self.sleep = sleep
        self.max_blocks = max_blocks
        self.mempool_budget = mempool_budget
        self.start_depth = start_depth
        self._scan_error: ChainError | None = None

    # -- the adapter interface -------------------------------------------------------------

    def scan(self, targets: Sequence[WatchTarget], *, cursor: int | None = None) -> ScanResult:
        """Every mempool output paying one of `targets` (a node has no address index:
        confirmed ones come from the block scan). After a failed block scan in this pass,
        its error again: an address poll here would take confirmed payments for gone."""
        if self._scan_error is not None:
            raise ChainError(
                f"{self.network}: the block scan failed and a node cannot be polled by "
                f"address: {self._scan_error}"
            )
        with new_client() as client:
            mempool = self._mempool(client)
            tip = self._chain_tip(client)
            txs = self._mempool_txs(client, mempool)
        ours = _Addresses(target.address for target in targets)
        return ScanResult(transfers=self._transfers(txs, ours, tip), tip=tip)

    def scan_blocks(
        self,
        watched: Callable[[set[str]], Iterable[str]],
        *,
        blocks: Sequence[Sequence],
        examined: frozenset = frozenset(),
        polling_cost=None,
    ) -> BlockScan:
        """Credits to watched addresses in the blocks after the last of `blocks` ([height,
        hash] pairs) and in the mempool transactions not in `examined`; as
        EsploraAdapter.scan_blocks, but it never asks the watcher to poll addresses (so
        `polling_cost` is not asked): the first scan starts `start_depth` blocks below the
        tip, a reorg deeper than the remembered blocks rescans those, and a long outage is
        read `max_blocks` a pass."""
        try:
            return self._scan_blocks(watched, blocks=blocks, examined=examined)
        except ChainError as exc:
            self._scan_error = exc
            raise

    def _scan_blocks(self, watched, *, blocks, examined) -> BlockScan:
        with new_client() as client:
            # The mempool first, the tip after: a transaction that leaves the mempool in
            # between is in a block at or below the tip, so it is never missed by both.
            mempool = self._mempool(client)
            tip = self._chain_tip(client)
            kept = self._still_on_chain(client, blocks, tip)
            if not kept and blocks:
                # Deeper than the blocks kept: the node still knows the replaced blocks,
                # so the fork is found by walking back from the oldest one kept.
                kept = self._fork_of(client, str(min(blocks)[1]))
                logger.warning(
                    "%s: a reorg deeper than the blocks kept, %s",
                    self.network,
                    f"rescanning from block {kept[0][0] + 1}" if kept else "fork not found",
                )
            start = kept[-1][0] + 1 if kept else max(tip - self.start_depth + 1, 0)
            end = min(tip, start + self.max_blocks - 1)
            if end < tip:
                logger.info("%s: %d blocks behind, reading %d", self.network, tip - end, end)
            txs = []  # the blocks' transactions first: they win over a mempool copy
            hashes = self._calls(client, [("getblockhash", [h]) for h in range(start, end + 1)])
            for height, block_hash in zip(range(start, end + 1), hashes, strict=True):
                block_hash = _checked_hash(block_hash, f"{self.network}: block {height}")
                txs.extend(self._block_txs(client, height, block_hash))
                kept.append([height, block_hash])
            new = [txid for txid in mempool if txid not in examined][: self.mempool_budget]
            fetched = self._mempool_txs(client, new)
        read = {tx["txid"] for tx in fetched}
        ours = _Addresses(watched({key for tx in txs + fetched for key in _output_keys(tx)}))
        return BlockScan(
            transfers=self._transfers(txs + fetched, ours, tip),
            tip=tip,
            blocks=kept[-KEPT_BLOCKS:],
            rescanned_from=start,
            mempool=frozenset(mempool),
            # Those over the budget are read by the next passes.
            examined=frozenset(txid for txid in mempool if txid in examined or txid in read),
        )

    # -- reading the node ------------------------------------------------------------------

    def _chain_tip(self, client) -> int:
        """The tip's height, once the node proved it is on the configured chain."""
        (info,) = self._calls(client, [("getblockchaininfo", [])])
        if not isinstance(info, dict):
            raise ChainError(f"{self.network}: getblockchaininfo answered no object")
        chain = info.get("chain")
        if chain not in self.chains:
            expected = " or ".join(sorted(self.chains))
            raise ChainError(
                f"{self.network}: the node at {self.base_url} is on chain {str(chain)[:20]!r}, "
                f"not {expected}: its answers are refused (check KERNODECK_CHAIN_MODE and "
                "the node's URL)"
            )
        return json_int(info.get("blocks"), f"{self.network}: tip height")

    def _mempool(self, client) -> list[str]:
        (txids,) = self._calls(client, [("getrawmempool", [])])
        if not isinstance(txids, list):
            raise ChainError(f"{self.network}: getrawmempool answered no list")
        return [_checked_hash(txid, f"{self.network}: a mempool txid") for txid in txids]

    def _still_on_chain(self, client, blocks: Sequence[Sequence], tip: int) -> list:
        """The stored blocks up to the newest one still on the chain (a reorg replaced the
        ones after it); empty when there are none or none is."""
        kept = [[int(height), str(block_hash)] for height, block_hash in blocks]
        kept = [pair for pair in kept if pair[0] <= tip]
        hashes = self._calls(client, [("getblockhash", [height]) for height, _ in kept])
        while kept and hashes[len(kept) - 1] != kept[-1][1]:
            kept.pop()
        return kept

    def _fork_of(self, client, block_hash: str) -> list:
        """[[height, hash]] of the newest block of the active chain below the replaced
        block `block_hash` (`getblockheader`: a block off the active chain has
        confirmations -1), at most MAX_REWIND blocks back; empty when the node does not
        know the block (rebuilt) or the fork is deeper."""
        for _ in range(MAX_REWIND):
            try:
                (header,) = self._calls(client, [("getblockheader", [block_hash])])
            except ChainError as exc:
                logger.info("%s: block %s unknown to the node: %s", self.network, block_hash, exc)
                return []
            if not isinstance(header, dict):
                raise ChainError(f"{self.network}: getblockheader answered no object")
            confirmations = header.get("confirmations")
            if isinstance(confirmations, int) and confirmations >= 0:
                height = json_int(header.get("height"), f"{self.network}: header height")
                return [[height, _checked_hash(header.get("hash"), "a block hash")]]
            previous = header.get("previousblockhash")
            if previous is None:
                return []
            block_hash = _checked_hash(previous, f"{self.network}: previousblockhash")
        return []

    def _block_txs(self, client, height: int, block_hash: str) -> list[dict]:
        """The block's transactions, each with the block's height and time: the whole
        block at once (`getblock` verbosity 2), or, for a block whose answer is larger than
        an answer may be (a full block of big witnesses), its txids and then its
        transactions a few at a time (`getrawtransaction` with the block's hash: no
        txindex needed)."""
        try:
            block = self._block(client, height, block_hash, verbosity=2)
            txs = block["tx"]
        except ChainError as exc:
            if not _too_large(exc):
                raise
            logger.info("%s: block %s read transaction by transaction", self.network, height)
            block = self._block(client, height, block_hash, verbosity=1)
            txs = self._txs_of(
                client, block_hash, [_checked_hash(t, "a txid") for t in block["tx"]]
            )
        status = {"height": height, "time": block.get("time"), "hash": block_hash}
        for tx in txs:
            if not isinstance(tx, dict):
                raise ChainError(f"{self.network}: block {block_hash} holds no transaction list")
        return [{**tx, "_block": status} for tx in txs]

    def _block(self, client, height: int, block_hash: str, *, verbosity: int) -> dict:
        (block,) = self._calls(client, [("getblock", [block_hash, verbosity])])
        if not isinstance(block, dict) or block.get("hash") != block_hash:
            raise ChainError(f"{self.network}: block {block_hash} answered another block")
        if block.get("height") != height or not isinstance(block.get("tx"), list):
            raise ChainError(f"{self.network}: block {block_hash} is not block {height}")
        return block

    def _txs_of(self, client, block_hash: str, txids: list[str]) -> list[dict]:
        """The transactions `txids` of the block, BLOCK_TX_CHUNK per batch, one by one
        where a batch's answer is too large."""
        txs = []
        for start in range(0, len(txids), BLOCK_TX_CHUNK):
            chunk = [
                ("getrawtransaction", [t, True, block_hash])
                for t in txids[start:][:BLOCK_TX_CHUNK]
            ]
            try:
                txs.extend(self._calls(client, chunk))
            except ChainError as exc:
                if not _too_large(exc) or len(chunk) == 1:
                    raise
                for call in chunk:
                    txs.extend(self._calls(client, [call]))
        for txid, tx in zip(txids, txs, strict=True):
            if not isinstance(tx, dict) or tx.get("txid") != txid:
                raise ChainError(f"{self.network}: getrawtransaction {txid} answered another")
        return txs

    def _mempool_txs(self, client, txids: Sequence[str]) -> list[dict]:
        """The mempool transactions `txids`, less those that left it meanwhile."""
        answers = self._calls(
            client,
            [("getrawtransaction", [txid, True]) for txid in txids],
            missing_ok=True,
        )
        txs = []
        for txid, tx in zip(txids, answers, strict=True):
            if tx is None:
                continue  # mined or replaced since getrawmempool: the blocks tell
            if not isinstance(tx, dict) or tx.get("txid") != txid:
                raise ChainError(f"{self.network}: getrawtransaction {txid} answered another")
            if tx.get("blockhash"):
                continue  # mined meanwhile (a node with txindex says so): its block tells
            txs.append(tx)
        return txs

    def _calls(self, client, calls: list[tuple[str, list]], *, missing_ok=False) -> list:
        """The results of `calls`, BATCH calls per JSON-RPC batch, in their order. An error
        fails the scan, except "no such transaction" with `missing_ok` (None then)."""
        results = []
        for start in range(0, len(calls), BATCH):
            chunk = calls[start : start + BATCH]
            payload = [
                {"id": index, "method": method, "params": params}
                for index, (method, params) in enumerate(chunk)
            ]
            answer = post_json(
                self.base_url,
                payload,
                headers=self._auth_header(),
                timeout=self.timeout,
                sleep=self.sleep,
                client=client,
            )
            by_id = _answers_by_id(answer, len(chunk), self.network)
            for index, (method, _params) in enumerate(chunk):
                body = by_id[index]
                error = body.get("error")
                if error is None:
                    results.append(body.get("result"))
                    continue
                code = error.get("code") if isinstance(error, dict) else None
                if missing_ok and code == TX_NOT_FOUND:
                    results.append(None)
                    continue
                message = error.get("message") if isinstance(error, dict) else error
                raise ChainError(
                    f"{self.network}: {method} failed: JSON-RPC error {code}: {str(message)[:120]}"
                )
        return results

    def _auth_header(self) -> dict[str, str]:
        credentials = self._user_password
        if self.cookie_file:
            try:
                credentials = Path(self.cookie_file).read_text().strip()
            except OSError as exc:
                raise ChainError(
                    f"{self.network}: the node's cookie file cannot be read: {exc.strerror}"
                ) from None
        if not credentials:
            return {}
        token = base64.b64encode(credentials.encode()).decode()
        return {"Authorization": f"Basic {token}"}

    # -- what the transactions pay ---------------------------------------------------------

    def _transfers(self, txs: list[dict], ours: "_Addresses", tip: int) -> list:
        transfers: dict[tuple[str, int], ObservedTransfer] = {}
        for tx in txs:
            for transfer in self._credits(tx, ours, tip):
                transfers.setdefault((transfer.txid, transfer.index), transfer)
        return list(transfers.values())

    def _credits(self, tx: dict, ours: "_Addresses", tip: int) -> list[ObservedTransfer]:
        txid = tx.get("txid")
        if not isinstance(txid, str):
            raise ChainError(f"{self.network}: a transaction without a txid")
        vout = tx.get("vout")
        if not isinstance(vout, list):
            raise ChainError(f"{self.network}: transaction {txid} has no vout list")
        block = tx.get("_block")
        height = block_time = block_hash = None
        if block is not None:
            height, block_hash = block["height"], block["hash"]
            if block["time"] is not None:
                block_time = unix_time(block["time"], f"{self.network}: block time")
        # A block found between the tip request and this one would give 0: it is in a block.
        confirmations = max(tip - height + 1, 1) if height is not None else 0
        credits = []
        for position, output in enumerate(vout):
            if not isinstance(output, dict):
                raise ChainError(f"{self.network}: output {txid}:{position} is no object")
            address = ours.paying(output)
            if address is None:
                continue
            index = json_int(output.get("n", position), f"{self.network}: output index")
            credits.append(
                ObservedTransfer(
                    network=self.network,
                    txid=txid,
                    index=index,
                    address=address,
                    asset=self.asset,
                    amount_base=_base_units(output.get("value"), f"{self.network} {txid}"),
                    confirmations=confirmations,
                    block_height=height,
                    block_time=block_time,
                    block_hash=block_hash,
                )
            )
        return credits


class _Addresses:
    """The watched addresses, to find the outputs that pay one of them."""

    def __init__(self, addresses: Iterable[str]):
        self.by_key = {_address_key(address): address for address in addresses}

    def paying(self, output: dict) -> str | None:
        """Our address (as the targets spell it) that `output` pays, or None."""
        for paid_to in output_addresses(output):
            address = self.by_key.get(_address_key(paid_to))
            if address is not None and _same_address(paid_to, address):
                return address
        return None


def output_addresses(output: dict) -> list[str]:
    """The address an output pays: `scriptPubKey.address` (Bitcoin Core 22 and later) or
    the one of `scriptPubKey.addresses` (before, and Litecoin Core 0.21); none for
    OP_RETURN, bare multisig (several addresses: no single payee) and the like."""
    script = output.get("scriptPubKey")
    if not isinstance(script, dict):
        return []
    address = script.get("address")
    if isinstance(address, str):
        return [address]
    addresses = script.get("addresses")
    if isinstance(addresses, list) and len(addresses) == 1 and isinstance(addresses[0], str):
        return addresses
    return []


def _output_keys(tx: dict) -> list[str]:
    vout = tx.get("vout")
    if not isinstance(vout, list):
        return []
    return [
        _address_key(address)
        for output in vout
        if isinstance(output, dict)
        for address in output_addresses(output)
    ]


def _base_units(value: Any, what: str) -> int:
    """Core's value in coins (a JSON number with up to 8 decimals) as satoshis, exactly."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise ChainError(f"{what}: an output without a value")
    units = Decimal(value) * COIN
    if units != units.to_integral_value() or units < 0:
        raise ChainError(f"{what}: the value {value} is not a whole number of base units")
    return int(units)


def _too_large(exc: ChainError) -> bool:
    """Whether the answer was refused for its size (http's MAX_BODY_BYTES)."""
    return "answer is larger than" in str(exc)


def _checked_hash(value: Any, what: str) -> str:
    if not isinstance(value, str) or len(value) != 64 or not _is_hex(value):
        raise ChainError(f"{what} is not a hash: {str(value)[:80]!r}")
    return value


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _answers_by_id(answer: Any, count: int, network: str) -> dict[int, dict]:
    """A batch's answers by call id; ChainError when one is missing or malformed (a
    node answering a batch with one error object: bad credentials, a wrong path)."""
    if isinstance(answer, dict) and answer.get("error"):
        error = answer["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise ChainError(f"{network}: the node refused the request: {str(message)[:120]}")
    if not isinstance(answer, list):
        raise ChainError(f"{network}: the node answered a batch with no list")
    by_id = {}
    for body in answer:
        if isinstance(body, dict) and isinstance(body.get("id"), int):
            by_id[body["id"]] = body
    if sorted(by_id) != list(range(count)):
        raise ChainError(f"{network}: the node's batch answer lacks some calls")
    return by_id
