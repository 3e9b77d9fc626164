"""What every simulated chain shares: the chains' table, the clock, the state file and blocks.

`ChainState` holds the JSON state (tips, block times, transfers) behind one lock and answers
the questions each chain's API module asks of it: the tip, a block's time and hash, which
transfers are included. The chain modules (esplora, ethereum, tron, solana) build on it; the
control API and the HTTP server live apart, so this module knows no wire format.
"""

import hashlib
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE_VERSION = 1
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


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


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def block_now_ms() -> int:
    """The clock rounded up to a whole second: a block made after a moment never reads
    as earlier than it, even by chains that state block times in whole seconds."""
    return -(-time.time_ns() // 1_000_000_000) * 1000


def hex_digest(*parts: object) -> str:
    return hashlib.sha256(":".join(str(part) for part in parts).encode()).hexdigest()


class RpcError(Exception):
    """A JSON-RPC call the simulator refuses (answered with its code and message)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def rpc_error(request_id: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class ChainState:
    """The simulated chains' state: tips, block times and hashes, transfers (thread-safe)."""

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
        now = now_ms()
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
        digest = hex_digest(self.state["salt"], network, height)
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
            chain["mined_ms"].append(max(block_now_ms(), previous + spacing))
        for transfer in self.state["transfers"]:
            if transfer["network"] == network and transfer["height"] is None:
                transfer["height"] = first
        return self.tip(network)

    def _included(self, network: str) -> list[dict]:
        """Transfers of `network` in a block, newest first."""
        found = [
            t
            for t in self.state["transfers"]
            if t["network"] == network and t["height"] is not None
        ]
        return sorted(found, key=lambda t: t["height"], reverse=True)
