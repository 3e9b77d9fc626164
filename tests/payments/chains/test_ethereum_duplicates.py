"""Ethereum: the same transfer answered twice in one answer is one transfer (issue 22, item 9).

A node behind a load balancer, or a log range split in two that overlaps, can answer the
same Transfer log twice; a block can be read twice when the rescan window overlaps the
cursor. The adapter identifies a token transfer by (transaction hash, log index) and an
ether transfer by its transaction hash, as the chain does."""

from kernodeck.payments.chains.base import WatchTarget
from tests.payments.chains.test_ethereum import OURS, USDT, FakeNode, adapter, txid


def test_the_same_log_answered_twice_is_one_transfer(loopback, sleeps):
    node = FakeNode(tip=110, finalized=100)
    loopback.route("POST", "/rpc", handler=node.handler)
    log = node.add_log(105, txid(1), 3, contract=USDT, amount=5_000_000)
    node.logs.append(dict(log))  # the node lists it a second time in the same answer

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100)

    assert [(t.txid, t.index, t.asset, t.amount_base) for t in result.transfers] == [
        (txid(1), 3, "USDT", 5_000_000)
    ]


def test_the_same_ether_transaction_listed_twice_in_a_block_is_one_transfer(loopback, sleeps):
    node = FakeNode(tip=110, finalized=100)
    loopback.route("POST", "/rpc", handler=node.handler)
    node.add_payment(105, txid(2), to=OURS, wei=10**18)
    node.transactions[105].append(dict(node.transactions[105][0]))

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100)

    assert [(t.txid, t.index, t.asset, t.amount_base) for t in result.transfers] == [
        (txid(2), 0, "ETH", 10**18)
    ]
