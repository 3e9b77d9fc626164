"""Ether and ERC-20 tokens (USDT, USDC) through an Ethereum JSON-RPC node.

Each scan covers a range of blocks, [first, last], up to the head:
- tokens: one `eth_getLogs` per block range for Transfer(address,address,uint256) events
  whose `to` topic is one of our addresses (up to ADDRESSES_PER_QUERY of them OR-ed in the
  topic; more make more calls), with no contract filter, so a transfer from ANY contract is seen: a
  configured contract gives its asset, any other gives "TOKEN" (a look-alike "USDT" is
  recorded, never credited). Queried `block_range` blocks at a time; a node that refuses a
  range as too large (every provider words it differently) is asked half of it, down to one
  block. Events with four topics (ERC-721 NFTs) and zero-value transfers (address-poisoning
  spam) are not credits and are skipped; so are logs a reorg `removed`.
- ether: every block with its transactions (`eth_getBlockByNumber(n, true)`); a transaction
  `to` one of our addresses with a value gets its receipt: status 0x1 is credited, 0x0 is
  `failed`, no receipt yet is skipped until a later scan (and reported `undecided`). Ether
  that a contract forwards (an internal call, e.g. from a smart-contract wallet) is no
  transaction `to` us: only the balances a scan reads on request (`balances=True`) show it.

Cursor: the next block this adapter has not scanned yet. A scan starts `rescan_depth` blocks
below the cursor (with no cursor: `first_scan_depth` blocks below the head), ends at the head
or after `max_blocks_per_scan` blocks, and returns the block after the last one scanned. The
overlap reports every transfer again on each scan until the scan that leaves it behind, which
sees it with more than `rescan_depth` confirmations; a transfer reorged out before then stops
being reported. Keep `rescan_depth` at least the confirmations the methods require.
Reorgs: a scan returns the [height, hash] pairs of the last `reorg_depth` blocks it read
(`blocks`); given them back, the next scan checks the newest against the node and scans
again from the fork when it changed, however far below the cursor. It also says which
blocks it read for every target (`scanned_from`, `scanned_to`): a stored transfer there
that it did not report left the chain.

`final` compares the block with the node's `finalized` block (False where the node has none,
or where that block is less than `final_depth` below the head: not believed). Every scan
first asks `eth_chainId` and refuses a node on another chain than `chain_id`.
"""

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import httpx

from kernodeck.payments.chains.base import (
    AMOUNT_COLUMN_MAX,
    MAX_AMOUNT_BASE,
    MAX_HEIGHT,
    ChainError,
    ObservedTransfer,
    ScanResult,
    WatchTarget,
    unix_time,
)
from kernodeck.payments.chains.http import DEFAULT_TIMEOUT, new_client, post_json, rpc_call

logger = logging.getLogger(__name__)

# keccak256("Transfer(address,address,uint256)"), shared by ERC-20 and ERC-721.
TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
FIRST_SCAN_DEPTH = 50  # blocks below the head where a scan without a cursor starts
RESCAN_DEPTH = 12  # blocks below the cursor scanned again each time (see the module doc)
# Blocks whose hashes are kept to find a reorg's fork (docs/architecture.md): two epochs,
# what proof-of-stake Ethereum takes to finalize; a deeper rewind rescans them all.
REORG_DEPTH = 64
# `to` topics OR-ed in one eth_getLogs: up to this many watched addresses cost one call per
# block range; geth refuses more than 1 000 values in one topic position (maxSubTopics).
ADDRESSES_PER_QUERY = 1000

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
# Words of the "range too large" refusals: geth/Infura -32005 "query returned more than 10000
# results", Infura -32602 "range 1000000 exceeds limit of 10000", Alchemy "Log response size
# exceeded", others "block range is bigger than maxBlockRange", "range limit 2000".
_RANGE_REFUSAL = re.compile(r"range|more than|too (many|large|big)|limit|exceed|size", re.I)
_LIMIT_EXCEEDED = -32005  # EIP-1474 "limit exceeded"


