"""Tron's block scan (`TronAdapter.scan_block_range`) over a loopback node: the payments a
block shows, confirmed as the polling path confirms them, read 100 blocks a request from a
cursor, the fallback chosen by its cost, and nonsense refused as the network's error."""

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernodeck.payments.chains import http
from kernodeck.payments.chains.base import ChainError, WatchTarget, checked_scan
from kernodeck.payments.chains.tron import FALLBACK_OVERLAP, TronAdapter, TronBlockScan
from tests.loopback import LoopbackServer
from tests.payments.tron_chain import BATCHER, LOOKALIKE, USDT, TronChain, _info, stranger

OURS, OTHER = stranger(1), stranger(2)


def tron_info_of(chain, txid: str, number: int) -> dict:
    tx = next(tx for tx in chain.block(number)["transactions"] if tx["txID"] == txid)
    return _info(
        tx, number, chain.block(number)["block_header"]["raw_data"]["timestamp"], "SUCCESS"
    )


def adapter(loopback, sleeps, **kwargs) -> TronAdapter:
    return TronAdapter(loopback.url, sleep=sleeps.append, **kwargs)


def among(*addresses):
    """A `watched` answer for a fixed set of addresses, recording what it was asked."""
    asked = []

    def watched(recipients):
        asked.append(set(recipients))
        return [address for address in addresses if address in recipients]

    watched.asked = asked
    return watched


def block_calls(loopback) -> list[tuple[int, int]]:
    return [
        (r.json()["startNum"], r.json()["endNum"])
        for r in loopback.requests
        if r.path == "/wallet/getblockbylimitnext"
    ]


@pytest.fixture
def chain(loopback):
    return TronChain(loopback)


def test_trx_and_usdt_to_watched_addresses_are_found_and_the_rest_ignored(loopback, sleeps, chain):
    cursor = chain.tip + 1
    trx = chain.pay_trx(OURS, 2_000_000)
    usdt = chain.pay_token(OURS, 7_000_000)
    chain.pay_trx(stranger(99), 5)  # someone else's
    chain.mine()
    chain.mine(3)

    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)

    assert isinstance(scan, TronBlockScan) and not scan.fallback
    found = {(t.txid, t.asset, t.amount_base, t.index, t.failed) for t in scan.transfers}
    assert found == {(trx, "TRX", 2_000_000, 0, False), (usdt, "USDT", 7_000_000, 0, False)}
    (mined,) = {t.block_height for t in scan.transfers}
    assert mined == cursor
    assert {t.confirmations for t in scan.transfers} == {chain.tip - mined + 1}
    assert not any(t.final for t in scan.transfers)  # above the solidified head
    assert (scan.scanned_from, scan.scanned_to, scan.read) == (cursor, chain.tip, 4)
    # The blocks not solidified are read again next time; no solidified block was read.
    assert scan.cursor == cursor and scan.blocks is None
    infos = [r for r in loopback.requests if r.path == "/wallet/gettransactioninfobyid"]
    assert [r.json()["value"] for r in infos] == [usdt]  # the token call only, once
    checked_scan(adapter(loopback, sleeps), [WatchTarget(OURS)], scan)


def test_solidified_blocks_are_final_and_the_cursor_moves_past_them(loopback, sleeps, chain):
    cursor = chain.tip + 1
    trx = chain.pay_trx(OURS, 1_000)
    chain.mine(30)
    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)

    [transfer] = scan.transfers
    assert (transfer.txid, transfer.final) == (trx, True)
    assert scan.cursor == chain.solidified + 1
    assert scan.blocks == [[chain.solidified, chain.block(chain.solidified)["blockID"]]]


def test_a_failed_transfer_is_reported_failed_and_a_failed_token_call_is_not_looked_up(
    loopback, sleeps, chain
):
    cursor = chain.tip + 1
    trx = chain.pay_trx(OURS, 9_000, result="OUT_OF_ENERGY")
    token = chain.pay_token(OURS, 9_000, result="REVERT")
    chain.mine()

    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)

    assert {(t.txid, t.asset, t.failed) for t in scan.transfers} == {
        (trx, "TRX", True),
        (token, "USDT", True),
    }
    assert not any(r.path == "/wallet/gettransactioninfobyid" for r in loopback.requests)


