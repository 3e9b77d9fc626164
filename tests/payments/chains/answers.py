"""Minimal valid answers of each chain API, served over loopback, for the boundary tests.

Each `*_answers()` returns a plain JSON tree, {endpoint: body}, that makes its adapter report
exactly one credit; `serve(loopback, network, answers)` routes it (the Esplora tip is text,
the JSON-RPC APIs answer per method). Tests change one value in the tree (`set_at`) and
check that the adapter refuses it with a ChainError, or let hypothesis change many.
"""

from datetime import UTC, datetime

from kernodeck.payments.chains.base import WatchTarget, scan_checked
from kernodeck.payments.chains.esplora import EsploraAdapter
from kernodeck.payments.chains.ethereum import TRANSFER_TOPIC as ERC20_TOPIC
from kernodeck.payments.chains.ethereum import EthereumAdapter
from kernodeck.payments.chains.solana import SolanaAdapter
from kernodeck.payments.chains.tron import TRANSFER_TOPIC as TRC20_TOPIC
from kernodeck.payments.chains.tron import TronAdapter, to_hex_address

BLOCK_TIME = 1_767_225_600  # 2026-01-01T00:00:00Z
BLOCK_DATETIME = datetime.fromtimestamp(BLOCK_TIME, tz=UTC)

BTC_OURS = "bc1qzct95jrrgx294txdqxr8vrpvpnsjcstaeg7c2j"
ETH_OURS = "0x52908400098527886E0F7030069857D2E4169EE7"
ETH_USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
ETH_STRANGER = "0x6481bda5bc92a52a4fec49a0479289fe59802fe4"
TRON_OURS = "TEXFuhpjF8RyncAYX7aunyhwW7F3RUALc5"
TRON_SENDER = "TW3FUKMyBkEyaehtPF1ZQBg1yGdbibGNBr"
TRON_USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
SOL_RECIPIENT = "2BygESGGedZ2UCjRAHdatCtXqh3LPb5otEdfYxKsFcd1"
SOL_PAYER = "GWFQp9mjJep2jhtZ7nvttEmkRYLRwEDxWGxurademQ46"
SOL_REFERENCE = "Ref1111111111111111111111111111111111111111"
SOL_SIGNATURE = "5" * 88


def esplora_answers() -> dict:
    return {
        "tip": "800100",
        "txs": [
            {
                "txid": "ab" * 32,
                "vin": [],
                "vout": [{"scriptpubkey_address": BTC_OURS, "value": 150_000}],
                "status": {
                    "confirmed": True,
                    "block_height": 800_000,
                    "block_hash": "00" * 32,
                    "block_time": BLOCK_TIME,
                },
            }
        ],
    }


def _eth_topic(address: str) -> str:
    return "0x" + address[2:].lower().rjust(64, "0")


def ethereum_answers() -> dict:
    """JSON-RPC results by method; every block number gets the same block."""
    return {
        "eth_blockNumber": "0x64",
        "eth_getBlockByNumber": {
            "number": "0x64",
            "hash": "0x" + "cd" * 32,
            "timestamp": hex(BLOCK_TIME),
            "transactions": [
                {"hash": "0x" + "ee" * 32, "to": ETH_OURS.lower(), "value": hex(10**17)}
            ],
        },
        "eth_getTransactionReceipt": {"status": "0x1", "blockHash": "0x" + "cd" * 32},
        "eth_getLogs": [
            {
                "address": ETH_USDT.lower(),
                "topics": [ERC20_TOPIC, _eth_topic(ETH_STRANGER), _eth_topic(ETH_OURS)],
                "data": f"0x{25_000_000:064x}",
                "blockNumber": "0x63",
                "blockHash": "0x" + "cd" * 32,  # every block is the same block here
                "transactionHash": "0x" + "ff" * 32,
                "logIndex": "0x2",
                "removed": False,
                "blockTimestamp": hex(BLOCK_TIME),
            }
        ],
    }


def tron_answers() -> dict:
    ours_hex = to_hex_address(TRON_OURS)
    txid = "aa" * 32
    token_txid = "bb" * 32
    return {
        "head": {"block_header": {"raw_data": {"number": 75_418_429}}},
        "solidified": {"block_header": {"raw_data": {"number": 75_418_409}}},
        "transactions": {
            "success": True,
            "meta": {"at": 1, "page_size": 1},
            "data": [
                {
                    "txID": txid,
                    "blockNumber": 75_418_399,
                    "block_timestamp": BLOCK_TIME * 1000,
                    "ret": [{"contractRet": "SUCCESS"}],
                    "raw_data": {
                        "contract": [
                            {
                                "type": "TransferContract",
                                "parameter": {
                                    "value": {
                                        "amount": 10_000,
                                        "owner_address": to_hex_address(TRON_SENDER),
                                        "to_address": ours_hex,
                                    }
                                },
                            }
                        ]
                    },
                }
            ],
        },
        "trc20": {
            "success": True,
            "meta": {"at": 1, "page_size": 1},
            "data": [
                {
                    "transaction_id": token_txid,
                    "token_info": {"address": TRON_USDT, "decimals": 6, "symbol": "USDT"},
                    "block_timestamp": BLOCK_TIME * 1000,
                    "from": TRON_SENDER,
                    "to": TRON_OURS,
                    "type": "Transfer",
                    "value": "25000000",
                }
            ],
        },
        "info": {
            "id": token_txid,
            "blockNumber": 75_418_400,
            "blockTimeStamp": BLOCK_TIME * 1000,
            "receipt": {"result": "SUCCESS"},
            "log": [
                {
                    "address": to_hex_address(TRON_USDT)[2:],
                    "topics": [
                        TRC20_TOPIC,
                        to_hex_address(TRON_SENDER)[2:].rjust(64, "0"),
                        ours_hex[2:].rjust(64, "0"),
                    ],
                    "data": f"{25_000_000:064x}",
                }
            ],
        },
    }


