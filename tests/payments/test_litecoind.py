"""The watcher against a real Litecoin Core (Debian's litecoind 0.21) in regtest, through the
Core JSON-RPC adapter (KERNODECK_LITECOIN_RPC_URL, KERNODECK_CHAIN_MODE=regtest).

One node for the whole module (started on a free loopback port with its data in a
temporary folder, stopped after), a wallet in it that pays; each test watches addresses of
an account key of its own, so the payments of one test are nobody's in another.
"""

import os
import shutil
import socket
import subprocess
import time
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from bip_utils import Bip84, Bip84Coins
from django.core.management import call_command

from kernodeck.core import clock
from kernodeck.payments import review_selectors, services, watching
from kernodeck.payments.chains.core_rpc import CoreRpcAdapter, output_addresses
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    PaymentMethod,
    Transfer,
    TransferKind,
)
from kernodeck.payments.wallets import derive_address
from kernodeck.provisioning.models import Alert, AlertKind
from tests.factories import make_offer, make_order

LITECOIND = shutil.which("litecoind")
CONFIRMATIONS = 3  # the method's, lowered from 6 to keep the module short

pytestmark = pytest.mark.outside  # Litecoin Core itself: CI runs it once (tests/conftest.py)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Node:
    """litecoind -regtest on loopback, and a few RPC calls to drive it."""

    def __init__(self, datadir):
        self.datadir = datadir
        self.rpc_port = free_port()
        self.url = f"http://kd:secret@127.0.0.1:{self.rpc_port}/"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [
                LITECOIND,
                "-regtest",
                f"-datadir={self.datadir}",
                f"-rpcport={self.rpc_port}",
                "-rpcbind=127.0.0.1",
                "-rpcallowip=127.0.0.1",
                "-rpcuser=kd",
                "-rpcpassword=secret",
                "-listen=0",
                "-dnsseed=0",
                "-fallbackfee=0.0001",
                "-mempoolreplacement=1",
                "-printtoconsole=0",
                "-keypool=10",  # a wallet with 1000 keys takes seconds to create
                "-rpcservertimeout=2",  # stopping waits for idle connections to close
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("getblockchaininfo")
                return
            except (httpx.HTTPError, RuntimeError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("litecoind did not start") from None
                time.sleep(0.2)

    def stop(self):
        try:
            self.call("stop")
        except (httpx.HTTPError, RuntimeError):
            self.process.terminate()
        self.process.wait(timeout=60)

    def call(self, method, *params, wallet=None):
        path = f"wallet/{wallet}" if wallet else ""
        answer = httpx.post(
            f"http://127.0.0.1:{self.rpc_port}/{path}",
            json={"id": 1, "method": method, "params": list(params)},
            auth=("kd", "secret"),
            timeout=30,
        )
        body = answer.json()
        if body.get("error"):
            raise RuntimeError(f"{method}: {body['error']}")
        return body["result"]

    def wallet(self, method, *params):
        return self.call(method, *params, wallet="payer")

    def mine(self, count=1) -> list[str]:
        # A fresh coinbase address each time: a block mined again at a height whose block
        # was invalidated must differ from it.
        return self.call("generatetoaddress", count, self.wallet("getnewaddress"))

    def pay(self, address: str, units: int) -> str:
        amount = f"{Decimal(units).scaleb(-8):.8f}"
        # sendtoaddress address amount comment comment_to subtractfee replaceable
        return self.wallet("sendtoaddress", address, amount, "", "", False, True)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    if LITECOIND is None:
        pytest.skip(
            "litecoind is not installed (Debian: apt-get install litecoind); "
            "the real-node tests need it"
        )
    node = Node(tmp_path_factory.mktemp("litecoind"))
    node.start()
    try:
        node.call("createwallet", "payer")
        node.mine(101)  # the first coinbase matures: the wallet can pay
        yield node
    finally:
        if node.process.poll() is None:
            node.stop()


@pytest.fixture
def regtest(settings, db, node, fresh_rates):
    """Production-like settings on regtest: an account key of this test's own."""
    services.payment_methods_ensure()
    PaymentMethod.objects.filter(code="ltc-litecoin").update(confirmations=CONFIRMATIONS)
    account = Bip84.FromSeed(os.urandom(64), Bip84Coins.LITECOIN_TESTNET).Purpose().Coin()
    settings.KERNODECK_DEMO = False
    settings.KERNODECK_CHAIN_MODE = "regtest"
    settings.KERNODECK_XPUBS = {"litecoin": account.Account(0).PublicKey().ToExtended()}
    settings.KERNODECK_LITECOIN_RPC_URL = node.url
    return node


def ltc_intent():
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code="ltc-litecoin", actor=order.owner
    )


def watch() -> dict:
    report = watching.watch_network("litecoin")
    assert "error" not in report, report
    assert report["mode"] == "blocks"
    return report


def status(intent) -> str:
    return PaymentIntent.objects.get(pk=intent.pk).status


def transfer(txid) -> Transfer:
    return Transfer.objects.get(network="litecoin", txid=txid)


def test_regtest_addresses_are_the_testnet_keys_in_the_regtest_spelling(regtest, settings):
    intent = ltc_intent()
    assert intent.address.startswith("rltc1")
    key = Bip84.FromSeed(b"\x01" * 64, Bip84Coins.BITCOIN_TESTNET)
    tpub = key.Purpose().Coin().Account(0).PublicKey().ToExtended()
    testnet = derive_address("bitcoin", tpub, 0, testnet=True)
    regtest_address = derive_address("bitcoin", tpub, 0, testnet=True, regtest=True)
    assert testnet.startswith("tb1q") and regtest_address.startswith("bcrt1q")
    assert testnet[3:-6] == regtest_address[5:-6]  # the same witness program
    # The node agrees that the address is one of its chain.
    assert regtest.call("validateaddress", intent.address)["isvalid"] is True
    out = StringIO()  # and an operator can check it against their wallet
    key = settings.KERNODECK_XPUBS["litecoin"]
    index = f"--index={intent.derivation_index}"
    call_command(
        "derive_address", "--network=litecoin", f"--xpub={key}", index, "--regtest", stdout=out
    )
    assert out.getvalue() == f"{intent.address}\n"


def test_payments_exact_under_and_over_from_the_mempool_to_settlement(regtest):
    exact, under, over = ltc_intent(), ltc_intent(), ltc_intent()
    watch()  # the first pass: the cursor
    txids = {
        "exact": regtest.pay(exact.address, exact.amount_units),
        "under": regtest.pay(under.address, under.amount_units // 2),
        "over": regtest.pay(over.address, exact.amount_units * 3 // 2),
    }

    watch()
    assert {transfer(txid).confirmations for txid in txids.values()} == {0}
    assert transfer(txids["under"]).amount_base == under.amount_units // 2
    assert status(exact) == IntentStatus.DETECTED

    regtest.mine(CONFIRMATIONS - 1)
    watch()
    assert {transfer(txid).confirmations for txid in txids.values()} == {CONFIRMATIONS - 1}
    assert status(exact) == IntentStatus.DETECTED

    regtest.mine()
    watch()
    assert {transfer(txid).confirmations for txid in txids.values()} == {CONFIRMATIONS}
    assert status(exact) == IntentStatus.ALLOCATED
    assert status(over) == IntentStatus.OVERPAID

    clock.freeze(PaymentIntent.objects.get(pk=under.pk).expires_at + timedelta(minutes=1))
    watch()
    assert status(under) == IntentStatus.UNDERPAID
    assert status(exact) == IntentStatus.ALLOCATED


def test_an_rbf_replacement_counts_instead_of_the_replaced_transaction(regtest):
    intent = ltc_intent()
    watch()
    first = regtest.pay(intent.address, intent.amount_units)
    watch()
    assert status(intent) == IntentStatus.DETECTED

    second = regtest.wallet("bumpfee", first)["txid"]
    watch()
    assert transfer(first).disappeared_at is not None
    replacement = transfer(second)
    assert (replacement.confirmations, replacement.disappeared_at) == (0, None)
    assert status(intent) == IntentStatus.DETECTED

    regtest.mine(CONFIRMATIONS)
    watch()
    assert transfer(second).confirmations == CONFIRMATIONS
    assert status(intent) == IntentStatus.ALLOCATED


def test_a_reorg_before_confirmation_puts_the_payment_back_in_the_mempool(regtest):
    intent = ltc_intent()
    watch()
    txid = regtest.pay(intent.address, intent.amount_units)
    (block,) = regtest.mine()
    watch()
    height = transfer(txid).block_height
    assert transfer(txid).confirmations == 1

    regtest.call("invalidateblock", block)  # the block is gone, its transaction waits again
    assert txid in regtest.call("getrawmempool")
    watch()
    back = transfer(txid)
    assert (back.block_height, back.confirmations, back.disappeared_at) == (None, 0, None)
    assert status(intent) == IntentStatus.DETECTED

    regtest.mine(CONFIRMATIONS)  # another branch, the payment in its first block
    watch()
    again = transfer(txid)
    assert (again.block_height, again.confirmations) == (height, CONFIRMATIONS)
    assert ChainState.objects.get(network="litecoin").scanned_blocks[-1][1] == (
        regtest.call("getbestblockhash")
    )
    assert status(intent) == IntentStatus.ALLOCATED


def test_a_reorg_deeper_than_the_blocks_kept_is_rescanned_from_the_fork(regtest):
    intent = ltc_intent()
    watch()
    txid = regtest.pay(intent.address, intent.amount_units)
    (block,) = regtest.mine()
    watch()
    regtest.mine(14)  # the payment's block is no longer among the 12 blocks kept
    watch()
    assert status(intent) == IntentStatus.ALLOCATED
    paid = transfer(txid)
    assert paid.block_hash == block

    regtest.call("invalidateblock", block)  # 15 blocks gone, the payment waits again...
    second = regtest.wallet("bumpfee", txid)["txid"]  # ...and is replaced in the new branch
    regtest.mine(16)
    watch()

    assert transfer(txid).disappeared_at is not None
    replacement = transfer(second)
    assert (replacement.block_height, replacement.disappeared_at) == (paid.block_height, None)
    assert replacement.block_hash == regtest.call("getblockhash", paid.block_height)


def double_spend(node, txid: str) -> str:
    """A transaction spending the inputs of `txid` (back in the mempool) to the payer's own
    address with a higher fee: it replaces `txid`, whose payment leaves the chain."""
    raw = node.call("getrawtransaction", txid, True)
    inputs = [{"txid": v["txid"], "vout": v["vout"]} for v in raw["vin"]]
    total = Decimal(0)
    for v in raw["vin"]:
        previous = node.call(
            "decoderawtransaction", node.wallet("gettransaction", v["txid"])["hex"]
        )
        total += Decimal(str(previous["vout"][v["vout"]]["value"]))
    outputs = [{node.wallet("getnewaddress"): f"{total - Decimal('0.01'):.8f}"}]
    unsigned = node.call("createrawtransaction", inputs, outputs, 0, True)
    signed = node.wallet("signrawtransactionwithwallet", unsigned)["hex"]
    return node.call("sendrawtransaction", signed)


def test_a_payment_double_spent_after_settlement_is_a_reversed_case(regtest):
    intent = ltc_intent()
    watch()
    txid = regtest.pay(intent.address, intent.amount_units)
    (block, *_rest) = regtest.mine(CONFIRMATIONS)
    watch()
    assert status(intent) == IntentStatus.ALLOCATED

    regtest.call("invalidateblock", block)  # a reorg: the payment waits again...
    conflict = double_spend(regtest, txid)  # ...and the new branch spends its coins elsewhere
    assert txid not in regtest.call("getrawmempool")
    regtest.mine(CONFIRMATIONS + 1)
    assert regtest.wallet("gettransaction", conflict)["confirmations"] > 0
    watch()

    assert transfer(txid).disappeared_at is not None
    reversed_ = PaymentIntent.objects.get(pk=intent.pk)
    assert (reversed_.status, reversed_.exception) == (IntentStatus.ALLOCATED, "reversed")
    assert reversed_.reversed_base == intent.amount_base
    assert review_selectors.review_intents().first().pk == intent.pk
    assert Alert.objects.filter(kind=AlertKind.PAYMENT_REVERSED, order=intent.order).exists()


def test_a_late_payment_is_recorded_as_late(regtest):
    intent = ltc_intent()
    watch()
    late = PaymentIntent.objects.get(pk=intent.pk).expires_at + timedelta(minutes=1)
    clock.freeze(late)
    watch()
    assert status(intent) == IntentStatus.EXPIRED

    regtest.call("setmocktime", int(late.timestamp()))  # the node's clock is late too
    try:
        txid = regtest.pay(intent.address, intent.amount_units)
        regtest.mine(CONFIRMATIONS)
    finally:
        regtest.call("setmocktime", 0)
    watch()
    assert transfer(txid).kind == TransferKind.LATE
    assert transfer(txid).confirmations == CONFIRMATIONS
    assert status(intent) == IntentStatus.LATE


def test_a_node_on_another_chain_is_refused(regtest, settings):
    intent = ltc_intent()
    regtest.pay(intent.address, intent.amount_units)
    settings.KERNODECK_CHAIN_MODE = "testnet"  # a testnet install pointed at a regtest node
    settings.KERNODECK_XPUBS = {}  # (the key is regtest's; the node is refused first)

    report = watching.watch_network("litecoin")

    assert "regtest" in report["error"] and "not test" in report["error"]
    assert "regtest" in ChainState.objects.get(network="litecoin").last_error
    assert not Transfer.objects.exists()


def test_a_node_stopped_mid_pass_costs_nothing_and_the_next_pass_catches_up(regtest, monkeypatch):
    intent = ltc_intent()
    watch()
    cursor = ChainState.objects.get(network="litecoin").scanned_blocks
    txid = regtest.pay(intent.address, intent.amount_units)
    regtest.mine()
    reading = CoreRpcAdapter._block_txs

    def stopped_while_reading(adapter, *args):
        regtest.stop()  # after the tip and the block hashes, before the block itself
        return reading(adapter, *args)

    monkeypatch.setattr(CoreRpcAdapter, "_block_txs", stopped_while_reading)
    report = watching.watch_network("litecoin")
    assert "error" in report
    state = ChainState.objects.get(network="litecoin")
    assert state.scanned_blocks == cursor  # the cursor did not move past the unread block
    assert state.last_error
    assert not Transfer.objects.exists()

    monkeypatch.setattr(CoreRpcAdapter, "_block_txs", reading)
    regtest.start()
    regtest.call("loadwallet", "payer")
    watch()
    assert transfer(txid).confirmations == 1
    assert status(intent) == IntentStatus.DETECTED


def test_an_output_address_is_read_in_the_shapes_of_every_core_version():
    before_22 = {"scriptPubKey": {"addresses": ["ltc1qours"], "type": "witness_v0_keyhash"}}
    since_22 = {"scriptPubKey": {"address": "bc1qours", "type": "witness_v0_keyhash"}}
    multisig = {"scriptPubKey": {"addresses": ["1a", "1b"], "type": "multisig"}}
    op_return = {"scriptPubKey": {"type": "nulldata"}}
    assert output_addresses(before_22) == ["ltc1qours"]
    assert output_addresses(since_22) == ["bc1qours"]
    assert output_addresses(multisig) == output_addresses(op_return) == []
