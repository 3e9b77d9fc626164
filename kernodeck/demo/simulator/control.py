"""The whole simulator: the chains' APIs in one object, and the control API the panel calls.

`ChainSimulator` joins the chain modules over one state and adds what is not any chain's
API: recording a payment (pay), mining blocks (mine), the state summary, and the JSON-RPC
envelope Ethereum and Solana share. A new transfer takes its common fields here and its
chain's own fields (identifiers, sender, balances) from that chain's module.
"""

import re
from typing import Any

from kernodeck.demo.simulator.core import CHAINS, ControlError, RpcError, now_ms, rpc_error
from kernodeck.demo.simulator.esplora import EsploraApi
from kernodeck.demo.simulator.ethereum import ETH_ADDRESS, EthereumApi
from kernodeck.demo.simulator.solana import SolanaApi
from kernodeck.demo.simulator.tron import TronApi, tron_hex
from kernodeck.payments import methods

MAX_MINE = 100  # blocks per /_control/mine
MAX_AMOUNT = 10**30  # base units per simulated payment
_TEXT = re.compile(r"[0-9A-Za-z]{1,100}")


def _method_network(code: Any) -> tuple[str, str, str | None]:
    """(network, asset, token contract) of a payment method code, mainnet contracts."""
    if not isinstance(code, str) or code not in methods.BY_CODE:
        raise ControlError(f"unknown payment method {str(code)[:40]!r}")
    spec = methods.BY_CODE[code]
    return spec.chain, spec.asset, methods.token_contract(code, testnet=False)


class ChainSimulator(EsploraApi, EthereumApi, TronApi, SolanaApi):
    """The simulated chains' state and the answers built from it (thread-safe)."""

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
        if network == "ethereum" and not ETH_ADDRESS.fullmatch(address):
            raise ControlError(f"not an Ethereum address: {address!r}")
        if network == "tron":
            tron_hex(address)
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
            "sent_ms": now_ms(),
        }
        if network in ("bitcoin", "litecoin"):
            transfer.update(self._esplora_transfer_fields(address))
        elif network == "ethereum":
            transfer.update(self._eth_transfer_fields(contract))
        elif network == "tron":
            transfer.update(self._tron_transfer_fields())
        else:
            transfer.update(self._solana_transfer_fields(address, amount))
        self.state["transfers"].append(transfer)
        return transfer

    # -- JSON-RPC ---------------------------------------------------------------------------

    def rpc(self, network: str, body: Any) -> dict:
        request_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(body.get("method"), str):
            return rpc_error(request_id, -32600, "Invalid request")
        params = body.get("params") or []
        if not isinstance(params, list):
            return rpc_error(request_id, -32602, "params must be a list")
        handler = self.ethereum if network == "ethereum" else self.solana
        try:
            with self.lock:
                result = handler(body["method"], params)
        except RpcError as error:
            return rpc_error(request_id, error.code, str(error))
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