def test_another_contracts_token_is_reported_as_an_unknown_token_as_polling_does(
    loopback, sleeps, chain
):
    cursor = chain.tip + 1
    fake = chain.pay_token(OURS, 50_000_000, contract=LOOKALIKE)
    pulled = chain.pay_token(OTHER, 3_000_000, call="23b872dd")  # transferFrom
    chain.mine()

    scan = adapter(loopback, sleeps).scan_block_range(among(OURS, OTHER), cursor=cursor)

    assert {(t.txid, t.asset, t.token_contract, t.address) for t in scan.transfers} == {
        (fake, "TOKEN", LOOKALIKE, OURS),
        (pulled, "USDT", USDT, OTHER),
    }


def test_a_token_call_the_node_has_no_info_for_yet_is_undecided_and_read_again(
    loopback, sleeps, chain
):
    cursor = chain.tip + 1
    chain.mine(5)
    token = chain.pay_token(OURS, 1_000_000, info=False)
    chain.mine(40)  # its block is solidified already
    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)
    assert scan.transfers == [] and scan.undecided == {token}
    assert scan.cursor == cursor + 5  # its block, not past it

    chain.infos[token] = tron_info_of(chain, token, cursor + 5)
    again = adapter(loopback, sleeps).scan_block_range(
        among(OURS), cursor=scan.cursor, blocks=scan.blocks
    )
    assert [(t.txid, t.final) for t in again.transfers] == [(token, True)]
    assert again.cursor == chain.solidified + 1


def test_a_250_block_gap_is_read_in_three_requests_of_at_most_100(loopback, sleeps, chain):
    cursor = chain.tip + 1
    chain.mine(249)
    late = chain.pay_trx(OURS, 4_000)
    chain.mine()  # block cursor + 249

    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)

    assert block_calls(loopback) == [
        (cursor, cursor + 100),
        (cursor + 100, cursor + 200),
        (cursor + 200, cursor + 250),
    ]
    assert [t.txid for t in scan.transfers] == [late]
    assert scan.read == 250 and scan.cursor == chain.solidified + 1


def test_far_behind_polling_is_chosen_where_it_costs_fewer_requests(loopback, sleeps, chain):
    cursor = chain.tip + 1
    chain.mine(500)
    asked = []

    def cost(requests):
        return lambda: asked.append(requests) or requests

    cheap = adapter(loopback, sleeps, max_blocks=300).scan_block_range(
        among(OURS), cursor=cursor, polling_cost=cost(4)
    )
    assert "more requests than polling" in cheap.fallback
    assert cheap.cursor == chain.solidified + 1 - FALLBACK_OVERLAP
    assert block_calls(loopback) == []

    # Reading is cheaper (5 requests against 1 000): 300 blocks this pass, the rest next.
    dear = adapter(loopback, sleeps, max_blocks=300).scan_block_range(
        among(OURS), cursor=cursor, polling_cost=cost(1000)
    )
    assert not dear.fallback
    assert (dear.scanned_from, dear.scanned_to, dear.cursor) == (
        cursor,
        cursor + 299,
        cursor + 300,
    )
    assert asked == [4, 1000]  # asked only past the limit

    near = adapter(loopback, sleeps, max_blocks=300).scan_block_range(
        among(OURS), cursor=dear.cursor, blocks=dear.blocks, polling_cost=cost(1)
    )
    assert not near.fallback and asked == [4, 1000]


def test_no_cursor_a_cursor_above_the_head_or_another_parent_fall_back(loopback, sleeps, chain):
    tron = adapter(loopback, sleeps)
    assert tron.scan_block_range(among(OURS), cursor=None).fallback == "no block scanned yet"
    assert "above the head" in tron.scan_block_range(among(OURS), cursor=chain.tip + 5).fallback

    chain.mine(25)
    first = tron.scan_block_range(among(OURS), cursor=chain.tip - 24)
    chain.mine(3)
    assert not tron.scan_block_range(
        among(OURS), cursor=first.cursor, blocks=first.blocks
    ).fallback
    other = [[first.blocks[0][0], "f" * 64]]
    moved = tron.scan_block_range(among(OURS), cursor=first.cursor, blocks=other)
    assert "no longer the one read before" in moved.fallback


def test_only_the_recipients_of_payments_are_looked_up_among_the_watched(loopback, sleeps, chain):
    cursor = chain.tip + 1
    chain.pay_trx(stranger(7), 1)
    chain.pay_token(stranger(8), 2)
    chain.mine()
    watched = among(OURS)
    adapter(loopback, sleeps).scan_block_range(watched, cursor=cursor)
    assert watched.asked == [{stranger(7), stranger(8)}]


# -- nonsense answers ------------------------------------------------------------------------


def _blocks_answer(chain, start, end) -> dict:
    return chain._post("/wallet/getblockbylimitnext", {"startNum": start, "endNum": end})


