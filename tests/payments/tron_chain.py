"""A small TRON chain served in the node HTTP API's and TronGrid's shapes, for the block
scan's tests over loopback.

    chain = TronChain(server)                   # answers every route the server has none for
    tx = chain.pay_trx(address, 1_000_000)      # a TransferContract into the next block
    tx = chain.pay_token(address, 5_000_000)    # a USDT transfer() call (and its info)
    chain.mine()                                # pending transactions into a new block
    chain.reorg(2)                              # the last two blocks replaced (txs dropped)

Blocks are shaped like tests/samples/tron/wallet-getnowblock.json (blockID starting with
the block's number, block_header.raw_data.number/timestamp/parentHash, transactions), each
transaction like the recorded TronGrid items (tests/samples/tron/...-trx.json and
...-trigger-smart-contract-item.json). It answers POST /wallet/getnowblock,
/walletsolidity/getnowblock (`solid_depth` blocks below), /wallet/getblockbylimitnext
(endNum exclusive, at most 100 blocks: more is the node's error), /wallet/
gettransactioninfobyid, and TronGrid's two lists per address, made from the same blocks
(so polling and the block scan see one chain; `min_timestamp` honoured). Every answer can
be replaced for a test through `override(path, body)`.
"""

import copy
import hashlib
import itertools
import threading

from bip_utils import Base58Encoder

from kernodeck.core import clock
from kernodeck.payments.chains.tron import TRANSFER_TOPIC, to_hex_address
from tests.loopback import LoopbackServer, Request, sample

USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
LOOKALIKE = "THbeLKM84TvYPs8GM2qLQEnbMU5KSjVK8j"  # another contract calling itself USDT
BATCHER = Base58Encoder.CheckEncode(b"\x41" + b"\xba" * 20)  # a payout contract
PAYER_HEX = "41458437be39f3a8bfdbfee7bef93e2c5f632ceff4"  # the samples' sender


def stranger(n: int) -> str:
    return Base58Encoder.CheckEncode(b"\x41" + (10**9 + n).to_bytes(20, "big"))