class EthereumAdapter:
    """Credits in ether and ERC-20 tokens to our addresses, read from a JSON-RPC node."""

    network = "ethereum"
    follows_blocks = True  # scans block windows: every watched address in every block

    def __init__(
        self,
        base_url: str,
        *,
        token_contracts: Mapping[str, str],
        timeout: float = DEFAULT_TIMEOUT,
        block_range: int = 500,
        max_blocks_per_scan: int = 2000,
        native_scan: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        first_scan_depth: int = FIRST_SCAN_DEPTH,
        rescan_depth: int = RESCAN_DEPTH,
        chain_id: int | None = None,
        final_depth: int = RESCAN_DEPTH,
        reorg_depth: int = REORG_DEPTH,
    ):
        for asset, contract in token_contracts.items():
            if not _ADDRESS.fullmatch(contract):
                raise ValueError(f"token contract of {asset} is not an address: {contract!r}")
        if block_range < 1 or first_scan_depth < 0 or rescan_depth < 0:
            raise ValueError("block_range must be positive, the depths not negative")
        # Each scan must get past the blocks it scans again, or the cursor never moves.
        if max_blocks_per_scan <= rescan_depth:
            raise ValueError("max_blocks_per_scan must be larger than rescan_depth")
        self.base_url = base_url
        self.assets = {contract.lower(): asset for asset, contract in token_contracts.items()}
        self.timeout = timeout
        self.block_range = block_range
        self.max_blocks_per_scan = max_blocks_per_scan
        self.native_scan = native_scan
        self.sleep = sleep
        self.first_scan_depth = first_scan_depth
        self.rescan_depth = rescan_depth
        self.chain_id = chain_id  # None: not checked
        self.final_depth = final_depth  # least distance below the head of a finalized block
        self.reorg_depth = reorg_depth  # how many scanned blocks' hashes are kept

    def scan(
        self,
        targets: Sequence[WatchTarget],
        *,
        cursor: int | None = None,
        blocks: Sequence | None = None,
        balances: bool = False,
    ) -> ScanResult:
        """Every credit to `targets` in the blocks from below `cursor` to the head.

        `blocks`: the [height, hash] pairs the last scan returned; when the chain no longer
        holds the newest of them, the scan starts again from the fork (the lowest stored
        block that changed), however deep. `balances`: also read each target's balance at
        the last block scanned (the internal-transfer check)."""
        ours = _our_addresses(targets)
        with new_client() as client:
            self._check_chain(client)
            tip = _quantity(self._call(client, "eth_blockNumber", []), "eth_blockNumber")
            fork = None
            if cursor is None:
                first = max(0, tip - self.first_scan_depth)
            else:
                first = max(0, cursor - self.rescan_depth)
                fork = self._fork(client, blocks or [], tip)
                if fork is not None:
                    first = min(first, fork)
            last = min(tip, first + self.max_blocks_per_scan - 1)
            # A node behind the one that answered last time has nothing new: keep the cursor
            # (unless a reorg sends it back to the fork).
            rewound = cursor is None or fork is not None
            next_cursor = last + 1 if rewound else max(cursor, last + 1)
            if not ours or first > last:
                return ScanResult(tip=tip, cursor=next_cursor)
            scan = _Scan(self, client, ours, tip, self._finalized(client, tip))
            if self.native_scan:
                for number in range(first, last + 1):
                    scan.ether_block(number)
            for group in _groups(sorted(ours), ADDRESSES_PER_QUERY):
                for log in self._logs(client, group, first, last):
                    scan.token_log(log)
            if last not in scan.block_hashes:
                scan.header(last)
            # Balances where the methods' confirmations are reached: money there that no
            # transfer up to that block explains is no unconfirmed payment in flight.
            balances_at = max(0, last - self.final_depth + 1)
            held = self._balances(client, list(ours.values()), balances_at) if balances else None
        kept = [pair for pair in blocks or [] if pair[0] < first]
        scanned = kept + [[n, h] for n, h in sorted(scan.block_hashes.items()) if n <= last]
        return ScanResult(
            transfers=list(scan.transfers.values()),
            tip=tip,
            cursor=next_cursor,
            scanned_from=first,
            scanned_to=last,
            undecided=frozenset(scan.undecided),
            blocks=[pair for pair in scanned if pair[0] > last - self.reorg_depth],
            balances=held or {},
            balances_at=balances_at if held is not None else None,
        )

    def _check_chain(self, client: httpx.Client) -> None:
        """The node is on the configured chain (EIP-155 chain id), or the scan fails: a
        mainnet install pointed at a testnet or a dev chain would count worthless coins."""
        if self.chain_id is None:
            return
        found = _quantity(self._call(client, "eth_chainId", []), "eth_chainId", high=2**64)
        if found != self.chain_id:
            raise ChainError(
                f"the node is on chain id {found}, not the configured {self.chain_id}: "
                "refused (check KERNODECK_ETHEREUM_RPC_URL and KERNODECK_CHAIN_MODE)"
            )

    def _fork(self, client: httpx.Client, blocks: Sequence, tip: int) -> int | None:
        """The first block to scan again because a reorg replaced it, or None when the
        newest stored block (at or below the head) is still the chain's: the hashes chain
        the blocks, so every older one is too. Walks back through the stored blocks to
        the newest one that still matches; a rewind deeper than all of them rescans from
        the oldest (logged: deeper than the reorg depth)."""
        stored = [(int(pair[0]), str(pair[1])) for pair in blocks if int(pair[0]) <= tip]
        for position, (height, block_hash) in enumerate(reversed(stored)):
            if self._hash_at(client, height) == block_hash:
                return None if position == 0 else height + 1
        if not stored:
            return None
        logger.warning(
            "ethereum: none of the last %s blocks scanned is on the chain any more: "
            "rescanning from block %s",
            len(stored),
            stored[0][0],
        )
        return stored[0][0]

    def _hash_at(self, client: httpx.Client, number: int) -> str | None:
        header = self._call(client, "eth_getBlockByNumber", [hex(number), False])
        if header is None:
            return None  # gone: a shorter chain after a reorg, or a node behind
        if not isinstance(header, dict) or not isinstance(header.get("hash"), str):
            raise ChainError(f"block {number}: answer is not a block header")
        return header["hash"]

    def _balances(self, client: httpx.Client, addresses: list[str], number: int) -> dict | None:
        """Each address's balance at block `number`; None (no check this time, logged) from
        a node that refuses eth_getBalance (a provider's plan, a simulator without it)."""
        held = {}
        for address in addresses:
            balance, error = self._call_or_error(client, "eth_getBalance", [address, hex(number)])
            if error is not None:
                logger.info("ethereum: no balances from the node: %s", _error_text(error))
                return None
            held[address] = _quantity(balance, f"balance of {address}", high=AMOUNT_COLUMN_MAX)
        return held

    def _call(self, client: httpx.Client, method: str, params: list) -> Any:
        return rpc_call(
            self.base_url,
            method,
            params,
            timeout=self.timeout,
            sleep=self.sleep,
            client=client,
        )

    def _call_or_error(self, client: httpx.Client, method: str, params: list) -> tuple[Any, Any]:
        """(result, None), or (None, the JSON-RPC error object) for the caller to judge.

        For the calls whose error is an answer, not a failure (a range too large, an
        unknown block tag, a method the node lacks); transport failures still raise
        ChainError after http's retries.
        """
        payload = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        body = post_json(
            self.base_url, payload, timeout=self.timeout, sleep=self.sleep, client=client
        )
        if not isinstance(body, dict) or not ("result" in body or "error" in body):
            raise ChainError(f"{method}: answer is not a JSON-RPC response")
        if body.get("error") is not None:
            return None, body["error"]
        return body.get("result"), None

    def _finalized(self, client: httpx.Client, tip: int) -> int | None:
        """The number of the node's `finalized` block; None where it has none (pre-merge
        chains and some nodes refuse the tag, a fresh chain has none yet) or where it is
        less than `final_depth` blocks below the head: a dev chain (or a dishonest node)
        that calls the head final would make a payment final at its first confirmation,
        so confirmations count instead."""
        number = self._finalized_number(client)
        if number is not None and tip - number < self.final_depth:
            logger.warning(
                "ethereum: the node's finalized block %s is only %s below the head %s "
                "(fewer than %s): ignored, confirmations count",
                number,
                tip - number,
                tip,
                self.final_depth,
            )
            return None
        return number

    def _finalized_number(self, client: httpx.Client) -> int | None:
        block, error = self._call_or_error(client, "eth_getBlockByNumber", ["finalized", False])
        if error is not None:
            logger.info("ethereum: no finalized block from the node: %s", _error_text(error))
            return None
        if block is None:
            return None
        if not isinstance(block, dict):
            raise ChainError("eth_getBlockByNumber(finalized): answer is not a block")
        return _quantity(block.get("number"), "finalized block number")

    def _logs(self, client: httpx.Client, addresses: list[str], first: int, last: int) -> list:
        """Transfer logs to `addresses` in blocks [first, last], `block_range` at a time."""
        topics = [TRANSFER_TOPIC, None, [_address_topic(address) for address in addresses]]
        logs = []
        size = self.block_range
        start = first
        while start <= last:
            end = min(last, start + size - 1)
            query = {"fromBlock": hex(start), "toBlock": hex(end), "topics": topics}
            result, error = self._call_or_error(client, "eth_getLogs", [query])
            if error is not None:
                if end > start and _is_range_refusal(error):
                    size = (end - start + 1) // 2  # and stays smaller for the rest of the scan
                    continue
                raise ChainError(
                    f"eth_getLogs of blocks {start}-{end}: JSON-RPC error {_error_text(error)}"
                )
            if not isinstance(result, list):
                raise ChainError(f"eth_getLogs of blocks {start}-{end}: answer is not a list")
            logs.extend(result)
            start = end + 1
        return logs


