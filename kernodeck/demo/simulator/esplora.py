"""Bitcoin and Litecoin as Esplora answers them: address histories, blocks, the mempool.

Both UTXO chains share one API shape (the Esplora REST routes under /bitcoin/api and
/litecoin/api) and one transfer shape (a segwit output next to the payer's change), so they
live together here; a payment waits in the mempool until a block is mined.
"""

import secrets
from typing import Any
from urllib.parse import unquote

from bip_utils import SegwitBech32Decoder, SegwitBech32Encoder

from kernodeck.demo.simulator.core import ChainState, hex_digest

ESPLORA_PAGE = 25  # confirmed transactions per Esplora page
ESPLORA_HASH_SEARCH = 2000  # blocks below the tip searched for a block hash


def _segwit_parts(address: str) -> tuple[str, str]:
    """(human-readable part, scriptpubkey hex) of a bech32 address; a stand-in otherwise."""
    hrp = address.lower().split("1", 1)[0] if "1" in address else "bc"
    try:
        version, program = SegwitBech32Decoder.Decode(hrp, address)
    except Exception:  # bip_utils raises several types for malformed input
        return hrp, "0014" + hex_digest("script", address)[:40]
    if version == 0:
        return hrp, f"00{len(program):02x}{program.hex()}"
    return hrp, f"{0x50 + version:02x}{len(program):02x}{program.hex()}"


class EsploraApi(ChainState):
    """The Esplora routes of Bitcoin and Litecoin over the shared chain state."""

    def _esplora_transfer_fields(self, address: str) -> dict:
        """A new UTXO transfer's own fields: txid, output index, change and fee."""
        hrp, _script = _segwit_parts(address)
        change = SegwitBech32Encoder.Encode(hrp, 0, secrets.token_bytes(20))
        return dict(
            txid=secrets.token_hex(32),
            index=secrets.randbelow(2),  # our output is first or second, like wallets do
            sender=change,
            change=10_000 + secrets.randbelow(5_000_000),
            funding_txid=secrets.token_hex(32),
            fee=141 * (2 + secrets.randbelow(9)),
        )

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
