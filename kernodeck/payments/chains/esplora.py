"""Bitcoin and Litecoin through the Esplora REST API (Blockstream, mempool.space, litecoinspace).

`base_url` includes the API prefix, e.g. https://blockstream.info/api or
https://litecoinspace.org/api. Per scan: GET /blocks/tip/height (a bare integer as text/plain),
then per address, `concurrency` requests at a time, GET /address/:address/txs, which answers
up to 50 mempool transactions and the newest 25 confirmed ones, newest first; older confirmed
ones come 25 at a time from /address/:address/txs/chain/:last_seen_txid. Every output paying
the address is one transfer. A transaction replaced (RBF) or reorged out simply stops being
reported, and confirmations go down after a reorg: the adapter reports what the API shows now,
the watcher reconciles.
"""

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
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
CHAIN_PAGE_SIZE = 25  # confirmed transactions per page (electrs CHAIN_TXS_PER_PAGE)
MAX_CHAIN_PAGES = 20  # older pages fetched per address after the first answer
BECH32_PREFIXES = ("bc1", "tb1", "bcrt1", "ltc1", "tltc1", "rltc1")


class EsploraAdapter:
    """Credits to our receive addresses on Bitcoin or Litecoin, read from an Esplora API."""

    def __init__(
        self,
        network: str,
        base_url: str,
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        concurrency: int = 1,
    ):
        if network not in ASSETS:
            raise ValueError(f"Esplora serves bitcoin or litecoin, not {network!r}")
        self.network = network
        self.asset = ASSETS[network]
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.sleep = sleep
        self.concurrency = concurrency

    def scan(self, targets: Sequence[WatchTarget], *, cursor: int | None = None) -> ScanResult:
        """Every output paying one of `targets`, mempool included; `cursor` is not used."""
        addresses = list(dict.fromkeys(target.address for target in targets))
        with new_client() as client:
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
        height = block_time = None
        if confirmed:
            height = json_int(status.get("block_height"), f"{self.network}: block_height")
            if status.get("block_time") is not None:
                block_time = unix_time(status["block_time"], f"{self.network}: block_time")
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
                )
            )
        return credits


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
