"""Ethereum as its JSON-RPC answers it: blocks, receipts and the Transfer logs of tokens.

A payment is ether to the address or an ERC-20 transfer (USDT, USDC at their mainnet
contracts); either way it is mined into a new block at once, as the adapter sees no pending
transactions. "finalized" is the tip less the chain's finality depth.
"""

import re
import secrets
from typing import Any

from kernodeck.demo.simulator.core import CHAINS, TRANSFER_TOPIC, ChainState, RpcError, hex_digest

ERC20_TRANSFER_SELECTOR = "a9059cbb"
ETH_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


def _random_eth_address() -> str:
    return "0x" + secrets.token_hex(20)


def _topic_matches(wanted: Any, topic: str) -> bool:
    if wanted is None:
        return True
    if isinstance(wanted, list):
        return any(isinstance(w, str) and w.lower() == topic.lower() for w in wanted)
    return isinstance(wanted, str) and wanted.lower() == topic.lower()


class EthereumApi(ChainState):
    """The JSON-RPC methods of Ethereum over the shared chain state."""

    def _eth_transfer_fields(self, contract: str | None) -> dict:
        """A new Ethereum transfer's own fields: txid, sender, log index and nonce."""
        return dict(
            txid="0x" + secrets.token_hex(32),
            sender=_random_eth_address(),
            index=secrets.randbelow(200) if contract else 0,  # log index of a token
            nonce=secrets.randbelow(5000),
        )

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
        raise RpcError(-32601, f"the method {method} does not exist/is not available")

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
        raise RpcError(-32602, f"invalid block number or tag: {str(tag)[:40]}")

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
            "r": "0x" + hex_digest("r", t["txid"]),
            "s": "0x" + hex_digest("s", t["txid"]),
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
