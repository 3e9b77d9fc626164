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
"""

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx
from bip_utils import Base58ChecksumError, Base58Decoder, Base58Encoder

from kernodeck.payments.chains.base import (
    AMOUNT_COLUMN_MAX,
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

    def __init__(
        self,
        base_url: str,
        *,
        usdt_contract: str = USDT_CONTRACT,
        api_key: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int = 1,
    ):
        to_hex_address(usdt_contract)  # a bad setting fails at start-up
        self.concurrency = concurrency
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