@pytest.mark.parametrize(
    "spoil",
    [
        lambda body: body["block"][0].update(blockID="00" * 31 + "\x00\x00"),
        lambda body: body["block"][0]["block_header"]["raw_data"].update(number=10**30),
        lambda body: body["block"][0]["block_header"]["raw_data"].update(timestamp=10**20),
        lambda body: body["block"][0].update(transactions={"txID": "ab" * 32}),
        lambda body: body["block"][0]["transactions"][0].update(txID="nul\x00" * 16),
        lambda body: body["block"].pop(),  # a block missing
        lambda body: body["block"].append(copy.deepcopy(body["block"][0])),  # twice
        lambda body: body.update(block="blocks"),
        lambda body: body["block"][1]["block_header"]["raw_data"].update(parentHash="e" * 64),
        lambda body: body["block"][0]["transactions"][0]["raw_data"]["contract"][0]["parameter"][
            "value"
        ].update(amount=10**40),  # TRX beyond any supply, to us
    ],
)
def test_nonsense_blocks_are_the_networks_error(loopback, sleeps, chain, spoil):
    cursor = chain.tip + 1
    chain.pay_trx(OURS, 1_000)
    chain.mine(2)
    body = _blocks_answer(chain, cursor, cursor + 2)
    spoil(body)
    chain.override("/wallet/getblockbylimitnext", body)
    with pytest.raises(ChainError):
        adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)


def test_huge_or_odd_call_data_to_strangers_is_skipped_not_an_error(loopback, sleeps, chain):
    cursor = chain.tip + 1
    chain.pay_token(stranger(3), 1)
    chain.mine()
    body = _blocks_answer(chain, cursor, cursor + 1)
    value = body["block"][0]["transactions"][0]["raw_data"]["contract"][0]["parameter"]["value"]
    value["data"] = "a9059cbb" + "f" * 128 + "\x00"  # a recipient no address can be
    chain.override("/wallet/getblockbylimitnext", body)
    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)
    assert scan.transfers == [] and scan.read == 1


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=70),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value, at=()):
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*at, index))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_mutated_block_answer_is_a_scan_or_a_chain_error(data):
    """Whatever a field of the answer becomes, the scan answers something checked or fails
    as the network's error: never another exception."""
    with LoopbackServer() as loopback:
        chain = TronChain(loopback)
        cursor = chain.tip + 1
        chain.pay_trx(OURS, 1_000)
        chain.pay_token(OURS, 2_000)
        chain.mine(2)
        body = _blocks_answer(chain, cursor, cursor + 2)
        paths = [path for path in _paths(body) if path]
        path = data.draw(st.sampled_from(paths))
        holder = body
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = data.draw(_JSON)
        json.dumps(body)
        chain.override("/wallet/getblockbylimitnext", body)
        try:
            scan = TronAdapter(loopback.url, sleep=lambda _seconds: None).scan_block_range(
                among(OURS), cursor=cursor
            )
        except ChainError:
            return
        checked_scan(TronAdapter(loopback.url), [WatchTarget(OURS)], scan)


def test_a_token_moved_by_another_contract_is_not_seen_in_blocks(loopback, sleeps, chain):
    """What the watcher's sweep is for: the call is to a payout contract, not to USDT's
    transfer(); only the Transfer event (the TRC-20 list) names our address."""
    cursor = chain.tip + 1
    chain.pay_token(OURS, 1_000_000, contract=BATCHER, call="c0ffee00")
    chain.mine()
    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)
    assert scan.transfers == [] and len(scan.txids) == 1


def test_an_answer_over_the_size_cap_is_asked_again_in_halves(
    loopback, sleeps, chain, monkeypatch
):
    cursor = chain.tip + 1
    for n in range(250):
        chain.pay_trx(stranger(1000 + n), 1)  # busy blocks: one stranger's transfer each
        chain.mine()
    hundred = len(json.dumps(_blocks_answer(chain, cursor, cursor + 100)))
    monkeypatch.setattr(http, "MAX_BODY_BYTES", hundred * 6 // 10)

    scan = adapter(loopback, sleeps).scan_block_range(among(OURS), cursor=cursor)

    assert block_calls(loopback) == [
        (cursor, cursor + 100),  # refused: too large
        (cursor, cursor + 50),
        (cursor + 50, cursor + 100),
        (cursor + 100, cursor + 150),
        (cursor + 150, cursor + 200),
        (cursor + 200, cursor + 250),
    ]
    assert scan.read == 250
