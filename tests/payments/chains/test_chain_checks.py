"""The node's word is checked (issue 22, items 2, 4 and 7), on loopback: the Ethereum chain id
of regtest's dev chain, Esplora's genesis block, and Bitcoin/Litecoin transfers whose
block a reorg took away while their address was not polled."""

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured

from kernodeck.core import clock
from kernodeck.payments import registry, services
from kernodeck.payments.chains import esplora
from kernodeck.payments.chains.adapters import adapter_for
from kernodeck.payments.chains.base import ChainError, WatchTarget
from kernodeck.payments.chains.esplora import EsploraAdapter
from kernodeck.payments.checks import regtest_contracts_check
from kernodeck.payments.models import ChainState, IntentStatus, PaymentIntent, Transfer
from kernodeck.payments.wallets import demo_wallet
from kernodeck.payments.watching import watch_network
from tests.factories import make_offer, make_order
from tests.loopback import LoopbackServer
from tests.payments.chains.test_ethereum import OURS, FakeNode
from tests.payments.esplora_chain import EsploraChain
from tests.payments.test_watching import btc_intent


@pytest.fixture
def dev_chain(loopback, settings):
    node = FakeNode(tip=110, finalized=100)
    node.chain_id = 1337
    loopback.route("POST", "/rpc", handler=node.handler)
    settings.KERNODECK_ETHEREUM_RPC_URL = f"{loopback.url}/rpc"
    settings.KERNODECK_CHAIN_MODE = "regtest"
    settings.KERNODECK_ETHEREUM_CHAIN_ID = 0
    return node


@pytest.mark.django_db
def test_regtest_accepts_the_dev_chain_id_and_refuses_mainnet(dev_chain, settings):
    assert registry.ethereum_chain_id() == 1337
    adapter_for("ethereum").scan([WatchTarget(OURS)], cursor=100)

    dev_chain.chain_id = 1
    with pytest.raises(ChainError, match="chain id 1, not the configured 1337"):
        adapter_for("ethereum").scan([WatchTarget(OURS)], cursor=100)


@pytest.mark.django_db
def test_regtest_takes_the_configured_dev_chain_id(dev_chain, settings):
    settings.KERNODECK_ETHEREUM_CHAIN_ID = 31337
    dev_chain.chain_id = 31337

    adapter_for("ethereum").scan([WatchTarget(OURS)], cursor=100)

    dev_chain.chain_id = 1337
    with pytest.raises(ChainError, match="not the configured 31337"):
        adapter_for("ethereum").scan([WatchTarget(OURS)], cursor=100)


def test_mainnet_and_testnet_chain_ids_are_fixed(settings):
    settings.KERNODECK_ETHEREUM_CHAIN_ID = 31337  # only read in regtest
    settings.KERNODECK_CHAIN_MODE = "mainnet"
    assert registry.ethereum_chain_id() == 1
    settings.KERNODECK_CHAIN_MODE = "testnet"
    assert registry.ethereum_chain_id() == 11155111


# -- Esplora: the genesis block of the configured chain (item 4) ---------------------------


@pytest.fixture
def esplora_server(loopback, settings):
    """A loopback Esplora server for Bitcoin with an empty mempool at height 800 000, the
    genesis check on (test settings turn it off) and nothing remembered of earlier checks."""
    esplora._GENESIS_CHECKED.clear()
    settings.KERNODECK_ESPLORA_GENESIS_CHECK = True
    settings.KERNODECK_DEMO = False
    settings.KERNODECK_CHAIN_MODE = "mainnet"
    settings.KERNODECK_BITCOIN_ESPLORA_URL = f"{loopback.url}/api"
    settings.KERNODECK_BITCOIN_RPC_URL = ""
    loopback.route("GET", "/api/blocks/tip/height", body="800000", content_type="text/plain")
    loopback.route("GET", "/api/block-height/800000", body="ab" * 32, content_type="text/plain")
    loopback.route("GET", "/api/mempool/txids", json_body=[])
    yield loopback
    esplora._GENESIS_CHECKED.clear()


def genesis(loopback, block_hash: str) -> None:
    loopback.route("GET", "/api/block-height/0", body=block_hash, content_type="text/plain")


def genesis_asked(loopback) -> int:
    return sum(request.path == "/api/block-height/0" for request in loopback.requests)


