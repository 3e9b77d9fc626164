"""A small Bitcoin chain served in Esplora's shapes, for the watcher's tests over loopback.

    chain = EsploraChain(server)          # answers every route the server has no route for
    txid = chain.pay(address, 50_000)     # into the mempool
    chain.mine(at=clock.now())            # the mempool into a new block
    chain.reorg(2)                        # the last two blocks gone, their txs back in the mempool
    chain.drop(txid)                      # replaced (RBF): gone from the mempool

It answers what the adapters read, in the shapes of tests/samples/esplora and the
Esplora API document: /blocks/tip/height, /blocks/tip/hash, /block-height/:height,
/block/:hash, /block/:hash/txs/:start_index (25 a page, no status), /mempool/txids,
/tx/:txid, /address/:address (its counters), /address/:address/txs (50 mempool + 25
confirmed, newest first) and /address/:address/txs/chain/:last_seen_txid.
"""

import hashlib
import itertools
import re
import threading
from datetime import datetime

from tests.loopback import LoopbackServer, Request

PAGE = 25
STRANGER = "bc1qsomeoneelse0000000000000000000000000"


class EsploraChain:
    def __init__(self, server: LoopbackServer, *, height: int = 800_000, at: datetime):
        self.lock = threading.Lock()
        self.base = height
        self.serial = itertools.count()
        # Block `base + i` is blocks[i]: {"hash", "time", "txs": [tx without status]}.
        self.blocks = [self._block(height, at, [])]
        self.mempool: dict[str, dict] = {}
        server.otherwise(self.answer)

    # -- what happens on the chain ------------------------------------------------------

    @property
    def tip(self) -> int:
        return self.base + len(self.blocks) - 1

    def pay(self, address: str, value: int) -> str:
        with self.lock:
            txid = hashlib.sha256(f"tx {next(self.serial)}".encode()).hexdigest()
            self.mempool[txid] = {
                "txid": txid,
                "version": 2,
                "locktime": 0,
                "vin": [],
                "vout": [
                    {"scriptpubkey_address": STRANGER, "value": 5_000},
                    {"scriptpubkey_address": address, "value": value},
                ],
                "size": 222,
                "weight": 561,
                "fee": 300,
            }
            return txid

    def mine(self, *, at: datetime, count: int = 1, include: bool = True) -> None:
        """`count` new blocks; the first takes the whole mempool when `include`."""
        with self.lock:
            for n in range(count):
                txs = list(self.mempool.values()) if include and n == 0 else []
                if include and n == 0:
                    self.mempool.clear()
                self.blocks.append(self._block(self.tip + 1, at, txs))

    def reorg(self, depth: int) -> list[str]:
        """The last `depth` blocks (never the first) leave the chain; their transactions go
        back to the mempool. Returns their txids."""
        with self.lock:
            depth = min(depth, len(self.blocks) - 1)
            returned = []
            for _ in range(depth):
                for tx in self.blocks.pop()["txs"]:
                    self.mempool[tx["txid"]] = tx
                    returned.append(tx["txid"])
            return returned

    def drop(self, txid: str) -> None:
        with self.lock:
            self.mempool.pop(txid, None)

    def _block(self, height: int, at: datetime, txs: list[dict]) -> dict:
        block_hash = hashlib.sha256(f"block {height} {next(self.serial)}".encode()).hexdigest()
        return {"hash": block_hash, "time": int(at.timestamp()), "txs": txs}

    # -- the API ------------------------------------------------------------------------

    def answer(self, request: Request):
        with self.lock:
            status, body = self._route(request.path)
        return status, {}, body

    def _route(self, path: str):
        if path == "/blocks/tip/height":
            return 200, str(self.tip)
        if path == "/blocks/tip/hash":
            return 200, self.blocks[-1]["hash"]
        if path == "/mempool/txids":
            return 200, list(self.mempool)
        if match := re.fullmatch(r"/block-height/(\d+)", path):
            height = int(match[1])
            if not self.base <= height <= self.tip:
                return 404, "Block not found"
            return 200, self.blocks[height - self.base]["hash"]
        if match := re.fullmatch(r"/block/([0-9a-f]{64})(?:/txs/(\d+))?", path):
            found = [(i, b) for i, b in enumerate(self.blocks) if b["hash"] == match[1]]
            if not found:
                return 404, "Block not found"
            [(i, block)] = found
            if match[2] is None:
                return 200, {
                    "id": block["hash"],
                    "height": self.base + i,
                    "timestamp": block["time"],
                    "tx_count": len(block["txs"]),
                }
            start = int(match[2])
            return 200, block["txs"][start : start + PAGE]
        if match := re.fullmatch(r"/tx/([0-9a-f]{64})", path):
            found = self._find(match[1])
            return (200, found) if found else (404, "Transaction not found")
        if match := re.fullmatch(r"/address/([0-9a-z]+)", path):
            confirmed = [tx for block in self.blocks for tx in block["txs"]]
            return 200, {
                "address": match[1],
                "chain_stats": _stats(confirmed, match[1]),
                "mempool_stats": _stats(list(self.mempool.values()), match[1]),
            }
        if match := re.fullmatch(r"/address/([0-9a-z]+)/txs(?:/chain/([0-9a-f]{64}))?", path):
            address, last_seen = match[1], match[2]
            confirmed = [
                self._with_status(tx, self.base + i, block)
                for i, block in reversed(list(enumerate(self.blocks)))
                for tx in block["txs"]
                if _pays(tx, address)
            ]
            if last_seen is None:
                waiting = [
                    {**tx, "status": {"confirmed": False}}
                    for tx in reversed(self.mempool.values())
                    if _pays(tx, address)
                ]
                return 200, waiting[:50] + confirmed[:PAGE]
            txids = [tx["txid"] for tx in confirmed]
            if last_seen not in txids:
                return 200, []
            start = txids.index(last_seen) + 1
            return 200, confirmed[start : start + PAGE]
        return 404, f"no route for {path}"

    def _find(self, txid: str) -> dict | None:
        if txid in self.mempool:
            return {**self.mempool[txid], "status": {"confirmed": False}}
        for i, block in enumerate(self.blocks):
            for tx in block["txs"]:
                if tx["txid"] == txid:
                    return self._with_status(tx, self.base + i, block)
        return None

    def _with_status(self, tx: dict, height: int, block: dict) -> dict:
        status = {
            "confirmed": True,
            "block_height": height,
            "block_hash": block["hash"],
            "block_time": block["time"],
        }
        return {**tx, "status": status}


def _pays(tx: dict, address: str) -> bool:
    return any(output["scriptpubkey_address"] == address for output in tx["vout"])


def _stats(txs: list[dict], address: str) -> dict:
    """Esplora's counters of an address (what GET /address/:address answers), for its
    transactions among `txs` (none spend here)."""
    outputs = [o for tx in txs for o in tx["vout"] if o["scriptpubkey_address"] == address]
    return {
        "tx_count": sum(_pays(tx, address) for tx in txs),
        "funded_txo_count": len(outputs),
        "funded_txo_sum": sum(o["value"] for o in outputs),
        "spent_txo_count": 0,
        "spent_txo_sum": 0,
    }