class _Scan:
    """One scan's state: what it has found so far and the block times it has read."""

    def __init__(
        self,
        adapter: EthereumAdapter,
        client: httpx.Client,
        ours: dict[str, str],
        tip: int,
        finalized: int | None,
    ):
        self.adapter = adapter
        self.client = client
        self.ours = ours  # lower-case address -> the address as the target spelled it
        self.tip = tip
        self.finalized = finalized
        self.block_times: dict[int, datetime] = {}
        self.block_hashes: dict[int, str] = {}
        self.undecided: set[str] = set()  # transactions seen whose outcome is not known yet
        self.transfers: dict[tuple[str, int], ObservedTransfer] = {}

    def _block_seen(self, number: int, block_hash: Any) -> None:
        """One block's hash as this scan read it; another hash for the same block in the
        same scan is a reorg under way: the scan fails and the next pass repeats it."""
        if not isinstance(block_hash, str) or not block_hash:
            raise ChainError(f"block {number} has no hash")
        known = self.block_hashes.setdefault(number, block_hash)
        if known != block_hash:
            raise ChainError(f"block {number} changed during the scan (a reorg under way)")

    def header(self, number: int) -> None:
        header = self.adapter._call(self.client, "eth_getBlockByNumber", [hex(number), False])
        if not isinstance(header, dict):
            raise ChainError(f"block {number} is missing on the node (head {self.tip})")
        self._block_seen(number, header.get("hash"))
        self.block_times[number] = _time(header.get("timestamp"), f"block {number} time")

    def ether_block(self, number: int) -> None:
        block = self.adapter._call(self.client, "eth_getBlockByNumber", [hex(number), True])
        if not isinstance(block, dict):
            # Null below the head the node itself reported: a load-balanced node behind it.
            raise ChainError(f"block {number} is missing on the node (head {self.tip})")
        self._block_seen(number, block.get("hash"))
        self.block_times[number] = _time(block.get("timestamp"), f"block {number} timestamp")
        transactions = block.get("transactions")
        if not isinstance(transactions, list):
            raise ChainError(f"block {number} has no transaction list")
        for tx in transactions:
            if not isinstance(tx, dict):
                raise ChainError(f"block {number} lists transaction hashes, not transactions")
            to = tx.get("to")  # None for a contract creation
            address = self.ours.get(to.lower()) if isinstance(to, str) else None
            if address is None:
                continue
            value = _quantity(tx.get("value"), "transaction value", high=MAX_AMOUNT_BASE["ETH"])
            if value > 0:
                self._ether_transfer(tx, block, number, address, value)

    def _ether_transfer(
        self, tx: dict, block: dict, number: int, address: str, value: int
    ) -> None:
        txid = tx.get("hash")
        if not isinstance(txid, str):
            raise ChainError(f"a transaction in block {number} has no hash")
        receipt = self.adapter._call(self.client, "eth_getTransactionReceipt", [txid])
        if receipt is None:
            self.undecided.add(txid)
            return  # the node has not indexed it yet: a later scan will see it
        if not isinstance(receipt, dict):
            raise ChainError(f"receipt of {txid} is not an object")
        hashes = (receipt.get("blockHash"), block.get("hash"))
        if all(isinstance(value, str) for value in hashes) and hashes[0] != hashes[1]:
            self.undecided.add(txid)
            return  # reorged between the two calls: the next scan sees where it went
        # Receipts before Byzantium (2017) carry a state `root` and no `status`; a plain
        # transfer to an address without code cannot fail, so it counts as a success.
        status = receipt.get("status")
        failed = status is not None and _quantity(status, f"receipt status of {txid}") != 1
        self._add(txid, 0, address, "ETH", value, number, self.block_times[number], None, failed)

    def token_log(self, log: Any) -> None:
        if not isinstance(log, dict):
            raise ChainError("eth_getLogs returned an entry that is not a log object")
        if log.get("removed") is True:
            return  # reorged out: the chain no longer holds it
        topics = log.get("topics")
        if not isinstance(topics, list) or len(topics) != 3:
            return  # an ERC-721 Transfer (token id as the fourth topic): no amount to credit
        if not all(isinstance(topic, str) for topic in topics):
            raise ChainError("eth_getLogs returned a log with a topic that is not text")
        if topics[0].lower() != TRANSFER_TOPIC:
            return
        address = self.ours.get("0x" + topics[2][-40:].lower())
        contract = log.get("address")
        data = log.get("data")
        if address is None or not isinstance(contract, str) or not isinstance(data, str):
            return
        amount = _uint256(data)
        if not amount:
            return  # zero-value or malformed: address-poisoning spam, nothing received
        txid = log.get("transactionHash")
        if not isinstance(txid, str):
            raise ChainError("eth_getLogs returned a log without a transaction hash")
        number = _quantity(log.get("blockNumber"), f"block number of a log of {txid}")
        self._block_seen(number, log.get("blockHash"))
        index = _quantity(log.get("logIndex"), f"log index of a log of {txid}")
        if log.get("blockTimestamp") is not None:
            block_time = _time(log["blockTimestamp"], f"block time of a log of {txid}")
        else:
            block_time = self._block_time(number)
        asset = self.adapter.assets.get(contract.lower(), "TOKEN")
        if asset == "TOKEN" and amount > AMOUNT_COLUMN_MAX:
            # Anyone can emit such an event from their own contract: spam, never credited,
            # and it must not stop this network's scans. Skipped, not stored.
            logger.warning("ethereum: skipped an absurd amount of token %s in %s", contract, txid)
            return
        self._add(txid, index, address, asset, amount, number, block_time, contract, False)

    def _block_time(self, number: int) -> datetime:
        if number not in self.block_times:
            self.header(number)
        return self.block_times[number]

    def _add(
        self,
        txid: str,
        index: int,
        address: str,
        asset: str,
        amount: int,
        number: int,
        block_time: datetime,
        contract: str | None,
        failed: bool,
    ) -> None:
        self.transfers[(txid, index)] = ObservedTransfer(
            network=EthereumAdapter.network,
            txid=txid,
            index=index,
            address=address,
            asset=asset,
            amount_base=amount,
            confirmations=max(self.tip - number + 1, 1),
            block_height=number,
            block_time=block_time,
            token_contract=contract,
            failed=failed,
            final=self.finalized is not None and number <= self.finalized,
            block_hash=self.block_hashes[number],
        )


