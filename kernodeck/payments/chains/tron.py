"""TRX and TRC-20 tokens (USDT) through TronGrid: its v1 account history and the node HTTP API.

Per scan: the head (POST /wallet/getnowblock) and the solidified head, past which a block can no
longer be reversed (POST /walletsolidity/getnowblock); then, per address, its incoming history:
- GET /v1/accounts/{address}/transactions?only_to=true: a TransferContract to the address is a
  TRX credit (amount in sun), `failed` unless ret[0].contractRet is "SUCCESS"; a
  TransferAssetContract (a TRC-10 token) is recorded as "TOKEN" with its asset id. Smart
  contract calls are skipped here: their token transfers come from the next list. The API
  writes addresses in hex (41 + 20 bytes), not base58.
- GET /v1/accounts/{address}/transactions/trc20?only_to=true: one item per token transfer, with
  the contract in base58 and the amount as a decimal string, but no block number and no log
  index. Each transaction is looked up once (POST /wallet/gettransactioninfobyid) for its
  block number, its result (`failed` unless receipt.result is "SUCCESS") and its event logs:
  what is recorded is each Transfer event to the address of a listed contract and amount, at
  its log index (its position among the transaction's logs: 0 for a plain USDT transfer), so
  a transfer is identified as the chain identifies it, the same event listed twice is one
  transfer, and an item no event confirms is no money. A reverted transaction has no logs:
  each distinct (contract, amount) it lists is recorded once, failed, at an index past its
  logs. A transaction the node does not know yet is skipped until a later scan, so an index
  is never guessed (and the scan names it `undecided`, so that a transfer of it stored
  earlier is not taken for gone). The configured USDT contract gives "USDT", any other "TOKEN".
Lists come newest first, 200 a page, following `meta.fingerprint` (never `links.next`, which
names api.trongrid.io whatever the base URL) for at most MAX_PAGES pages. Zero-amount
transfers (address-poisoning spam) are skipped. `cursor` is not used.
`scan_since` reads the same lists from each address's cursor on (`min_timestamp`, a block
time in ms that stays CURSOR_MARGIN_MS before the solidified head's), so a pass over idle
addresses reads empty lists and looks up no transaction it read before; it reads
`concurrency` addresses at a time (KERNODECK_WATCH_CONCURRENCY), the adapter holding no
state between calls and the watcher storing nothing before the scan returned.
`scan_block_range` reads the chain instead of the addresses: the blocks from a cursor to the
head (POST /wallet/getblockbylimitnext, at most 100 a request, halved while an answer is
over the HTTP layer's size cap), their TRX and TRC-10 transfers and transfer()/
transferFrom() calls to watched addresses, the calls confirmed by their transaction info
as above (watching.tron_blocks decides when it is used, and when polling is cheaper).
"""

import functools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx
from bip_utils import Base58ChecksumError, Base58Decoder, Base58Encoder

from kernodeck.payments.chains.base import (
    AMOUNT_COLUMN_MAX,
    MAX_HEIGHT,
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
    AnswerTooLarge,
    each_concurrently,
    get_json,
    new_client,
    post_json,
)

logger = logging.getLogger(__name__)

USDT_CONTRACT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
PAGE_SIZE = 200  # TronGrid's maximum `limit`
MAX_PAGES = 5  # pages read per list and address, newest first
# keccak256("Transfer(address,address,uint256)"), as TRON writes topics: without 0x.
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

_TOKEN_ID = re.compile(r"[0-9A-Za-z]{1,64}")  # a TRC-10 token id ("1002000")
_HEX_ADDRESS = re.compile(r"41[0-9a-f]{40}")
_DIGITS = re.compile(r"[0-9]{1,78}")  # a uint256 has at most 78 decimal digits
# A cursor stays this far (ms) before the solidified head's time: what TronGrid's index may
# not show yet, or what is not solidified, is read again on the next pass.
CURSOR_MARGIN_MS = 10 * 60 * 1000
# A cursor moves on only once it would move this far (ms): until then the stored one is
# kept (an older cursor reads the same items again, which changes nothing), so the pass
# over idle addresses rewrites their cursors every few minutes, not on every pass.
CURSOR_STEP_MS = 5 * 60 * 1000
_FINGERPRINT_MAX = 512  # TronGrid's paging token: a short base64-like string
# The block scan (`scan_block_range`): blocks per getblockbylimitnext request (the node's
# most), blocks read per pass at most (half an hour's: 3 s a block), and how far before the
# solidified head a scan restarts after polling every address instead (CURSOR_MARGIN_MS of
# blocks: what TronGrid's lists may not show yet is read in blocks).
BLOCKS_PER_CALL = 100
MAX_SCAN_BLOCKS = 600
FALLBACK_OVERLAP = CURSOR_MARGIN_MS // 3000
_BLOCK_ID = re.compile(r"[0-9a-f]{64}")
_TXID = re.compile(r"[0-9a-fA-F]{64}")
_WORD = re.compile(r"[0-9a-fA-F]{64}")
# transfer(address,uint256) and transferFrom(address,address,uint256): the recipient's word.
_TOKEN_CALLS = {"a9059cbb": 0, "23b872dd": 1}