class TronChain:
    def __init__(self, server: LoopbackServer, *, height: int = 77_120_000, solid_depth=19):
        self.lock = threading.Lock()
        self.serial = itertools.count(1)
        self.fork = 0
        self.solid_depth = solid_depth
        self.start_ms = int(clock.now().timestamp()) * 1000 - 3_600_000
        self.base = height - 300
        self.blocks: list[dict] = []  # block base + i
        self.pending: list[dict] = []
        self.infos: dict[str, dict] = {}
        self.overrides: dict[str, object] = {}
        for _ in range(301):
            self._append([])
        server.otherwise(self.answer)

    # -- what happens on the chain ---------------------------------------------------------

    @property
    def tip(self) -> int:
        return self.base + len(self.blocks) - 1

    @property
    def solidified(self) -> int:
        return self.tip - self.solid_depth

    def block(self, number: int) -> dict:
        return self.blocks[number - self.base]

    def mine(self, count: int = 1) -> None:
        with self.lock:
            for _ in range(count):
                txs, self.pending = self.pending, []
                self._append(txs)

    def reorg(self, depth: int, *, keep: bool = False) -> None:
        """The last `depth` blocks replaced by as many others (their transactions dropped,
        or kept in the same heights with `keep`)."""
        with self.lock:
            gone = self.blocks[-depth:]
            del self.blocks[-depth:]
            self.fork += 1
            for old in gone:
                txs = old["transactions"] if keep else []
                if not keep:
                    for tx in old["transactions"]:
                        self.infos.pop(tx["txID"], None)
                self._append(txs)

    def pay_trx(self, address: str, sun: int, *, result: str = "SUCCESS") -> str:
        item = sample("tron/v1-accounts-transactions-trx.json")["response"]["data"][0]
        tx = _node_tx(item, self._txid(), result)
        value = tx["raw_data"]["contract"][0]["parameter"]["value"]
        value.update(to_address=to_hex_address(address), amount=sun)
        self.pending.append(tx)
        return tx["txID"]

    def pay_token(
        self,
        address: str,
        amount: int,
        *,
        contract: str = USDT,
        result: str = "SUCCESS",
        call: str = "a9059cbb",
        info: bool = True,
    ) -> str:
        """A TriggerSmartContract of `contract`: transfer(address, amount) (or another
        `call`: "23b872dd" is transferFrom; anything else, a call whose Transfer event to
        `address` only its info shows). The node's info comes with its block."""
        item = sample("tron/v1-accounts-transactions-trigger-smart-contract-item.json")
        tx = _node_tx(item["response"], self._txid(), result)
        value = tx["raw_data"]["contract"][0]["parameter"]["value"]
        recipient = to_hex_address(address)[2:].rjust(64, "0")
        words = {
            "a9059cbb": [recipient],
            "23b872dd": [PAYER_HEX[2:].rjust(64, "0"), recipient],
        }.get(call, ["0" * 64])
        value.update(
            contract_address=to_hex_address(contract),
            data=call + "".join(words) + f"{amount:064x}",
        )
        tx["_event"] = (contract if call in ("a9059cbb", "23b872dd") else USDT, address, amount)
        tx["_info"] = info
        self.pending.append(tx)
        return tx["txID"]

    def override(self, path: str, body) -> None:
        """Answer `path` with `body` from now on (None: the chain's own answer again)."""
        if body is None:
            self.overrides.pop(path, None)
        else:
            self.overrides[path] = body

    # -- the API ------------------------------------------------------------------------------

    def answer(self, request: Request):
        if request.path in self.overrides:
            return 200, {}, self.overrides[request.path]
        with self.lock:
            if request.method == "POST":
                return 200, {}, self._post(request.path, request.json() if request.body else {})
            if request.path.startswith("/v1/accounts/"):
                return 200, {}, self._list(request)
        return 404, {}, f"no route for {request.path}"

    def _post(self, path: str, body: dict):
        if path == "/wallet/getnowblock":
            return self._shown(self.block(self.tip), transactions=False)
        if path == "/walletsolidity/getnowblock":
            return self._shown(self.block(self.solidified), transactions=False)
        if path == "/wallet/getblockbylimitnext":
            start, end = body["startNum"], body["endNum"]
            if not 0 < end - start <= 100:
                return {"Error": "class java.lang.Exception : the range is out of bounds"}
            numbers = range(max(start, self.base), min(end, self.tip + 1))
            found = [self._shown(self.block(n)) for n in numbers]
            return {"block": found} if found else {}
        if path == "/wallet/gettransactioninfobyid":
            return copy.deepcopy(self.infos.get(body["value"], {}))
        return {"Error": f"class java.lang.Exception : no route {path}"}

    def _list(self, request: Request) -> dict:
        parts = request.path.split("/")
        address, tokens = parts[3], request.path.endswith("/trc20")
        since = int(request.query.get("min_timestamp", 0))
        items = []
        for block in reversed(self.blocks):
            if block["block_header"]["raw_data"]["timestamp"] < since:
                break  # newest first: the rest is older still
            for tx in block["transactions"]:
                item = self._list_item(tx, block, address, tokens)
                if item is not None:
                    items.append(item)
        return {"data": items, "success": True, "meta": {"at": 1, "page_size": len(items)}}

    def _list_item(self, tx: dict, block: dict, address: str, tokens: bool):
        raw = block["block_header"]["raw_data"]
        contract = tx["raw_data"]["contract"][0]
        value = contract["parameter"]["value"]
        if not tokens:
            if contract["type"] != "TransferContract":
                return None
            if value["to_address"] != to_hex_address(address):
                return None
            return {
                **_public(tx),
                "blockNumber": raw["number"],
                "block_timestamp": raw["timestamp"],
            }
        info = self.infos.get(tx["txID"])
        if "_event" not in tx or tx["_event"][1] != address or info is None:
            return None
        token, _to, amount = tx["_event"]
        item = copy.deepcopy(sample("tron/v1-accounts-transactions-trc20.json")["response"])
        item = item["data"][0]
        item["token_info"]["address"] = token
        item.update(
            transaction_id=tx["txID"],
            block_timestamp=raw["timestamp"],
            to=address,
            value=str(amount),
        )
        return item

    # -- building blocks ----------------------------------------------------------------------

    def _txid(self) -> str:
        return hashlib.sha256(f"tx-{next(self.serial)}".encode()).hexdigest()

    def _append(self, txs: list[dict]) -> None:
        number = self.base + len(self.blocks)
        digest = hashlib.sha256(f"{self.fork}-{number}".encode()).hexdigest()
        block = copy.deepcopy(sample("tron/wallet-getnowblock.json")["response"])
        raw = block["block_header"]["raw_data"]
        raw.update(
            number=number,
            timestamp=self.start_ms + 3000 * (number - self.base),
            parentHash=self.blocks[-1]["blockID"] if self.blocks else "0" * 64,
        )
        block["blockID"] = f"{number:016x}{digest[16:]}"
        block["transactions"] = txs
        self.blocks.append(block)
        for tx in txs:
            if "_event" not in tx or not tx["_info"]:
                continue
            result = tx["ret"][0]["contractRet"]
            self.infos[tx["txID"]] = _info(tx, number, raw["timestamp"], result)

    def _shown(self, block: dict, *, transactions: bool = True) -> dict:
        shown = copy.deepcopy(block)
        shown["transactions"] = (
            [_public(tx) for tx in block["transactions"]] if transactions else []
        )
        if not shown["transactions"]:
            del shown["transactions"]  # the node leaves the key out of an empty block
        return shown


def _node_tx(item: dict, txid: str, result: str) -> dict:
    """A block's transaction from a TronGrid list item: the node's fields only."""
    tx = copy.deepcopy(item)
    for name in ("blockNumber", "block_timestamp", "internal_transactions"):
        tx.pop(name, None)
    tx["txID"] = txid
    tx["ret"] = [{"contractRet": result, "fee": tx["ret"][0].get("fee", 0)}]
    return tx


def _public(tx: dict) -> dict:
    return copy.deepcopy({name: value for name, value in tx.items() if not name.startswith("_")})


def _info(tx: dict, number: int, moment: int, result: str) -> dict:
    """gettransactioninfobyid of a token call, shaped like the recorded sample: its Transfer
    event when it succeeded, no logs when it failed."""
    info = copy.deepcopy(sample("tron/wallet-gettransactioninfobyid-trc20.json")["response"])
    token, to, amount = tx["_event"]
    info.update(id=tx["txID"], blockNumber=number, blockTimeStamp=moment)
    info["receipt"]["result"] = result
    if result != "SUCCESS":
        info["log"] = []
        return info
    info["log"] = [
        {
            "address": to_hex_address(token)[2:],
            "topics": [
                TRANSFER_TOPIC,
                PAYER_HEX[2:].rjust(64, "0"),
                to_hex_address(to)[2:].rjust(64, "0"),
            ],
            "data": f"{amount:064x}",
        }
    ]
    return info
