"""Loopback chain simulators for the demo: every network the watchers read, on one server.

    python -m kernodeck.demo.simulator --state var/chain-simulator.json \
        --port-file var/chain-simulator.port

`kernodeck demo` starts it on 127.0.0.1 (a free port, written to the port file) and points the
watchers at it. It answers in the shapes the adapters read from the public APIs:

    /bitcoin/api, /litecoin/api   Esplora: GET /blocks/tip/height, /address/:a/txs,
                                  /address/:a/txs/chain/:last_seen_txid, and for block
                                  scanning /block-height/:h, /block/:hash,
                                  /block/:hash/txs/:start, /mempool/txids, /tx/:txid
    /ethereum                     JSON-RPC: eth_blockNumber, eth_getBlockByNumber (numbers and
                                  tags, "finalized" included, full transactions or hashes),
                                  eth_getTransactionReceipt, eth_getLogs (Transfer events of
                                  the canonical USDT and USDC contracts)
    /tron                         TronGrid: POST /wallet/getnowblock, /walletsolidity/getnowblock,
                                  /wallet/gettransactioninfobyid; GET /v1/accounts/:a/transactions
                                  and /v1/accounts/:a/transactions/trc20
    /solana                       JSON-RPC: getSlot, getSignaturesForAddress, getTransaction

and a control API that the demo's payment panel calls:

    POST /_control/pay  {"method": "btc-bitcoin", "address": "...", "amount_base": 103093,
                         "reference": "..." (Solana Pay reference, optional)}
    POST /_control/mine {"network": "bitcoin", "blocks": 2}
    GET  /_control/state

Bitcoin and Litecoin payments wait in the mempool (0 confirmations) until a block is mined;
on the account chains (Ethereum, Tron, Solana) the APIs the adapters read show no pending
transactions, so a payment is included in a new block at once. Heights start near mainnet's,
block times follow the clock, identifiers are random in each chain's format. The state lives
in a JSON file, rewritten after every change, so a restarted demo keeps its chains.
Standard library and bip_utils only: no Django in this process.
"""

import argparse
import hashlib
import json
import os
import re
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from bip_utils import (
    Base58ChecksumError,
    Base58Decoder,
    Base58Encoder,
    SegwitBech32Decoder,
    SegwitBech32Encoder,
)

from kernodeck.payments import methods

STATE_VERSION = 1
MAX_BODY = 16 * 1024  # bytes of a request body; the control API's are a few hundred
MAX_MINE = 100  # blocks per /_control/mine
MAX_AMOUNT = 10**30  # base units per simulated payment
ESPLORA_PAGE = 25  # confirmed transactions per Esplora page
ESPLORA_HASH_SEARCH = 2000  # blocks below the tip searched for a block hash
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
ERC20_TRANSFER_SELECTOR = "a9059cbb"
SYSTEM_PROGRAM = "11111111111111111111111111111111"
_TEXT = re.compile(r"[0-9A-Za-z]{1,100}")
_ETH_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


@dataclass(frozen=True)
class ChainSpec:
    start_height: int  # near mainnet's height at the end of 2026
    interval_ms: int  # the chain's block (slot) time
    finality: int  # blocks below the tip that count as final (Ethereum, Tron, Solana)


CHAINS = {
    "bitcoin": ChainSpec(start_height=978_600, interval_ms=600_000, finality=0),
    "litecoin": ChainSpec(start_height=3_102_400, interval_ms=150_000, finality=0),
    "ethereum": ChainSpec(start_height=26_410_000, interval_ms=12_000, finality=64),
    "tron": ChainSpec(start_height=88_250_000, interval_ms=3_000, finality=19),
    "solana": ChainSpec(start_height=458_300_000, interval_ms=400, finality=32),
}