@dataclass
class TronBlockScan(ScanResult):
    """What `scan_block_range` saw: besides the transfers, the next `cursor` (the first
    block to read next time), `scanned_from`/`scanned_to` (the blocks read, None when none),
    `txids` (every transaction in them: a stored transfer there whose transaction is not
    among them left the chain), `read` (how many blocks), `blocks` (the [number, blockID]
    of the block before the next cursor) and `fallback` (why nothing was read and every
    address must be polled instead; "" when the blocks were read)."""

    txids: frozenset = frozenset()
    read: int = 0
    fallback: str = ""


def to_hex_address(address: str) -> str:
    """A base58check address (T...) as the API's hex form: "41" + 20 bytes, lower case."""
    try:
        payload = Base58Decoder.CheckDecode(address)
    except (ValueError, Base58ChecksumError):
        raise ValueError(f"not a Tron address: {address!r}") from None
    if len(payload) != 21 or payload[0] != 0x41:
        raise ValueError(f"not a Tron address: {address!r}")
    return payload.hex()


def to_base58_address(hex_address: str) -> str:
    """The hex form ("41" + 20 bytes, or the bare 20 bytes of an event log) as T..."""
    digits = hex_address.lower().removeprefix("0x")
    if len(digits) == 40:
        digits = "41" + digits
    if not _HEX_ADDRESS.fullmatch(digits):
        raise ValueError(f"not a hex Tron address: {hex_address!r}")
    return Base58Encoder.CheckEncode(bytes.fromhex(digits))


