"""The Core JSON-RPC adapter over loopback, in the shapes of Bitcoin Core 22 and later
(`scriptPubKey.address`), where the real-node tests (tests/payments/test_litecoind.py,
Litecoin Core 0.21: `addresses`) cannot go: credentials, the cookie file, batch errors."""

import base64

import pytest

from kernodeck.payments.chains import http
from kernodeck.payments.chains.base import ChainError, WatchTarget
from kernodeck.payments.chains.core_rpc import CoreRpcAdapter
from kernodeck.payments.chains.esplora import watched_among
from tests.loopback import LoopbackServer

OURS = "bcrt1qours0000000000000000000000000000000000"
STRANGER = "bcrt1qstranger000000000000000000000000000000"
BLOCK = "b1" * 32
PAID = "aa" * 32
WAITING = "bb" * 32
GONE = "cc" * 32


def output(address, value, n):
    return {"value": float(value), "n": n, "scriptPubKey": {"address": address}}


class FakeCore:
    """Answers JSON-RPC batches as bitcoind 22+ would, for a chain of 101 blocks."""

    def __init__(self, server, *, chain="regtest", value="0.00150000"):
        self.chain = chain
        self.mempool = {
            WAITING: {"txid": WAITING, "vout": [output(STRANGER, "1", 0), output(OURS, "0.2", 1)]}
        }
        self.block = {
            "hash": BLOCK,
            "height": 101,
            "time": 1_700_000_000,
            "tx": [{"txid": PAID, "vout": [output(OURS, value, 0)]}],
        }
        server.otherwise(self.answer)

    def answer(self, request):
        return 200, {}, [self.one(call) for call in request.json()]

    def one(self, call):
        method, params = call["method"], call["params"]
        result = None
        if method == "getblockchaininfo":
            result = {"chain": self.chain, "blocks": 101}
        elif method == "getrawmempool":
            result = [*self.mempool, GONE]
        elif method == "getblockhash":
            result = BLOCK if params[0] == 101 else "00" * 32
        elif method == "getblock" and params[1] == 2:
            result = self.block
        elif method == "getblock":
            result = {**self.block, "tx": [tx["txid"] for tx in self.block["tx"]]}
        elif method == "getrawtransaction" and len(params) == 3:
            assert params[2] == BLOCK
            result = next(tx for tx in self.block["tx"] if tx["txid"] == params[0])
        elif method == "getrawtransaction":
            if params[0] not in self.mempool:
                return {"id": call["id"], "result": None, "error": {"code": -5, "message": "No"}}
            result = self.mempool[params[0]]
        return {"id": call["id"], "result": result, "error": None}


@pytest.fixture
def server():
    with LoopbackServer() as server:
        yield server


def adapter(server, **options):
    url = server.url.replace("http://", "http://kd:secret@")
    return CoreRpcAdapter("bitcoin", url, chain_mode="regtest", sleep=lambda s: None, **options)


def test_blocks_and_mempool_are_read_with_the_core_22_address_field(server):
    FakeCore(server)
    core = adapter(server)
    scan = core.scan_blocks(watched_among([WatchTarget(OURS)]), blocks=[[100, "00" * 32]])

    found = {
        (t.txid, t.index): (t.amount_base, t.confirmations, t.block_hash) for t in scan.transfers
    }
    assert found == {(PAID, 0): (150_000, 1, BLOCK), (WAITING, 1): (20_000_000, 0, None)}
    assert scan.blocks[-1] == [101, BLOCK]
    assert scan.examined == frozenset({WAITING})  # GONE left the mempool: not an error
    # The credentials go in the Authorization header, never in what is shown or logged.
    assert "secret" not in core.base_url
    sent = server.requests[0].headers["authorization"]
    assert base64.b64decode(sent.split()[1]) == b"kd:secret"


def test_a_block_too_large_to_read_at_once_is_read_transaction_by_transaction(server, monkeypatch):
    fake = FakeCore(server)
    many = [
        {"txid": f"{i:064x}", "vout": [output(STRANGER, "1", 0), output(OURS, "0.001", 1)]}
        for i in range(1, 40)
    ]
    fake.block["tx"] += many
    monkeypatch.setattr(http, "MAX_BODY_BYTES", 6_000)  # the block (~8 kB) is too large
    scan = adapter(server).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=[[100, "00" * 32]]
    )
    assert len([t for t in scan.transfers if t.confirmations == 1]) == 40
    calls = [call["method"] for r in server.requests for call in r.json()]
    assert calls.count("getblock") == 2  # verbosity 2 refused, then the txids
    assert calls.count("getrawtransaction") >= 40


def test_the_cookie_file_gives_the_credentials_and_an_unreadable_one_fails(server, tmp_path):
    FakeCore(server)
    cookie = tmp_path / ".cookie"
    cookie.write_text("__cookie__:abc123\n")
    core = CoreRpcAdapter("bitcoin", server.url, chain_mode="regtest", cookie_file=str(cookie))
    core.scan([WatchTarget(OURS)])
    sent = server.requests[-1].headers["authorization"]
    assert base64.b64decode(sent.split()[1]) == b"__cookie__:abc123"

    missing = CoreRpcAdapter(
        "bitcoin", server.url, chain_mode="regtest", cookie_file=str(tmp_path / "none")
    )
    with pytest.raises(ChainError, match="cookie file"):
        missing.scan([WatchTarget(OURS)])


def test_a_node_on_another_chain_is_refused(server):
    FakeCore(server, chain="main")
    with pytest.raises(ChainError, match="on chain 'main', not regtest"):
        adapter(server).scan_blocks(watched_among([WatchTarget(OURS)]), blocks=[])


def test_after_a_failed_block_scan_the_address_poll_fails_too(server):
    FakeCore(server, value="0.000000001")  # a tenth of a satoshi: no real value
    core = adapter(server)
    with pytest.raises(ChainError, match="whole number of base units"):
        core.scan_blocks(watched_among([WatchTarget(OURS)]), blocks=[[100, "00" * 32]])
    # A mempool-only poll would report the confirmed payments as gone.
    with pytest.raises(ChainError, match="cannot be polled by address"):
        core.scan([WatchTarget(OURS)])


def test_refused_credentials_fail_the_scan(server):
    server.route("POST", "/", status=401, body="")
    with pytest.raises(ChainError, match="401"):
        adapter(server).scan([WatchTarget(OURS)])
