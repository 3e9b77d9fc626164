"""Tron as TronGrid answers it: the now-block, transaction info, an account's TRX and TRC-20.

Addresses are base58check ("T…"), the wire carries them as "41" + 20 bytes in hex; a
payment (TRX or USDT) is included in a new block at once, and the solidity node's block is
the tip less the chain's finality depth.
"""

import secrets
from typing import Any
from urllib.parse import unquote

from bip_utils import Base58ChecksumError, Base58Decoder, Base58Encoder

from kernodeck.demo.simulator.core import (
    CHAINS,
    TRANSFER_TOPIC,
    ChainState,
    ControlError,
    hex_digest,
    now_ms,
)


def tron_hex(address: str) -> str:
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


class TronApi(ChainState):
    """The TronGrid routes of Tron over the shared chain state."""

    def _tron_transfer_fields(self) -> dict:
        """A new Tron transfer's own fields: txid and sender."""
        return dict(txid=secrets.token_hex(32), sender=_random_tron_address(), index=0)

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
            if path == "/wallet/getblockbylimitnext":
                return self._tron_blocks(body, tip)
        return 404, {"Error": f"no such endpoint {path}"}

    def _tron_blocks(self, body: Any, tip: int) -> tuple[int, Any]:
        """Blocks [startNum, endNum) up to the tip, at most 100, with their transactions
        (the lock is held by the caller); {} when none is there yet, as the node answers."""
        body = body if isinstance(body, dict) else {}
        start, end = body.get("startNum"), body.get("endNum")
        if not isinstance(start, int) or not isinstance(end, int) or not 0 < end - start <= 100:
            return 200, {"Error": "class java.lang.IllegalArgumentException : bad block range"}
        numbers = range(max(start, 0), min(end, tip + 1))
        if not numbers:
            return 200, {}
        by_height: dict[int, list] = {}
        for t in self._included("tron"):
            if t["height"] in numbers:
                by_height.setdefault(t["height"], []).append(self._tron_node_tx(t))
        blocks = []
        for number in numbers:
            block = self._tron_block(number)
            if by_height.get(number):
                block["transactions"] = by_height[number]
            blocks.append(block)
        return 200, {"block": blocks}

    def _tron_node_tx(self, t: dict) -> dict:
        """A transfer as a block holds it: the list item's node fields; a token transfer as
        the transfer(address,uint256) call to its contract."""
        tx = self._tron_trx_item(t)
        for name in ("blockNumber", "block_timestamp", "internal_transactions"):
            tx.pop(name)
        if t["contract"]:
            recipient = tron_hex(t["address"])[2:].rjust(64, "0")
            tx["raw_data"]["contract"][0] = {
                "parameter": {
                    "value": {
                        "data": "a9059cbb" + recipient + f"{t['amount_base']:064x}",
                        "owner_address": tron_hex(t["sender"]),
                        "contract_address": tron_hex(t["contract"]),
                    },
                    "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
                },
                "type": "TriggerSmartContract",
            }
        return tx

    def tron_get(self, path: str, query: dict) -> tuple[int, Any]:
        parts = [unquote(part) for part in path.strip("/").split("/")]
        if len(parts) < 4 or parts[:2] != ["v1", "accounts"] or parts[3] != "transactions":
            return 404, {"success": False, "error": "Not Found", "statusCode": 404}
        address = parts[2]
        try:
            tron_hex(address)
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
            "meta": {"at": now_ms(), "page_size": len(data)},
        }

    def _tron_block(self, number: int) -> dict:
        block_id = self.block_hash("tron", number)
        return {
            "blockID": block_id,
            "block_header": {
                "raw_data": {
                    "number": number,
                    "txTrieRoot": hex_digest("trie", block_id),
                    "witness_address": "41" + hex_digest("witness", number % 27)[:40],
                    "parentHash": self.block_hash("tron", number - 1),
                    "version": 32,
                    "timestamp": self.block_time_ms("tron", number),
                },
                "witness_signature": hex_digest("sig", block_id) * 2 + "00",
            },
        }

    def _tron_trx_item(self, t: dict) -> dict:
        timestamp = self.block_time_ms("tron", t["height"])
        return {
            "ret": [{"contractRet": "SUCCESS", "fee": 0}],
            "signature": [hex_digest("sig", t["txid"]) * 2 + "1b"],
            "txID": t["txid"],
            "net_usage": 268,
            "raw_data_hex": "0a02" + hex_digest("raw", t["txid"]),
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
                                "owner_address": tron_hex(t["sender"]),
                                "to_address": tron_hex(t["address"]),
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
            contract = tron_hex(t["contract"])
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
                            tron_hex(t["sender"])[2:].rjust(64, "0"),
                            tron_hex(t["address"])[2:].rjust(64, "0"),
                        ],
                        "data": f"{t['amount_base']:064x}",
                    }
                ],
            )
        return info