@pytest.mark.django_db
def test_an_esplora_server_on_another_chain_is_that_networks_error(esplora_server):
    genesis(esplora_server, esplora._BITCOIN_TESTNET3)

    report = watch_network("bitcoin")

    assert "error" in report and "another chain" in report["error"]
    state = ChainState.objects.get(network="bitcoin")
    assert "not the mainnet one" in state.last_error and state.last_success_at is None
    paths = {request.path for request in esplora_server.requests}
    assert "/api/mempool/txids" not in paths and "/api/blocks/tip/height" not in paths


@pytest.mark.django_db
def test_the_right_genesis_is_asked_once_per_process(esplora_server):
    genesis(esplora_server, esplora._BITCOIN_MAIN)

    first = watch_network("bitcoin")
    second = watch_network("bitcoin")

    assert "error" not in first and "error" not in second
    assert genesis_asked(esplora_server) == 1


@pytest.mark.parametrize(
    ("network", "mode", "block_hash"),
    [
        ("bitcoin", "regtest", esplora._BITCOIN_REGTEST),
        ("bitcoin", "testnet", esplora._BITCOIN_TESTNET4),
        ("litecoin", "mainnet", esplora._LITECOIN_MAIN),
        ("litecoin", "testnet", esplora._LITECOIN_TESTNET4),
        ("litecoin", "regtest", esplora._LITECOIN_REGTEST),
    ],
)
def test_each_chain_mode_takes_its_own_genesis_only(loopback, network, mode, block_hash):
    esplora._GENESIS_CHECKED.clear()
    loopback.route("GET", "/blocks/tip/height", body="5", content_type="text/plain")
    genesis_at = "/block-height/0"
    loopback.route("GET", genesis_at, body=block_hash, content_type="text/plain")
    EsploraAdapter(network, loopback.url, chain_mode=mode).scan([])
    wrong = "mainnet" if mode != "mainnet" else "regtest"
    with pytest.raises(ChainError, match="another chain"):
        EsploraAdapter(network, loopback.url, chain_mode=wrong).scan([])
    esplora._GENESIS_CHECKED.clear()


# -- Bitcoin by address polling: transfers whose block a reorg took away (item 2) ----------


@pytest.fixture
def polled_chain(settings, configured, fresh_rates):
    """Bitcoin watched by address polling (no block scan) on a loopback Esplora chain;
    intents kept only for late payments are polled once an hour."""
    settings.KERNODECK_WATCH_BLOCK_SCAN = False
    settings.KERNODECK_WATCH_LATE_INTERVAL = 3600
    settings.KERNODECK_BITCOIN_RPC_URL = ""
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server, EsploraChain(server, at=clock.now() - timedelta(minutes=10))


def a_pass(server) -> list[str]:
    before = len(server.requests)
    report = watch_network("bitcoin")
    assert "error" not in report, report
    return [request.path for request in server.requests[before:]]


def settled_then_expired(server, chain):
    """An intent paid exactly, settled, then past its expiry (kept for late payments only,
    so its address is not polled on the next passes); its transfer."""
    start = clock.now()
    intent = btc_intent()
    chain.pay(intent.address, intent.amount_units)
    chain.mine(at=start + timedelta(minutes=1))
    clock.freeze(start + timedelta(minutes=2))
    a_pass(server)
    chain.mine(at=start + timedelta(minutes=3), count=5)
    clock.freeze(start + timedelta(minutes=4))
    a_pass(server)
    assert PaymentIntent.objects.get(pk=intent.pk).status == IntentStatus.ALLOCATED
    clock.freeze(start + timedelta(minutes=40))
    [transfer] = Transfer.objects.filter(intent=intent)
    assert transfer.block_height == chain.base + 1
    assert transfer.block_hash == chain.blocks[1]["hash"]
    return intent, transfer


def test_an_unpolled_transfers_block_is_checked_by_hash_each_pass(polled_chain):
    server, chain = polled_chain
    _intent, transfer = settled_then_expired(server, chain)

    paths = a_pass(server)

    assert not [path for path in paths if path.startswith("/address/")]
    assert f"/block-height/{transfer.block_height}" in paths
    assert Transfer.objects.get(pk=transfer.pk).disappeared_at is None