class ControlError(Exception):
    """A control request the simulator refuses (answered 400 with the message)."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _block_now_ms() -> int:
    """The clock rounded up to a whole second: a block made after a moment never reads
    as earlier than it, even by chains that state block times in whole seconds."""
    return -(-time.time_ns() // 1_000_000_000) * 1000


def _hex_digest(*parts: object) -> str:
    return hashlib.sha256(":".join(str(part) for part in parts).encode()).hexdigest()


def _method_network(code: Any) -> tuple[str, str, str | None]:
    """(network, asset, token contract) of a payment method code, mainnet contracts."""
    if not isinstance(code, str) or code not in methods.BY_CODE:
        raise ControlError(f"unknown payment method {str(code)[:40]!r}")
    spec = methods.BY_CODE[code]
    return spec.chain, spec.asset, methods.token_contract(code, testnet=False)


def _tron_hex(address: str) -> str:
    """A base58check Tron address as "41" + 20 bytes in hex."""
    try:
        payload = Base58Decoder.CheckDecode(address)
    except (ValueError, Base58ChecksumError):
        raise ControlError(f"not a Tron address: {address!r}") from None
    if len(payload) != 21 or payload[0] != 0x41:
        raise ControlError(f"not a Tron address: {address!r}")
    return payload.hex()


def _random_tron_address() -> str:
    return Base58Encoder.CheckEncode(b"\x41" + secrets.token_bytes(20))


def _random_eth_address() -> str:
    return "0x" + secrets.token_hex(20)


def _segwit_parts(address: str) -> tuple[str, str]:
    """(human-readable part, scriptpubkey hex) of a bech32 address; a stand-in otherwise."""
    hrp = address.lower().split("1", 1)[0] if "1" in address else "bc"
    try:
        version, program = SegwitBech32Decoder.Decode(hrp, address)
    except Exception:  # bip_utils raises several types for malformed input
        return hrp, "0014" + _hex_digest("script", address)[:40]
    if version == 0:
        return hrp, f"00{len(program):02x}{program.hex()}"
    return hrp, f"{0x50 + version:02x}{len(program):02x}{program.hex()}"


class ChainSimulator:
    """The simulated chains' state and the answers built from it (thread-safe)."""

    def __init__(self, state_path: Path):
        self.state_path = Path(state_path)
        self.lock = threading.Lock()
        self.state = self._load()

    # -- state ------------------------------------------------------------------------

    def _load(self) -> dict:
        try:
            state = json.loads(self.state_path.read_text())
            if state.get("version") == STATE_VERSION:
                return state
        except (OSError, ValueError):
            pass
        now = _now_ms()
        return {
            "version": STATE_VERSION,
            "salt": secrets.token_hex(16),
            "chains": {
                name: {"base_height": spec.start_height, "base_time_ms": now, "mined_ms": []}
                for name, spec in CHAINS.items()
            },
            "transfers": [],
        }

    def _save(self) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.state))
        os.replace(temporary, self.state_path)

    def tip(self, network: str) -> int:
        chain = self.state["chains"][network]
        return chain["base_height"] + len(chain["mined_ms"])

    def block_time_ms(self, network: str, height: int) -> int:
        chain = self.state["chains"][network]
        offset = height - chain["base_height"]
        if offset <= 0:
            return chain["base_time_ms"] + offset * CHAINS[network].interval_ms
        return chain["mined_ms"][offset - 1]

    def block_hash(self, network: str, height: int) -> str:
        digest = _hex_digest(self.state["salt"], network, height)
        if network == "bitcoin" or network == "litecoin":
            return "0000000000000000000" + digest[19:]
        if network == "tron":
            return f"{height:016x}" + digest[16:]
        return digest

    def _mine(self, network: str, blocks: int) -> int:
        """Add `blocks` blocks at the clock's time (never before the previous one plus a
        second, and at least the chain's spacing for Ethereum and Tron, whose block times
        are slots). Mempool transfers go into the first new block."""
        spec = CHAINS[network]
        chain = self.state["chains"][network]
        spacing = (
            spec.interval_ms if network in ("ethereum", "tron") else min(spec.interval_ms, 1000)
        )
        first = self.tip(network) + 1
        for _ in range(blocks):
            previous = self.block_time_ms(network, self.tip(network))
            chain["mined_ms"].append(max(_block_now_ms(), previous + spacing))
        for transfer in self.state["transfers"]:
            if transfer["network"] == network and transfer["height"] is None:
                transfer["height"] = first
        return self.tip(network)

    # -- control ----------------------------------------------------------------------

    def pay(self, body: Any) -> dict:
        """Record a payment to `address`; on account chains it is mined into a new block."""
        if not isinstance(body, dict):
            raise ControlError("the body must be a JSON object")
        network, asset, contract = _method_network(body.get("method"))
        address = body.get("address")
        amount = body.get("amount_base")
        reference = body.get("reference")
        if not isinstance(address, str) or not _TEXT.fullmatch(address.removeprefix("0x")):
            raise ControlError("address must be 1 to 100 letters and digits")
        if isinstance(amount, bool) or not isinstance(amount, int) or not 0 < amount <= MAX_AMOUNT:
            raise ControlError(f"amount_base must be a whole number from 1 to {MAX_AMOUNT}")
        if reference is not None and (
            not isinstance(reference, str) or not _TEXT.fullmatch(reference)
        ):
            raise ControlError("reference must be 1 to 100 letters and digits")
        if network == "ethereum" and not _ETH_ADDRESS.fullmatch(address):
            raise ControlError(f"not an Ethereum address: {address!r}")
        if network == "tron":
            _tron_hex(address)
        with self.lock:
            transfer = self._new_transfer(network, asset, contract, address, amount, reference)
            if network not in ("bitcoin", "litecoin"):
                self._mine(network, 1)
            self._save()
            return self._control_view(transfer)

    def mine(self, body: Any) -> dict:
        if not isinstance(body, dict):
            raise ControlError("the body must be a JSON object")
        network, blocks = body.get("network"), body.get("blocks", 1)
        if network not in CHAINS:
            raise ControlError(f"unknown network {str(network)[:40]!r}")
        if isinstance(blocks, bool) or not isinstance(blocks, int) or not 0 < blocks <= MAX_MINE:
            raise ControlError(f"blocks must be a whole number from 1 to {MAX_MINE}")
        with self.lock:
            tip = self._mine(network, blocks)
            self._save()
            return {"network": network, "tip": tip}

    def summary(self) -> dict:
        with self.lock:
            return {
                "tips": {network: self.tip(network) for network in CHAINS},
                "transfers": [self._control_view(t) for t in self.state["transfers"]],
            }

    def _control_view(self, transfer: dict) -> dict:
        keys = ("network", "asset", "txid", "address", "amount_base", "reference", "height")
        return {key: transfer.get(key) for key in keys}

    def _new_transfer(self, network, asset, contract, address, amount, reference) -> dict:
        transfer = {
            "network": network,
            "asset": asset,
            "contract": contract,
            "address": address,
            "amount_base": amount,
            "reference": reference,
            "height": None,
            "sent_ms": _now_ms(),
        }
        if network in ("bitcoin", "litecoin"):
            hrp, _script = _segwit_parts(address)
            change = SegwitBech32Encoder.Encode(hrp, 0, secrets.token_bytes(20))
            transfer.update(
                txid=secrets.token_hex(32),
                index=secrets.randbelow(2),  # our output is first or second, like wallets do
                sender=change,
                change=10_000 + secrets.randbelow(5_000_000),
                funding_txid=secrets.token_hex(32),
                fee=141 * (2 + secrets.randbelow(9)),
            )
        elif network == "ethereum":
            transfer.update(
                txid="0x" + secrets.token_hex(32),
                sender=_random_eth_address(),
                index=secrets.randbelow(200) if contract else 0,  # log index of a token
                nonce=secrets.randbelow(5000),
            )
        elif network == "tron":
            transfer.update(txid=secrets.token_hex(32), sender=_random_tron_address(), index=0)
        else:
            received = sum(
                t["amount_base"]
                for t in self.state["transfers"]
                if t["network"] == "solana" and t["address"] == address
            )
            transfer.update(
                txid=Base58Encoder.Encode(secrets.token_bytes(64)),
                sender=Base58Encoder.Encode(secrets.token_bytes(32)),
                index=0,
                recipient_before=2_039_280 + received,  # rent-exempt minimum + earlier credits
                sender_before=amount + 5_000 + 10**9 + secrets.randbelow(10**9),
            )
        self.state["transfers"].append(transfer)
        return transfer

    def _included(self, network: str) -> list[dict]:
        """Transfers of `network` in a block, newest first."""
        found = [
            t
            for t in self.state["transfers"]
            if t["network"] == network and t["height"] is not None
        ]
        return sorted(found, key=lambda t: t["height"], reverse=True)

    # -- Esplora ------------------------------------------------------------------------

    def esplora(self, network: str, path: str) -> tuple[int, Any]:
        parts = [unquote(part) for part in path.strip("/").split("/")]
        with self.lock:
            if parts == ["blocks", "tip", "height"]:
                return 200, str(self.tip(network))
            if parts == ["blocks", "tip", "hash"]:
                return 200, self.block_hash(network, self.tip(network))
            if len(parts) >= 3 and parts[0] == "address" and parts[2] == "txs":
                address = parts[1]
                mine = [
                    t
                    for t in self.state["transfers"]
                    if t["network"] == network and t["address"].lower() == address.lower()
                ]
                confirmed = sorted(
                    (t for t in mine if t["height"] is not None),
                    key=lambda t: t["height"],
                    reverse=True,
                )
                if len(parts) == 3:
                    mempool = [t for t in reversed(mine) if t["height"] is None][:50]
                    page = mempool + confirmed[:ESPLORA_PAGE]
                elif len(parts) == 5 and parts[3] == "chain":
                    txids = [t["txid"] for t in confirmed]
                    if parts[4] not in txids:
                        return 200, []
                    start = txids.index(parts[4]) + 1
                    page = confirmed[start : start + ESPLORA_PAGE]
                else:
                    return 404, "Not Found"
                return 200, [self._esplora_tx(network, t) for t in page]
            found = self._esplora_chain(network, parts)
            if found is not None:
                return found
        if len(parts) >= 2 and parts[0] == "address":
            return 400, "Invalid Bitcoin address"
        return 404, "Not Found"

    def _esplora_chain(self, network: str, parts: list[str]) -> tuple[int, Any] | None:
        """The block-scanning routes: blocks by height and hash, their transactions, the
        mempool's txids and single transactions (the lock is held by the caller)."""
        mine = [t for t in self.state["transfers"] if t["network"] == network]
        if parts == ["mempool", "txids"]:
            return 200, [t["txid"] for t in mine if t["height"] is None]
        if len(parts) == 2 and parts[0] == "block-height":
            if not parts[1].isdigit() or int(parts[1]) > self.tip(network):
                return 404, "Block not found"
            return 200, self.block_hash(network, int(parts[1]))
        if len(parts) == 2 and parts[0] == "tx":
            found = [t for t in mine if t["txid"] == parts[1]]
            return (200, self._esplora_tx(network, found[0])) if found else (404, "Not Found")
        if len(parts) not in (2, 4) or parts[0] != "block":
            return None
        tip = self.tip(network)
        height = next(
            (
                h
                for h in range(tip, max(tip - ESPLORA_HASH_SEARCH, -1), -1)
                if self.block_hash(network, h) == parts[1]
            ),
            None,
        )
        if height is None:
            return 404, "Block not found"
        txs = [t for t in mine if t["height"] == height]
        if len(parts) == 2:
            return 200, {
                "id": parts[1],
                "height": height,
                "timestamp": self.block_time_ms(network, height) // 1000,
                "tx_count": len(txs),
            }
        if parts[2] != "txs" or not parts[3].isdigit():
            return 404, "Not Found"
        start = int(parts[3])
        return 200, [self._esplora_tx(network, t) for t in txs[start : start + ESPLORA_PAGE]]

    def _esplora_tx(self, network: str, t: dict) -> dict:
        _hrp, script = _segwit_parts(t["address"])
        _hrp, change_script = _segwit_parts(t["sender"])
        ours = {
            "scriptpubkey": script,
            "scriptpubkey_asm": f"OP_0 OP_PUSHBYTES_20 {script[4:]}",
            "scriptpubkey_type": "v0_p2wpkh",
            "scriptpubkey_address": t["address"],
            "value": t["amount_base"],
        }
        change = {
            "scriptpubkey": change_script,
            "scriptpubkey_asm": f"OP_0 OP_PUSHBYTES_20 {change_script[4:]}",
            "scriptpubkey_type": "v0_p2wpkh",
            "scriptpubkey_address": t["sender"],
            "value": t["change"],
        }
        vout = [ours, change] if t["index"] == 0 else [change, ours]
        funded = t["amount_base"] + t["change"] + t["fee"]
        status: dict[str, Any] = {"confirmed": False}
        if t["height"] is not None:
            status = {
                "confirmed": True,
                "block_height": t["height"],
                "block_hash": self.block_hash(network, t["height"]),
                "block_time": self.block_time_ms(network, t["height"]) // 1000,
            }
        return {
            "txid": t["txid"],
            "version": 2,
            "locktime": 0,
            "vin": [
                {
                    "txid": t["funding_txid"],
                    "vout": 0,
                    "prevout": {**change, "value": funded},
                    "scriptsig": "",
                    "scriptsig_asm": "",
                    "witness": [secrets.token_hex(71), "02" + t["funding_txid"]],
                    "is_coinbase": False,
                    "sequence": 4294967293,
                }
            ],
            "vout": vout,
            "size": 222,
            "weight": 561,
            "fee": t["fee"],
            "status": status,
        }

    # -- Ethereum -----------------------------------------------------------------------

    def ethereum(self, method: str, params: list) -> Any:
        if method == "eth_blockNumber":
            return hex(self.tip("ethereum"))
        if method == "eth_chainId":
            return "0x1"
        if method == "eth_getBlockByNumber":
            number = self._eth_block_tag(params[0] if params else None)
            full = len(params) > 1 and params[1] is True
            if number is None or number > self.tip("ethereum") or number < 0:
                return None
            return self._eth_block(number, full)
        if method == "eth_getTransactionReceipt":
            txid = params[0] if params else None
            transfer = next((t for t in self._included("ethereum") if t["txid"] == txid), None)
            return self._eth_receipt(transfer) if transfer else None
        if method == "eth_getLogs":
            query = params[0] if params and isinstance(params[0], dict) else {}
            return self._eth_logs(query)
        raise _RpcError(-32601, f"the method {method} does not exist/is not available")

    def _eth_block_tag(self, tag: Any) -> int | None:
        tip = self.tip("ethereum")
        named = {
            "latest": tip,
            "pending": tip,
            "safe": max(0, tip - 32),
            "finalized": max(0, tip - CHAINS["ethereum"].finality),
            "earliest": 0,
        }
        if tag in named:
            return named[tag]
        if isinstance(tag, str) and tag.startswith("0x"):
            try:
                return int(tag, 16)
            except ValueError:
                pass
        raise _RpcError(-32602, f"invalid block number or tag: {str(tag)[:40]}")

    def _eth_block(self, number: int, full: bool) -> dict:
        transactions = [t for t in self._included("ethereum") if t["height"] == number]
        return {
            "number": hex(number),
            "hash": "0x" + self.block_hash("ethereum", number),
            "parentHash": "0x" + self.block_hash("ethereum", number - 1),
            "timestamp": hex(self.block_time_ms("ethereum", number) // 1000),
            "miner": "0x95222290dd7278aa3ddd389cc1e1d165cc4bafe5",
            "gasLimit": "0x2255100",
            "gasUsed": hex(21_000 * len(transactions)),
            "baseFeePerGas": "0x3b9aca00",
            "transactions": [
                self._eth_transaction(t, position) if full else t["txid"]
                for position, t in enumerate(transactions)
            ],
            "uncles": [],
        }

    def _eth_transaction(self, t: dict, position: int) -> dict:
        if t["contract"]:
            to, value = t["contract"], 0
            recipient = t["address"][2:].lower().rjust(64, "0")
            data = f"0x{ERC20_TRANSFER_SELECTOR}{recipient}{t['amount_base']:064x}"
        else:
            to, value, data = t["address"], t["amount_base"], "0x"
        return {
            "hash": t["txid"],
            "nonce": hex(t["nonce"]),
            "blockHash": "0x" + self.block_hash("ethereum", t["height"]),
            "blockNumber": hex(t["height"]),
            "transactionIndex": hex(position),
            "from": t["sender"],
            "to": to,
            "value": hex(value),
            "gas": "0x5208" if not t["contract"] else "0xfde8",
            "maxFeePerGas": "0x77359400",
            "maxPriorityFeePerGas": "0x3b9aca00",
            "gasPrice": "0x4a817c800",
            "input": data,
            "type": "0x2",
            "chainId": "0x1",
            "v": "0x1",
            "r": "0x" + _hex_digest("r", t["txid"]),
            "s": "0x" + _hex_digest("s", t["txid"]),
        }

    def _eth_log(self, t: dict) -> dict:
        return {
            "address": t["contract"],
            "topics": [
                "0x" + TRANSFER_TOPIC,
                "0x" + t["sender"][2:].lower().rjust(64, "0"),
                "0x" + t["address"][2:].lower().rjust(64, "0"),
            ],
            "data": f"0x{t['amount_base']:064x}",
            "blockNumber": hex(t["height"]),
            "blockHash": "0x" + self.block_hash("ethereum", t["height"]),
            "blockTimestamp": hex(self.block_time_ms("ethereum", t["height"]) // 1000),
            "transactionHash": t["txid"],
            "transactionIndex": "0x0",
            "logIndex": hex(t["index"]),
            "removed": False,
        }

    def _eth_receipt(self, t: dict) -> dict:
        return {
            "transactionHash": t["txid"],
            "transactionIndex": "0x0",
            "blockHash": "0x" + self.block_hash("ethereum", t["height"]),
            "blockNumber": hex(t["height"]),
            "from": t["sender"],
            "to": t["contract"] or t["address"],
            "cumulativeGasUsed": "0x5208",
            "gasUsed": "0x5208",
            "effectiveGasPrice": "0x4a817c800",
            "contractAddress": None,
            "logs": [self._eth_log(t)] if t["contract"] else [],
            "logsBloom": "0x" + "00" * 256,
            "status": "0x1",
            "type": "0x2",
        }

    def _eth_logs(self, query: dict) -> list:
        first = self._eth_block_tag(query.get("fromBlock", "latest"))
        last = self._eth_block_tag(query.get("toBlock", "latest"))
        topics = query.get("topics") or []
        contracts = query.get("address")
        if isinstance(contracts, str):
            contracts = [contracts]
        logs = []
        for t in reversed(self._included("ethereum")):
            if not t["contract"] or not first <= t["height"] <= last:
                continue
            log = self._eth_log(t)
            if contracts and t["contract"].lower() not in {c.lower() for c in contracts}:
                continue
            # A filter lists at most as many topics as the log has; fewer match any rest.
            pairs = zip(topics, log["topics"], strict=False)
            if len(topics) <= 3 and all(_topic_matches(want, got) for want, got in pairs):
                logs.append(log)
        return logs

    # -- Tron -----------------------------------------------------------------------------

    def tron_post(self, path: str, body: Any) -> tuple[int, Any]:
        with self.lock:
            tip = self.tip("tron")
            if path == "/wallet/getnowblock":
                return 200, self._tron_block(tip)
            if path == "/walletsolidity/getnowblock":
                return 200, self._tron_block(max(0, tip - CHAINS["tron"].finality))
            if path in (
                "/wallet/gettransactioninfobyid",
                "/walletsolidity/gettransactioninfobyid",
            ):
                txid = body.get("value") if isinstance(body, dict) else None
                transfer = next((t for t in self._included("tron") if t["txid"] == txid), None)
                return 200, self._tron_info(transfer) if transfer else {}
        return 404, {"Error": f"no such endpoint {path}"}

    def tron_get(self, path: str, query: dict) -> tuple[int, Any]:
        parts = [unquote(part) for part in path.strip("/").split("/")]
        if len(parts) < 4 or parts[:2] != ["v1", "accounts"] or parts[3] != "transactions":
            return 404, {"success": False, "error": "Not Found", "statusCode": 404}
        address = parts[2]
        try:
            _tron_hex(address)
        except ControlError:
            return 400, {"success": False, "error": "Invalid address provided", "statusCode": 400}
        try:
            limit = max(1, min(200, int(query.get("limit", "20"))))
        except ValueError:
            limit = 20
        with self.lock:
            mine = [t for t in self._included("tron") if t["address"] == address]
            if parts[4:] == ["trc20"]:
                data = [self._tron_trc20_item(t) for t in mine if t["contract"]][:limit]
            elif len(parts) == 4:
                data = [self._tron_trx_item(t) for t in mine if not t["contract"]][:limit]
            else:
                return 404, {"success": False, "error": "Not Found", "statusCode": 404}
        return 200, {
            "data": data,
            "success": True,
            "meta": {"at": _now_ms(), "page_size": len(data)},
        }

    def _tron_block(self, number: int) -> dict:
        block_id = self.block_hash("tron", number)
        return {
            "blockID": block_id,
            "block_header": {
                "raw_data": {
                    "number": number,
                    "txTrieRoot": _hex_digest("trie", block_id),
                    "witness_address": "41" + _hex_digest("witness", number % 27)[:40],
                    "parentHash": self.block_hash("tron", number - 1),
                    "version": 32,
                    "timestamp": self.block_time_ms("tron", number),
                },
                "witness_signature": _hex_digest("sig", block_id) * 2 + "00",
            },
        }

    def _tron_trx_item(self, t: dict) -> dict:
        timestamp = self.block_time_ms("tron", t["height"])
        return {
            "ret": [{"contractRet": "SUCCESS", "fee": 0}],
            "signature": [_hex_digest("sig", t["txid"]) * 2 + "1b"],
            "txID": t["txid"],
            "net_usage": 268,
            "raw_data_hex": "0a02" + _hex_digest("raw", t["txid"]),
            "net_fee": 0,
            "energy_usage": 0,
            "blockNumber": t["height"],
            "block_timestamp": timestamp,
            "energy_fee": 0,
            "energy_usage_total": 0,
            "raw_data": {
                "contract": [
                    {
                        "parameter": {
                            "value": {
                                "amount": t["amount_base"],
                                "owner_address": _tron_hex(t["sender"]),
                                "to_address": _tron_hex(t["address"]),
                            },
                            "type_url": "type.googleapis.com/protocol.TransferContract",
                        },
                        "type": "TransferContract",
                    }
                ],
                "ref_block_bytes": f"{(t['height'] - 2) & 0xFFFF:04x}",
                "ref_block_hash": self.block_hash("tron", t["height"] - 2)[16:32],
                "expiration": timestamp + 60_000,
                "timestamp": timestamp - 3_000,
            },
            "internal_transactions": [],
        }

    def _tron_trc20_item(self, t: dict) -> dict:
        return {
            "transaction_id": t["txid"],
            "token_info": {
                "symbol": t["asset"],
                "address": t["contract"],
                "decimals": 6,
                "name": "Tether USD",
            },
            "block_timestamp": self.block_time_ms("tron", t["height"]),
            "from": t["sender"],
            "to": t["address"],
            "type": "Transfer",
            "value": str(t["amount_base"]),
        }

    def _tron_info(self, t: dict) -> dict:
        info: dict[str, Any] = {
            "id": t["txid"],
            "blockNumber": t["height"],
            "blockTimeStamp": self.block_time_ms("tron", t["height"]),
            "receipt": {"net_usage": 268},
        }
        if t["contract"]:
            contract = _tron_hex(t["contract"])
            info.update(
                fee=13_844_850,
                contractResult=["0" * 64],
                contract_address=contract,
                receipt={
                    "energy_fee": 13_500_850,
                    "energy_usage_total": 64_285,
                    "net_fee": 344_000,
                    "result": "SUCCESS",
                },
                log=[
                    {
                        "address": contract[2:],
                        "topics": [
                            TRANSFER_TOPIC,
                            _tron_hex(t["sender"])[2:].rjust(64, "0"),
                            _tron_hex(t["address"])[2:].rjust(64, "0"),
                        ],
                        "data": f"{t['amount_base']:064x}",
                    }
                ],
            )
        return info

    # -- Solana ---------------------------------------------------------------------------

    def solana(self, method: str, params: list) -> Any:
        tip = self.tip("solana")
        if method == "getSlot":
            return tip
        if method == "getSignaturesForAddress":
            key = params[0] if params else None
            options = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
            limit = options.get("limit", 1000)
            limit = limit if isinstance(limit, int) and 0 < limit <= 1000 else 1000
            found = [
                t
                for t in self._included("solana")
                if key in (t["address"], t["reference"], t["sender"])
            ]
            return [
                {
                    "signature": t["txid"],
                    "slot": t["height"],
                    "err": None,
                    "memo": None,
                    "blockTime": self.block_time_ms("solana", t["height"]) // 1000,
                    "confirmationStatus": (
                        "finalized"
                        if tip - t["height"] >= CHAINS["solana"].finality
                        else "confirmed"
                    ),
                }
                for t in found[:limit]
            ]
        if method == "getTransaction":
            signature = params[0] if params else None
            t = next((t for t in self._included("solana") if t["txid"] == signature), None)
            return self._solana_transaction(t) if t else None
        raise _RpcError(-32601, "Method not found")

    def _solana_transaction(self, t: dict) -> dict:
        fee = 5_000
        keys = [t["sender"], t["address"]]
        pre = [t["sender_before"], t["recipient_before"]]
        post = [
            t["sender_before"] - t["amount_base"] - fee,
            t["recipient_before"] + t["amount_base"],
        ]
        if t["reference"]:
            keys.append(t["reference"])
            pre.append(0)
            post.append(0)
        keys.append(SYSTEM_PROGRAM)
        pre.append(1)
        post.append(1)
        accounts = list(range(len(keys) - 1))
        return {
            "slot": t["height"],
            "blockTime": self.block_time_ms("solana", t["height"]) // 1000,
            "meta": {
                "err": None,
                "fee": fee,
                "innerInstructions": [],
                "logMessages": [
                    f"Program {SYSTEM_PROGRAM} invoke [1]",
                    f"Program {SYSTEM_PROGRAM} success",
                ],
                "postBalances": post,
                "postTokenBalances": [],
                "preBalances": pre,
                "preTokenBalances": [],
                "rewards": [],
                "status": {"Ok": None},
                "loadedAddresses": {"readonly": [], "writable": []},
                "computeUnitsConsumed": 150,
            },
            "transaction": {
                "message": {
                    "accountKeys": keys,
                    "header": {
                        "numReadonlySignedAccounts": 0,
                        "numReadonlyUnsignedAccounts": len(keys) - 2,
                        "numRequiredSignatures": 1,
                    },
                    "instructions": [
                        {
                            "accounts": accounts,
                            "data": "3Bxs4NN8M2Yn4TLb",
                            "programIdIndex": len(keys) - 1,
                            "stackHeight": None,
                        }
                    ],
                    "recentBlockhash": Base58Encoder.Encode(
                        bytes.fromhex(self.block_hash("solana", t["height"] - 1))
                    ),
                },
                "signatures": [t["txid"]],
            },
            "version": "legacy",
        }

    # -- JSON-RPC ---------------------------------------------------------------------------

    def rpc(self, network: str, body: Any) -> dict:
        request_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(body.get("method"), str):
            return _rpc_error(request_id, -32600, "Invalid request")
        params = body.get("params") or []
        if not isinstance(params, list):
            return _rpc_error(request_id, -32602, "params must be a list")
        handler = self.ethereum if network == "ethereum" else self.solana
        try:
            with self.lock:
                result = handler(body["method"], params)
        except _RpcError as error:
            return _rpc_error(request_id, error.code, str(error))
        return {"jsonrpc": "2.0", "id": request_id, "result": result}


class _RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _rpc_error(request_id: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _topic_matches(wanted: Any, topic: str) -> bool:
    if wanted is None:
        return True
    if isinstance(wanted, list):
        return any(isinstance(w, str) and w.lower() == topic.lower() for w in wanted)
    return isinstance(wanted, str) and wanted.lower() == topic.lower()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: shutdown never waits on one
    server: "SimulatorServer"

    def do_GET(self):
        simulator = self.server.simulator
        split = urlsplit(self.path)
        path, query = split.path, dict(parse_qsl(split.query))
        for network in ("bitcoin", "litecoin"):
            prefix = f"/{network}/api/"
            if path.startswith(prefix):
                return self._send(*simulator.esplora(network, path[len(prefix) :]))
        if path.startswith("/tron/"):
            return self._send(*simulator.tron_get(path[len("/tron") :], query))
        if path == "/_control/state":
            return self._send(200, simulator.summary())
        return self._send(404, "Not Found")

    def do_POST(self):
        simulator = self.server.simulator
        length = self.headers.get("Content-Length", "0")
        if not length.isdigit() or int(length) > MAX_BODY:
            return self._send(413, {"error": f"the body must be at most {MAX_BODY} bytes"})
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            if self.path in ("/ethereum", "/solana"):
                return self._send(200, _rpc_error(None, -32700, "Parse error"))
            return self._send(400, {"error": "the body is not JSON"})
        path = urlsplit(self.path).path
        if path in ("/ethereum", "/solana"):
            return self._send(200, simulator.rpc(path[1:], body))
        if path.startswith("/tron/"):
            return self._send(*simulator.tron_post(path[len("/tron") :], body))
        control = {"/_control/pay": simulator.pay, "/_control/mine": simulator.mine}
        if path in control:
            try:
                return self._send(200, control[path](body))
            except ControlError as error:
                return self._send(400, {"error": str(error)})
        return self._send(404, "Not Found")

    def _send(self, status: int, body: Any) -> None:
        if isinstance(body, str):
            data, content_type = body.encode(), "text/plain"
        else:
            data, content_type = json.dumps(body).encode(), "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format, *args):
        pass


class SimulatorServer(ThreadingHTTPServer):
    daemon_threads = True
    simulator: ChainSimulator


def make_server(state_path: Path, host: str = "127.0.0.1", port: int = 0) -> SimulatorServer:
    """A server bound to host:port (0: a free port) over the state in `state_path`."""
    server = SimulatorServer((host, port), _Handler)
    server.simulator = ChainSimulator(state_path)
    with server.simulator.lock:
        server.simulator._save()
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Kernodeck's demo chain simulators")
    parser.add_argument("--state", type=Path, required=True, help="JSON file of the chains")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args(argv)
    server = make_server(options.state, options.host, options.port)
    temporary = options.port_file.with_suffix(".tmp")
    temporary.write_text(str(server.server_address[1]))
    os.replace(temporary, options.port_file)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        options.port_file.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
