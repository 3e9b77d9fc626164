"""Solana as its JSON-RPC answers it: the slot, an address's signatures, a transaction.

A payment is a System Program transfer, with the Solana Pay reference as a read-only extra
account when there is one; it lands in a new slot at once and reads "finalized" once the
chain's finality depth lies above it. Balances before and after follow earlier credits.
"""

import secrets
from typing import Any

from bip_utils import Base58Encoder

from kernodeck.demo.simulator.core import CHAINS, ChainState, RpcError

SYSTEM_PROGRAM = "11111111111111111111111111111111"


class SolanaApi(ChainState):
    """The JSON-RPC methods of Solana over the shared chain state."""

    def _solana_transfer_fields(self, address: str, amount: int) -> dict:
        """A new Solana transfer's own fields: signature, sender and the balances before."""
        received = sum(
            t["amount_base"]
            for t in self.state["transfers"]
            if t["network"] == "solana" and t["address"] == address
        )
        return dict(
            txid=Base58Encoder.Encode(secrets.token_bytes(64)),
            sender=Base58Encoder.Encode(secrets.token_bytes(32)),
            index=0,
            recipient_before=2_039_280 + received,  # rent-exempt minimum + earlier credits
            sender_before=amount + 5_000 + 10**9 + secrets.randbelow(10**9),
        )

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
        raise RpcError(-32601, "Method not found")

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