class TronAdapter:
    """Credits in TRX and TRC-20 tokens to our addresses, read from TronGrid."""

    network = "tron"
    # Its address polling asks per address (two lists each): a pass may poll them in turns.
    polls_each_address = True

    def __init__(
        self,
        base_url: str,
        *,
        usdt_contract: str = USDT_CONTRACT,
        api_key: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int = 1,
        blocks_per_call: int = BLOCKS_PER_CALL,
        max_blocks: int = MAX_SCAN_BLOCKS,
    ):
        to_hex_address(usdt_contract)  # a bad setting fails at start-up
        if not 1 <= blocks_per_call <= BLOCKS_PER_CALL or max_blocks < 1:
            raise ValueError("tron: 1 to 100 blocks per call, and at least 1 block a pass")
        self.concurrency = concurrency
        self.blocks_per_call = blocks_per_call
        self.max_blocks = max_blocks
        self.base_url = base_url.rstrip("/")
        self.usdt_contract = usdt_contract
        self.headers = {"TRON-PRO-API-KEY": api_key} if api_key else {}
        self.timeout = timeout
        self.sleep = sleep

    def scan(self, targets: Sequence[WatchTarget], *, cursor: int | None = None) -> ScanResult:
        """Every credit to `targets` in their TronGrid history; `cursor` is not used."""
        addresses = list(dict.fromkeys(target.address for target in targets))
        hex_addresses = {address: to_hex_address(address) for address in addresses}
        with new_client() as client:
            scan = _Scan(
                self,
                client,
                tip=self._head(client, "/wallet/getnowblock"),
                solidified=self._head(client, "/walletsolidity/getnowblock"),
            )
            for address in addresses:
                for item in self._pages(client, f"/v1/accounts/{quote(address)}/transactions"):
                    scan.native(item, address, hex_addresses[address])
                items = self._pages(client, f"/v1/accounts/{quote(address)}/transactions/trc20")
                scan.tokens(list(items), address)
        return ScanResult(
            transfers=list(scan.transfers.values()),
            tip=scan.tip,
            undecided=frozenset(scan.undecided),
        )

    def scan_since(self, targets: Sequence[WatchTarget], *, cursors: dict) -> PollScan:
        """What `scan` reports, reading of each address only the items from its cursor on
        (`min_timestamp`: a block time in ms). A new cursor is CURSOR_MARGIN_MS before the
        solidified head's time (what can still change or still be indexed is read again),
        never past a listed transaction the node lacks yet, kept where it would move less
        than CURSOR_STEP_MS, and unchanged where a list was cut at MAX_PAGES; such an
        address is not `complete`.

        The addresses are read `concurrency` at a time (each on one thread: its two lists,
        then the transactions they name, looked up once per scan whatever the thread);
        what each found is put together here, in the addresses' order, so the answer is
        the one a scan address after address gives."""
        addresses = list(dict.fromkeys(target.address for target in targets))
        with new_client() as client:
            solidified, solid_ms = self._head_and_time(client, "/walletsolidity/getnowblock")
            tip = self._head(client, "/wallet/getnowblock")
            infos = _Infos(self, client)

            def poll(address: str) -> tuple["_Scan", str | None, bool]:
                scan = _Scan(self, client, tip=tip, solidified=solidified, infos=infos)
                since = _cursor_ms(cursors.get(address))
                quoted, hex_address = quote(address), to_hex_address(address)
                native = self._pages(client, f"/v1/accounts/{quoted}/transactions", since)
                items, native_whole = _read(native)
                for item in items:
                    scan.native(item, address, hex_address)
                tokens = self._pages(client, f"/v1/accounts/{quoted}/transactions/trc20", since)
                items, tokens_whole = _read(tokens)
                scan.tokens(items, address)
                if not (native_whole and tokens_whole):
                    return scan, (str(since) if since is not None else None), False
                position = solid_ms - CURSOR_MARGIN_MS
                for at in scan.unindexed:
                    position = min(position, at if _is_int(at) else since or 0)
                if since is not None and since <= position < since + CURSOR_STEP_MS:
                    position = since
                return scan, str(max(position, 0)), True

            polled = each_concurrently(poll, addresses, workers=self.concurrency)
        transfers: dict[tuple[str, int], ObservedTransfer] = {}
        undecided: set[str] = set()
        positions, complete = {}, set()
        for address, (scan, position, whole) in zip(addresses, polled, strict=True):
            transfers.update(scan.transfers)
            undecided |= scan.undecided
            if position is not None:
                positions[address] = position
            if whole:
                complete.add(address)
        return PollScan(
            transfers=list(transfers.values()),
            tip=tip,
            undecided=frozenset(undecided),
            cursors=positions,
            complete=frozenset(complete),
        )

    def scan_block_range(
        self,
        watched: Callable[[set[str]], Iterable[str]],
        *,
        cursor: int | None,
        blocks: Sequence[Sequence] = (),
        polling_cost: Callable[[], int] | None = None,
    ) -> TronBlockScan:
        """Credits to watched addresses in the blocks from `cursor` (the first block not
        read yet, or not solidified when read) up to the head, read with POST
        /wallet/getblockbylimitnext, `blocks_per_call` blocks a request (the node's limit is
        100; endNum is exclusive).

        `watched(addresses)` answers which of the base58 addresses these blocks pay are
        watched (asked once per request's blocks, whose transactions are then let go), so
        the cost follows the blocks, not the watched addresses. In each block:
        a TransferContract (TRX, in sun) or TransferAssetContract (TRC-10, "TOKEN") to a
        watched address, `failed` unless ret[0].contractRet is "SUCCESS"; a
        TriggerSmartContract calling transfer(address,uint256) or
        transferFrom(address,address,uint256) with a watched recipient, whatever the
        contract: it is then looked up (gettransactioninfobyid) and recorded from its
        Transfer events exactly as the polling path records the TRC-20 list's items (the
        configured USDT contract "USDT", any other "TOKEN"; a call the block says failed is
        recorded failed without a look-up; one the node has no info for yet is `undecided`).

        The next cursor is the block after the solidified head (or after the last block
        read, if lower; or the block of a token call the node had no info for yet), never
        before `cursor`: the blocks not solidified yet are read
        again on the next pass, so a stored transfer among them that the scan no longer
        finds left the chain (`txids`: every transaction in the blocks read). `blocks` is
        the [number, blockID] of the block before `cursor` as the last scan read it
        (solidified: it cannot change); the first block read must name it as its parent.

        A fallback (the watcher polls every address instead) is answered before anything
        is looked at: no cursor yet, a cursor above the head, a first block whose parent is
        not the one read before, or more than `max_blocks` blocks behind where polling
        (`polling_cost()`: the requests it takes, asked only then) costs fewer requests
        than reading them all; the
        next cursor is then FALLBACK_OVERLAP blocks before the solidified head (what
        TronGrid's lists may not show yet is read in blocks). Where reading them is cheaper,
        `max_blocks` of them are read this pass and the rest on the next ones."""
        with new_client() as client:
            solidified = self._head(client, "/walletsolidity/getnowblock")
            tip = max(self._head(client, "/wallet/getnowblock"), solidified)
            restart = max(solidified + 1 - FALLBACK_OVERLAP, 0)

            def fallback(reason: str) -> TronBlockScan:
                return TronBlockScan(tip=tip, cursor=restart, blocks=[], fallback=reason)

            if cursor is None:
                return fallback("no block scanned yet")
            cursor = json_int(cursor, "tron: block cursor", high=MAX_HEIGHT + 1)
            if cursor > tip + 1:
                return fallback(f"the cursor {cursor} is above the head {tip}")
            end = tip + 1
            if end - cursor > self.max_blocks:
                budget = polling_cost() if polling_cost is not None else 0
                calls = -(-(end - cursor) // self.blocks_per_call)
                if calls > budget:
                    return fallback(
                        f"{end - cursor} blocks behind, more requests than polling ({budget})"
                    )
                logger.info(
                    "tron: %d blocks behind, reading %d this pass (polling would cost %d)",
                    end - cursor,
                    self.max_blocks,
                    budget,
                )
                end = cursor + self.max_blocks
            parent = [list(pair) for pair in blocks or ()]
            before = parent[-1] if parent and parent[-1][0] == cursor - 1 else None
            scan = _Scan(self, client, tip=tip, solidified=solidified)
            # What is kept of the blocks read: their [number, id], every txid, the block of
            # each token call looked up; each answer's transactions are looked at and let go.
            read, txids, calls_at = [], set(), {}
            start, step = cursor, self.blocks_per_call
            while start < end:
                stop = min(start + step, end)
                try:
                    got = self._blocks(client, start, stop)
                except AnswerTooLarge:
                    # Busy blocks (mainnet's are ~300 KB each in JSON): ask for half as
                    # many, for the rest of this scan too.
                    if stop - start <= 1:
                        raise
                    step = (stop - start) // 2
                    logger.info(
                        "tron: blocks %d-%d too large an answer, %d a call", start, stop, step
                    )
                    continue
                for block in got:
                    if before is not None and block["parent"] != before[1]:
                        if block["number"] == cursor:
                            return fallback(f"block {cursor - 1} is no longer the one read before")
                        raise ChainError(
                            f"tron: block {block['number']} does not follow the one before"
                        )
                    before = [block["number"], block["id"]]
                self._look_at(scan, got, watched, txids, calls_at)
                read.extend([block["number"], block["id"]] for block in got)
                start = stop
        last = read[-1][0] if read else cursor - 1
        after = max(cursor, min(solidified, last) + 1)
        # A token call the node could not describe yet is read again next pass, solidified
        # or not: the cursor stays at its block.
        waiting = [calls_at[txid] for txid in scan.undecided if txid in calls_at]
        if waiting:
            after = max(cursor, min(after, *waiting))
        kept = [pair for pair in read if pair[0] == after - 1]
        return TronBlockScan(
            transfers=list(scan.transfers.values()),
            tip=tip,
            cursor=after,
            scanned_from=cursor if read else None,
            scanned_to=last if read else None,
            undecided=frozenset(scan.undecided),
            blocks=kept or None,
            txids=frozenset(txids),
            read=len(read),
        )

    def _look_at(self, scan: "_Scan", got: list[dict], watched, txids: set, calls_at: dict):
        """The payments to watched addresses in the blocks `got` (one look-up of their
        recipients among the watched), recorded in `scan`."""
        found = [(block, tx, _payment_of(tx)) for block in got for tx in block["txs"]]
        recipients = {payment[1] for _b, _tx, payment in found if payment is not None}
        ours = set(watched(recipients)) if recipients else set()
        for block, tx, payment in found:
            txids.add(tx["txID"].lower())
            if payment is None or payment[1] not in ours:
                continue
            kind, address, contract, amount = payment
            item = {**tx, "blockNumber": block["number"], "block_timestamp": block["time"]}
            if kind == "native":
                scan.native(item, address, to_hex_address(address))
            else:
                calls_at[tx["txID"]] = block["number"]
                self._called_token(scan, item, address, contract, amount)

    def _called_token(self, scan: "_Scan", item: dict, address: str, contract: str, amount):
        """A transfer()/transferFrom() call to `address` found in a block, recorded as the
        polling path records a TRC-20 list item (its events decide)."""
        txid = item.get("txID")
        if not isinstance(txid, str):
            raise ChainError(f"tron: a token transfer to {address} has no txID")
        listed = {
            "transaction_id": txid,
            "token_info": {"address": contract},
            "to": address,
            "type": "Transfer",
            "value": str(amount),
            "block_timestamp": item["block_timestamp"],
        }
        ret = item.get("ret")
        first = ret[0] if isinstance(ret, list) and ret else None
        result = first.get("contractRet") if isinstance(first, dict) else None
        if result == "SUCCESS":
            scan.tokens([listed], address)
            return
        # The block says it failed (REVERT, OUT_OF_ENERGY...): never credited, recorded
        # failed as the polling path records a reverted one (no logs: index 0), no look-up.
        entry = (listed, contract, amount)
        if amount > 0 and scan._credible(*entry):
            scan._failed_tokens(
                txid, [entry], address, item["blockNumber"], listed["block_timestamp"], {}
            )

    def _blocks(self, client: httpx.Client, start: int, end: int) -> list[dict]:
        """Blocks [start, end) as {number, id, parent, time, txs}, checked: every number
        once and in order, each block's id starting with its number."""
        body = self._post(
            client, "/wallet/getblockbylimitnext", {"startNum": start, "endNum": end}
        )
        found = body.get("block", [])
        if not isinstance(found, list) or not all(isinstance(b, dict) for b in found):
            raise ChainError("tron: getblockbylimitnext did not answer a list of blocks")
        read = sorted((_block(raw) for raw in found), key=lambda block: block["number"])
        if [block["number"] for block in read] != list(range(start, end)):
            raise ChainError(
                f"tron: blocks {start} to {end - 1} asked, {len(read)} other blocks answered"
            )
        return read

    def _head_and_time(self, client: httpx.Client, path: str) -> tuple[int, int]:
        """A head's block number and its block time in ms."""
        body = self._post(client, path, {})
        header = body.get("block_header")
        raw = header.get("raw_data") if isinstance(header, dict) else {}
        raw = raw if isinstance(raw, dict) else {}
        number = json_int(raw.get("number"), f"tron: {path} block number")
        unix_time(raw.get("timestamp"), f"tron: {path} block time", milliseconds=True)
        return number, raw["timestamp"]

    def _post(self, client: httpx.Client, path: str, payload: dict) -> dict:
        body = post_json(
            f"{self.base_url}{path}",
            payload,
            headers=self.headers,
            timeout=self.timeout,
            sleep=self.sleep,
            client=client,
        )
        if not isinstance(body, dict):
            raise ChainError(f"{path}: answer is not an object")
        # The node API reports its own failures in a 200 answer: {"Error": "class : message"}.
        error = body.get("Error") or body.get("error")
        if error:
            raise ChainError(f"{path}: {str(error)[:200]}")
        return body

    def _head(self, client: httpx.Client, path: str) -> int:
        body = self._post(client, path, {})
        header = body.get("block_header")
        raw = header.get("raw_data") if isinstance(header, dict) else None
        number = raw.get("number") if isinstance(raw, dict) else None
        return json_int(number, f"tron: {path} block number")

    def _pages(self, client: httpx.Client, path: str, since: int | None = None) -> Iterator[dict]:
        """The items of a v1 list, page after page (from block time `since`, in ms, on);
        its return value says whether the list was read to its end."""
        params = {"only_to": "true", "limit": str(PAGE_SIZE)}
        if since is not None:
            params["min_timestamp"] = str(since)
        for _ in range(MAX_PAGES):
            body = get_json(
                f"{self.base_url}{path}",
                params=params,
                headers=self.headers,
                timeout=self.timeout,
                sleep=self.sleep,
                client=client,
            )
            if not isinstance(body, dict) or body.get("success") is False:
                error = body.get("error") if isinstance(body, dict) else None
                raise ChainError(f"{path}: {str(error or 'answer is not a TronGrid list')[:200]}")
            data, meta = body.get("data"), body.get("meta")
            if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
                raise ChainError(f"{path}: answer has no list of items")
            yield from data
            fingerprint = meta.get("fingerprint") if isinstance(meta, dict) else None
            if not fingerprint:
                return True
            if not isinstance(fingerprint, str) or len(fingerprint) > _FINGERPRINT_MAX:
                raise ChainError(f"{path}: the paging fingerprint is not a short text")
            params = {**params, "fingerprint": fingerprint}
        logger.warning(
            "tron: stopped reading %s after %d pages; older items unread", path, MAX_PAGES
        )
        return False


class _Infos:
    """The transaction infos (POST /wallet/gettransactioninfobyid) one scan has read, shared
    by its threads: each transaction is asked once (two threads asking at the same moment
    may both ask; the answers are the node's, either will do)."""

    def __init__(self, adapter: TronAdapter, client: httpx.Client):
        self.adapter = adapter
        self.client = client
        self.lock = threading.Lock()
        self.read: dict[str, dict] = {}

    def __call__(self, txid: str) -> dict:
        with self.lock:
            if txid in self.read:
                return self.read[txid]
        info = self.adapter._post(self.client, "/wallet/gettransactioninfobyid", {"value": txid})
        with self.lock:
            return self.read.setdefault(txid, info)


class _Scan:
    """One scan's heads, the transaction infos it has read and what it has found (in
    `scan_since`, one address's: one _Scan per address and thread, sharing the infos)."""

    def __init__(
        self,
        adapter: TronAdapter,
        client: httpx.Client,
        tip: int,
        solidified: int,
        infos: "_Infos | None" = None,
    ):
        self.adapter = adapter
        self.client = client
        self.tip = tip
        self.solidified = solidified
        self.infos = infos or _Infos(adapter, client)
        # Listed transactions the node did not know yet: not judged gone this scan.
        self.undecided: set[str] = set()
        self.unindexed: list = []  # block times of listed transactions the node lacks yet
        self.transfers: dict[tuple[str, int], ObservedTransfer] = {}

    def native(self, item: dict, address: str, hex_address: str) -> None:
        """A TRX (or TRC-10) credit from one item of /transactions, if it is one."""
        raw = item.get("raw_data")
        contracts = raw.get("contract") if isinstance(raw, dict) else None
        if not isinstance(contracts, list) or not contracts or not isinstance(contracts[0], dict):
            return
        kind = contracts[0].get("type")
        parameter = contracts[0].get("parameter")
        value = parameter.get("value") if isinstance(parameter, dict) else None
        if kind not in ("TransferContract", "TransferAssetContract") or not isinstance(
            value, dict
        ):
            return
        to = value.get("to_address")
        if not isinstance(to, str) or to.lower() != hex_address:
            return
        txid = item.get("txID")
        amount = value.get("amount")
        if not isinstance(txid, str) or not _is_int(amount):
            raise ChainError(f"a {kind} to {address} has no txID or amount")
        if amount <= 0:
            return
        asset, contract = "TRX", None
        if kind == "TransferAssetContract":
            asset, contract = "TOKEN", value.get("asset_name")
            if not isinstance(contract, str) or not _TOKEN_ID.fullmatch(contract):
                # Anyone can send a TRC-10 token: one we cannot name is spam, never credited,
                # and must not stop this network's scans. Skipped, not stored.
                logger.warning("tron: skipped a TRC-10 transfer with an odd asset in %s", txid)
                return
        ret = item.get("ret")
        first = ret[0] if isinstance(ret, list) and ret else None
        result = first.get("contractRet") if isinstance(first, dict) else None
        height = item.get("blockNumber")
        if height is not None:
            height = json_int(height, f"tron: blockNumber of {txid}")
        self._add(
            txid,
            0,
            address,
            asset,
            amount,
            height,
            item.get("block_timestamp"),
            contract,
            failed=result != "SUCCESS",
        )

    def tokens(self, items: list[dict], address: str) -> None:
        """The TRC-20 credits to `address` listed in `items`, indexed by their event logs."""
        by_tx: dict[str, list[dict]] = {}
        for item in items:
            if item.get("to") != address or item.get("type", "Transfer") != "Transfer":
                continue
            txid = item.get("transaction_id")
            if not isinstance(txid, str):
                raise ChainError(f"a TRC-20 transfer to {address} has no transaction_id")
            by_tx.setdefault(txid, []).append(item)
        for txid, transfers in by_tx.items():
            listed = [(item, *_token_and_amount(item)) for item in transfers]
            listed = [entry for entry in listed if entry[2] > 0 and self._credible(*entry)]
            if not listed:
                continue
            for _item, contract, amount in listed:
                # The list's word is checked as a record would be, although the events
                # decide what is stored: nonsense in it fails the scan (never skipped).
                ObservedTransfer(
                    network="tron",
                    txid=txid,
                    index=0,
                    address=address,
                    asset="USDT" if contract == self.adapter.usdt_contract else "TOKEN",
                    amount_base=amount,
                    confirmations=0,
                    token_contract=contract,
                )
            info = self._info(txid)
            if not info:
                # Not on the node yet: a later scan indexes it from its logs; until then a
                # stored transfer of it is not taken for gone (the watcher's `undecided`).
                self.undecided.add(txid)
                self.unindexed.append(listed[0][0].get("block_timestamp"))
                continue
            height = json_int(info.get("blockNumber"), f"tron: blockNumber of {txid}")
            receipt = info.get("receipt")
            result = receipt.get("result") if isinstance(receipt, dict) else None
            timestamp = listed[0][0].get("block_timestamp", info.get("blockTimeStamp"))
            if result != "SUCCESS":
                self._failed_tokens(txid, listed, address, height, timestamp, info)
                continue
            # The chain's word, not the list's: every Transfer event of the transaction to
            # `address` of a listed (contract, amount), at its own log index. An item listed
            # twice names the same event and is recorded once; an item no event confirms
            # is not money (and is logged).
            wanted = {(contract, address, amount) for _item, contract, amount in listed}
            confirmed = set()
            for index, event in _transfer_events(info).items():
                if event not in wanted:
                    continue
                confirmed.add(event)
                contract, _to, amount = event
                self._add(
                    txid,
                    index,
                    address,
                    "USDT" if contract == self.adapter.usdt_contract else "TOKEN",
                    amount,
                    height,
                    timestamp,
                    contract,
                    failed=False,
                )
            if wanted - confirmed:
                logger.warning("tron: %s lists a TRC-20 transfer its logs do not show", txid)

    def _failed_tokens(self, txid, listed, address, height, timestamp, info) -> None:
        """A reverted transaction has no event logs: each distinct (contract, amount) listed
        is recorded once as failed (never credited, shown so that the payer is told), at
        an index past the logs in a fixed order, so that listing it again changes nothing."""
        logs = info.get("log")
        after = len(logs) if isinstance(logs, list) else 0
        distinct = sorted({(contract, amount) for _item, contract, amount in listed})
        for rank, (contract, amount) in enumerate(distinct):
            self._add(
                txid,
                after + rank,
                address,
                "USDT" if contract == self.adapter.usdt_contract else "TOKEN",
                amount,
                height,
                timestamp,
                contract,
                failed=True,
            )

    def _credible(self, item: dict, contract: str, amount: int) -> bool:
        """False for an unknown token's amount beyond the column: anyone can emit such a
        transfer from their own contract (spam, never credited); it is skipped, not stored,
        so that it cannot stop this network's scans."""
        if contract == self.adapter.usdt_contract or amount <= AMOUNT_COLUMN_MAX:
            return True
        logger.warning("tron: skipped an absurd amount of token %s", contract[:64])
        return False

    def _info(self, txid: str) -> dict:
        return self.infos(txid)

    def _add(
        self,
        txid: str,
        index: int,
        address: str,
        asset: str,
        amount: int,
        height: int | None,
        timestamp_ms: Any,
        contract: str | None,
        *,
        failed: bool,
    ) -> None:
        self.transfers[(txid, index)] = ObservedTransfer(
            network=TronAdapter.network,
            txid=txid,
            index=index,
            address=address,
            asset=asset,
            amount_base=amount,
            confirmations=max(self.tip - height + 1, 1) if height is not None else 0,
            block_height=height,
            block_time=_from_ms(timestamp_ms) if height is not None else None,
            token_contract=contract,
            failed=failed,
            final=height is not None and height <= self.solidified,
        )


def _block(raw: dict) -> dict:
    """One block of a getblockbylimitnext answer, checked: its number, id, parent, time
    (ms) and transactions (each an object with a txID); ChainError for anything else."""
    header = raw.get("block_header")
    data = header.get("raw_data") if isinstance(header, dict) else None
    data = data if isinstance(data, dict) else {}
    number = json_int(data.get("number"), "tron: block number")
    unix_time(data.get("timestamp"), f"tron: time of block {number}", milliseconds=True)
    block_id, parent = raw.get("blockID"), data.get("parentHash")
    # A TRON block id starts with its number (8 bytes): an answer for another block shows.
    if not isinstance(block_id, str) or not _BLOCK_ID.fullmatch(block_id):
        raise ChainError(f"tron: block {number} has no block id")
    if int(block_id[:16], 16) != number:
        raise ChainError(f"tron: block {number}'s id names another block")
    if not isinstance(parent, str) or not _BLOCK_ID.fullmatch(parent):
        raise ChainError(f"tron: block {number} has no parent hash")
    txs = raw.get("transactions", [])
    if not isinstance(txs, list) or not all(
        isinstance(tx, dict) and isinstance(tx.get("txID"), str) and _TXID.fullmatch(tx["txID"])
        for tx in txs
    ):
        raise ChainError(f"tron: block {number} holds a transaction without a txID")
    return {
        "number": number,
        "id": block_id,
        "parent": parent,
        "time": data["timestamp"],
        "txs": txs,
    }


def _payment_of(tx: dict) -> tuple[str, str, str | None, int | None] | None:
    """Whom a block's transaction pays, if it is a payment a block shows: ("native",
    recipient, None, None) for a TRX or TRC-10 transfer, ("token", recipient, contract,
    amount) for a transfer()/transferFrom() call; None for anything else (or anything
    unreadable: only a payment to a watched address is looked at further)."""
    raw = tx.get("raw_data")
    contracts = raw.get("contract") if isinstance(raw, dict) else None
    if not isinstance(contracts, list) or not contracts or not isinstance(contracts[0], dict):
        return None
    kind = contracts[0].get("type")
    parameter = contracts[0].get("parameter")
    value = parameter.get("value") if isinstance(parameter, dict) else None
    if not isinstance(value, dict):
        return None
    if kind in ("TransferContract", "TransferAssetContract"):
        to = _base58_or_none(value.get("to_address"))
        return ("native", to, None, None) if to else None
    if kind != "TriggerSmartContract":
        return None
    data = value.get("data")
    if not isinstance(data, str) or len(data) > 4096:
        return None
    word = _TOKEN_CALLS.get(data[:8].lower())
    if word is None:
        return None
    words = [data[8 + 64 * n : 8 + 64 * (n + 1)] for n in range(word + 2)]
    if not all(_WORD.fullmatch(part) for part in words) or words[word][:24].strip("0"):
        return None
    recipient = _base58_or_none("41" + words[word][24:])
    contract = _base58_or_none(value.get("contract_address"))
    if recipient is None or contract is None:
        return None
    return "token", recipient, contract, int(words[word + 1], 16)


@functools.lru_cache(maxsize=65536)
def _base58_cached(hex_address: str) -> str | None:
    try:
        return to_base58_address(hex_address)
    except ValueError:
        return None


def _base58_or_none(value: Any) -> str | None:
    """A block's hex address (41 + 20 bytes) as base58, or None for anything else."""
    if not isinstance(value, str) or len(value) != 42:
        return None
    return _base58_cached(value.lower())


def _read(pages: Iterator[dict]) -> tuple[list[dict], bool]:
    """The items of `_pages`, and whether it read the list to its end."""
    items = []
    while True:
        try:
            items.append(next(pages))
        except StopIteration as stop:
            return items, bool(stop.value)


def _cursor_ms(position: str | None) -> int | None:
    """A stored Tron cursor (a block time in ms), or None when there is none usable."""
    return int(position) if position and position.isdigit() and len(position) < 16 else None


def _token_and_amount(item: dict) -> tuple[str, int]:
    token = item.get("token_info")
    contract = token.get("address") if isinstance(token, dict) else None
    value = item.get("value")
    if not isinstance(contract, str) or not isinstance(value, str) or not _DIGITS.fullmatch(value):
        raise ChainError(f"TRC-20 item of {item.get('transaction_id')} has no contract or value")
    return contract, int(value)


def _transfer_events(info: dict) -> dict[int, tuple[str, str, int]]:
    """Position in the transaction's logs -> (contract, recipient, amount) of each Transfer."""
    events = {}
    logs = info.get("log")
    for position, log in enumerate(logs if isinstance(logs, list) else []):
        topics = log.get("topics") if isinstance(log, dict) else None
        if not isinstance(topics, list) or len(topics) != 3:
            continue
        if not all(isinstance(topic, str) for topic in topics):
            continue
        if topics[0].lower().removeprefix("0x") != TRANSFER_TOPIC:
            continue
        try:
            contract = to_base58_address(str(log.get("address")))
            recipient = to_base58_address(topics[2][-40:])
            amount = int(str(log.get("data")).removeprefix("0x"), 16)
        except ValueError:
            continue
        events[position] = (contract, recipient, amount)
    return events


def _from_ms(value: Any) -> datetime | None:
    """Milliseconds since the epoch as an aware UTC datetime (None when not given), checked
    like every block time, without a float on the way."""
    if value is None:
        return None
    return unix_time(value, "tron: block timestamp", milliseconds=True)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