def _our_addresses(targets: Sequence[WatchTarget]) -> dict[str, str]:
    """lower-case address -> the address as the (first) target spelled it."""
    ours: dict[str, str] = {}
    for target in targets:
        if not _ADDRESS.fullmatch(target.address):
            raise ValueError(f"not an Ethereum address: {target.address!r}")
        ours.setdefault(target.address.lower(), target.address)
    return ours


def _groups(items: list[str], size: int) -> list[list[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _address_topic(address: str) -> str:
    """An address as an indexed event argument: left-padded to 32 bytes."""
    return "0x" + address[2:].lower().rjust(64, "0")


_HEX_QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")


def _quantity(value: Any, what: str, *, high: int = MAX_HEIGHT) -> int:
    """A JSON-RPC QUANTITY ("0x1b4") as an int in [0, high] (block numbers by default)."""
    if not isinstance(value, str) or not _HEX_QUANTITY.fullmatch(value):
        shown = value[:80] if isinstance(value, str) else type(value).__name__
        raise ChainError(f"{what} is not a hex quantity: {shown!r}")
    number = int(value, 16)
    if number > high:
        raise ChainError(f"{what} is out of range: {value[:80]}")
    return number


def _time(value: Any, what: str) -> datetime:
    """A block timestamp QUANTITY as an aware datetime inside the plausible window."""
    return unix_time(_quantity(value, what, high=2**63), what)


def _uint256(data: str) -> int | None:
    """The uint256 of an ERC-20 Transfer's `data`; None when it is not exactly one word."""
    digits = data.removeprefix("0x")
    if len(digits) != 64:
        return None
    try:
        return int(digits, 16)
    except ValueError:
        return None


def _is_range_refusal(error: Any) -> bool:
    if not isinstance(error, dict):
        return False
    return error.get("code") == _LIMIT_EXCEEDED or bool(_RANGE_REFUSAL.search(_error_text(error)))


def _error_text(error: Any) -> str:
    if not isinstance(error, dict):
        return str(error)[:200]
    data = error.get("data")
    detail = f" ({data})" if data is not None else ""
    return f"{error.get('code')}: {error.get('message')}{detail}"[:300]