def solana_answers() -> dict:
    return {
        "getSlot": 300_000_100,
        "getSignaturesForAddress": [
            {
                "signature": SOL_SIGNATURE,
                "slot": 300_000_000,
                "err": None,
                "blockTime": BLOCK_TIME,
                "confirmationStatus": "finalized",
            }
        ],
        "getTransaction": {
            "slot": 300_000_000,
            "blockTime": BLOCK_TIME,
            "meta": {
                "err": None,
                "preBalances": [9_000_000_000, 1_000_000_000, 1, 0],
                "postBalances": [8_899_995_000, 1_100_000_000, 1, 0],
                "loadedAddresses": {"writable": [], "readonly": []},
            },
            "transaction": {
                "message": {
                    "accountKeys": [
                        SOL_PAYER,
                        SOL_RECIPIENT,
                        "11111111111111111111111111111111",
                        SOL_REFERENCE,
                    ]
                }
            },
        },
    }


ANSWERS = {
    "bitcoin": esplora_answers,
    "ethereum": ethereum_answers,
    "tron": tron_answers,
    "solana": solana_answers,
}


def serve(loopback, network: str, answers: dict) -> None:
    """Route `answers` (the whole tree, read at each request) for `network`'s adapter."""
    if network == "bitcoin":
        tip = answers["tip"]
        text = tip if isinstance(tip, str) else str(tip)
        loopback.route("GET", "/blocks/tip/height", body=text, content_type="text/plain")
        loopback.route("GET", f"/address/{BTC_OURS}/txs", json_body=answers["txs"])
    elif network == "tron":
        loopback.route("POST", "/wallet/getnowblock", json_body=answers["head"])
        loopback.route("POST", "/walletsolidity/getnowblock", json_body=answers["solidified"])
        base = f"/v1/accounts/{TRON_OURS}/transactions"
        loopback.route("GET", base, json_body=answers["transactions"])
        loopback.route("GET", f"{base}/trc20", json_body=answers["trc20"])
        loopback.route("POST", "/wallet/gettransactioninfobyid", json_body=answers["info"])
    else:

        def rpc(request):
            body = request.json()
            if body["method"] not in answers:
                error = {"code": -32601, "message": "Method not found"}
                return 200, {}, {"jsonrpc": "2.0", "id": body["id"], "error": error}
            result = answers[body["method"]]
            return 200, {}, {"jsonrpc": "2.0", "id": body["id"], "result": result}

        loopback.route("POST", "/", handler=rpc)


def scan(loopback, network: str):
    """One scan of the adapter for `network` against the loopback server, checked at the
    boundary as the watcher checks it (scan_checked)."""
    adapter, targets = _adapter(loopback, network)
    return scan_checked(adapter, targets)


def _adapter(loopback, network: str):
    never_sleep = [].append
    if network == "bitcoin":
        adapter = EsploraAdapter("bitcoin", loopback.url, sleep=never_sleep)
        return adapter, _targets(BTC_OURS)
    if network == "ethereum":
        adapter = EthereumAdapter(
            f"{loopback.url}/",
            token_contracts={"USDT": ETH_USDT},
            sleep=never_sleep,
            first_scan_depth=1,
            rescan_depth=0,
            max_blocks_per_scan=2,
        )
        return adapter, _targets(ETH_OURS)
    if network == "tron":
        adapter = TronAdapter(loopback.url, sleep=never_sleep)
        return adapter, _targets(TRON_OURS)
    adapter = SolanaAdapter(f"{loopback.url}/", sleep=never_sleep)
    return adapter, _targets(SOL_RECIPIENT, SOL_REFERENCE)


def _targets(address: str, reference: str | None = None):
    return [WatchTarget(address, reference=reference)]


def set_at(tree, path: tuple, value) -> None:
    """Replace the value at `path` (keys and list indexes) inside `tree`."""
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def paths(tree, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside `tree`, containers included, the root excluded."""
    found = []
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for key, value in items:
        found.append((*prefix, key))
        if isinstance(value, dict | list) and value:
            found.extend(paths(value, (*prefix, key)))
    return found