def test_a_transfer_whose_block_is_gone_and_does_not_come_back_disappears(polled_chain):
    server, chain = polled_chain
    intent, transfer = settled_then_expired(server, chain)
    (txid,) = chain.reorg(6)
    chain.drop(txid)  # double-spent in the new branch
    chain.mine(at=clock.now(), count=7)

    paths = a_pass(server)

    assert f"/address/{intent.address}/txs" in paths
    assert Transfer.objects.get(pk=transfer.pk).disappeared_at is not None


def test_a_transfer_mined_again_in_another_block_follows_it(polled_chain):
    server, chain = polled_chain
    intent, transfer = settled_then_expired(server, chain)
    chain.reorg(6)
    chain.mine(at=clock.now(), count=7)  # the transaction again, in the new block 800 001

    paths = a_pass(server)

    assert f"/address/{intent.address}/txs" in paths
    moved = Transfer.objects.get(pk=transfer.pk)
    assert moved.disappeared_at is None
    assert (moved.block_height, moved.block_hash) == (chain.base + 1, chain.blocks[1]["hash"])
    assert moved.block_hash != transfer.block_hash
    # Back on the chain's block: the next pass only checks the hash again.
    assert not [path for path in a_pass(server) if path.startswith("/address/")]


@pytest.mark.django_db
def test_regtest_payment_uris_carry_the_dev_chain_id(configured, fresh_rates, settings):
    settings.KERNODECK_CHAIN_MODE = "regtest"
    settings.KERNODECK_ETHEREUM_CHAIN_ID = 31337
    settings.KERNODECK_XPUBS = {"ethereum": demo_wallet("ethereum", testnet=True).public_key}
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))

    intent = services.payment_intent_create_for_order(
        order=order, method_code="eth-ethereum", actor=order.owner
    )

    assert intent.uri.startswith(f"ethereum:{intent.address}@31337")


MAINNET_USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
MAINNET_USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"


@pytest.mark.django_db
def test_regtest_watches_and_asks_for_the_mainnet_token_contracts(
    configured, fresh_rates, settings
):
    settings.KERNODECK_CHAIN_MODE = "regtest"
    settings.KERNODECK_ETHEREUM_RPC_URL = "http://127.0.0.1:9/rpc"
    settings.KERNODECK_XPUBS = {"ethereum": demo_wallet("ethereum", testnet=True).public_key}
    assert registry.token_contract("usdc-ethereum") == MAINNET_USDC  # not Sepolia's
    assert not registry.missing_contract("usdt-ethereum")  # USDT has no Sepolia contract
    adapter = adapter_for("ethereum")
    assert adapter.assets == {MAINNET_USDT.lower(): "USDT", MAINNET_USDC.lower(): "USDC"}
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))

    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-ethereum", actor=order.owner
    )

    assert intent.uri.startswith(f"ethereum:{MAINNET_USDT}@1337/transfer?address=")


@pytest.mark.django_db
def test_regtest_token_contracts_can_be_named_in_settings(settings):
    settings.KERNODECK_CHAIN_MODE = "regtest"
    settings.KERNODECK_ETHEREUM_RPC_URL = "http://127.0.0.1:9/rpc"
    settings.KERNODECK_ETHEREUM_USDT_CONTRACT = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
    assert regtest_contracts_check(None) == []
    assert adapter_for("ethereum").assets == {
        "0x5fbdb2315678afecb367f032d93f642f64180aa3": "USDT",
        MAINNET_USDC.lower(): "USDC",
    }


def test_a_bad_or_misplaced_regtest_contract_setting_is_a_check_error(settings):
    settings.KERNODECK_CHAIN_MODE = "regtest"
    settings.KERNODECK_ETHEREUM_USDC_CONTRACT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
    [error] = regtest_contracts_check(None)
    assert error.id == "payments.E001"
    assert "KERNODECK_ETHEREUM_USDC_CONTRACT must be a 0x address" in error.msg
    with pytest.raises(ImproperlyConfigured):
        registry.token_contract("usdc-ethereum")

    settings.KERNODECK_CHAIN_MODE = "mainnet"
    settings.KERNODECK_ETHEREUM_USDC_CONTRACT = MAINNET_USDC
    [error] = regtest_contracts_check(None)
    assert "is for KERNODECK_CHAIN_MODE=regtest" in error.msg
    assert registry.token_contract("usdc-ethereum") == MAINNET_USDC  # the fixed one
