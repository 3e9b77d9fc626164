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
                                  /wallet/gettransactioninfobyid, /wallet/getblockbylimitnext;
                                  GET /v1/accounts/:a/transactions
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

The package, one module per chain API over a shared core: core (the chains' table, the clock,
the state file, blocks), esplora (Bitcoin, Litecoin), ethereum, tron, solana, control (the
`ChainSimulator` joining them, and the control API) and server (HTTP routing, `main`).
"""

from kernodeck.demo.simulator.control import MAX_AMOUNT, MAX_MINE, ChainSimulator
from kernodeck.demo.simulator.core import CHAINS, STATE_VERSION, ChainSpec, ControlError
from kernodeck.demo.simulator.server import MAX_BODY, SimulatorServer, main, make_server

__all__ = [
    "CHAINS",
    "MAX_AMOUNT",
    "MAX_BODY",
    "MAX_MINE",
    "STATE_VERSION",
    "ChainSimulator",
    "ChainSpec",
    "ControlError",
    "SimulatorServer",
    "main",
    "make_server",
]
