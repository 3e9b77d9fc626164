"""The demo's chain simulator over real loopback HTTP, read by each real chain adapter."""

import json
from datetime import timedelta

import httpx
import pytest

from kernodeck.core import clock
from kernodeck.demo.simulator import CHAINS, ChainSimulator
from kernodeck.payments.chains.base import WatchTarget
from kernodeck.payments.chains.esplora import EsploraAdapter, watched_among
from kernodeck.payments.chains.ethereum import EthereumAdapter
from kernodeck.payments.chains.solana import SolanaAdapter
from kernodeck.payments.chains.tron import TronAdapter

USDT_ETH = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
USDC_ETH = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
# Addresses of the public test mnemonic ("abandon … about"), as the demo hands out.
BTC_ADDRESS = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
LTC_ADDRESS = "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh"
ETH_ADDRESS = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
TRON_ADDRESS = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH"
SOL_RECIPIENT = "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"
SOL_REFERENCE = "2HkZ4r9C1S5sqxmNGi1kDtszAKGdv3WJqDzZ3TWdSyYx"


def control(simulator, verb, body):
    response = httpx.post(f"{simulator.url}/_control/{verb}", json=body, timeout=5)
    return response.status_code, response.json()


def pay(simulator, method, address, amount, reference=None):
    body = {"method": method, "address": address, "amount_base": amount}
    if reference:
        body["reference"] = reference
    status, answer = control(simulator, "pay", body)
    assert status == 200, answer
    return answer


def mine(simulator, network, blocks):
    status, answer = control(simulator, "mine", {"network": network, "blocks": blocks})
    assert status == 200, answer
    return answer["tip"]


def assert_recent(block_time):
    assert abs(block_time - clock.now()) < timedelta(minutes=5)


@pytest.mark.parametrize(
    ("network", "method", "address"),
    [("bitcoin", "btc-bitcoin", BTC_ADDRESS), ("litecoin", "ltc-litecoin", LTC_ADDRESS)],
)
def test_esplora_payment_waits_in_the_mempool_then_counts_mined_blocks(
    simulator, network, method, address
):
    adapter = EsploraAdapter(network, f"{simulator.url}/{network}/api")
    paid = pay(simulator, method, address, 103_093)

    seen = adapter.scan([WatchTarget(address)])
    [transfer] = seen.transfers
    assert seen.tip == CHAINS[network].start_height
    assert (transfer.txid, transfer.amount_base, transfer.asset) == (
        paid["txid"],
        103_093,
        {"bitcoin": "BTC", "litecoin": "LTC"}[network],
    )
    assert len(transfer.txid) == 64 and int(transfer.txid, 16) >= 0
    assert (transfer.confirmations, transfer.block_height, transfer.block_time) == (0, None, None)

    tip = mine(simulator, network, 2)
    [transfer] = adapter.scan([WatchTarget(address)]).transfers
    assert tip == CHAINS[network].start_height + 2
    assert (transfer.confirmations, transfer.block_height) == (2, tip - 1)
    assert_recent(transfer.block_time)
    assert (
        adapter.scan(
            [WatchTarget(BTC_ADDRESS if network == "litecoin" else LTC_ADDRESS)]
        ).transfers
        == []
    )


@pytest.mark.parametrize(
    ("network", "method", "address"),
    [("bitcoin", "btc-bitcoin", BTC_ADDRESS), ("litecoin", "ltc-litecoin", LTC_ADDRESS)],
)
def test_esplora_block_scanning_sees_the_mempool_then_the_block(
    simulator, network, method, address
):
    adapter = EsploraAdapter(network, f"{simulator.url}/{network}/api")
    targets = watched_among([WatchTarget(address)])
    start = adapter.scan_blocks(targets, blocks=[])
    assert start.fallback == "no block scanned yet"
    paid = pay(simulator, method, address, 103_093)

    waiting = adapter.scan_blocks(targets, blocks=start.blocks, examined=start.examined)
    [transfer] = waiting.transfers
    assert (transfer.txid, transfer.confirmations, waiting.fallback) == (paid["txid"], 0, "")

    tip = mine(simulator, network, 2)
    mined = adapter.scan_blocks(targets, blocks=waiting.blocks, examined=waiting.examined)
    [transfer] = mined.transfers
    assert (transfer.block_height, transfer.confirmations) == (tip - 1, 2)
    assert_recent(transfer.block_time)
    assert [height for height, _hash in mined.blocks] == [tip - 2, tip - 1, tip]


def test_ethereum_ether_and_both_tokens_are_seen_with_growing_confirmations(simulator):
    adapter = EthereumAdapter(
        f"{simulator.url}/ethereum",
        token_contracts={"USDT": USDT_ETH, "USDC": USDC_ETH},
        rescan_depth=14,
    )
    usdt = pay(simulator, "usdt-ethereum", ETH_ADDRESS, 970_000_000)
    usdc = pay(simulator, "usdc-ethereum", ETH_ADDRESS, 5_000_000)
    ether = pay(simulator, "eth-ethereum", ETH_ADDRESS, 10**16)

    first = adapter.scan([WatchTarget(ETH_ADDRESS)])
    found = {t.txid: t for t in first.transfers}
    assert first.tip == CHAINS["ethereum"].start_height + 3
    assert {(t.asset, t.amount_base, t.confirmations) for t in found.values()} == {
        ("USDT", 970_000_000, 3),
        ("USDC", 5_000_000, 2),
        ("ETH", 10**16, 1),
    }
    assert found[usdt["txid"]].token_contract == USDT_ETH
    assert found[ether["txid"]].token_contract is None
    assert len(usdc["txid"]) == 66 and usdc["txid"].startswith("0x")
    assert_recent(found[ether["txid"]].block_time)

    mine(simulator, "ethereum", 12)
    later = adapter.scan([WatchTarget(ETH_ADDRESS)], cursor=first.cursor)
    assert {t.txid: t.confirmations for t in later.transfers} == {
        usdt["txid"]: 15,
        usdc["txid"]: 14,
        ether["txid"]: 13,
    }
    assert all(not t.final and not t.failed for t in later.transfers)


def test_tron_trx_and_usdt_are_seen_and_become_final_when_solidified(simulator):
    adapter = TronAdapter(f"{simulator.url}/tron")
    usdt = pay(simulator, "usdt-tron", TRON_ADDRESS, 970_000_000)
    trx = pay(simulator, "trx-tron", TRON_ADDRESS, 7_000_000)

    seen = {t.txid: t for t in adapter.scan([WatchTarget(TRON_ADDRESS)]).transfers}
    assert seen[usdt["txid"]].asset == "USDT"
    assert seen[usdt["txid"]].token_contract == "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
    assert (seen[usdt["txid"]].amount_base, seen[usdt["txid"]].confirmations) == (970_000_000, 2)
    assert (seen[trx["txid"]].asset, seen[trx["txid"]].amount_base) == ("TRX", 7_000_000)
    assert seen[trx["txid"]].confirmations == 1
    assert not seen[usdt["txid"]].final
    assert_recent(seen[trx["txid"]].block_time)

    mine(simulator, "tron", 18)  # solidified head: 19 blocks below the tip
    seen = {t.txid: t for t in adapter.scan([WatchTarget(TRON_ADDRESS)]).transfers}
    assert (seen[usdt["txid"]].confirmations, seen[usdt["txid"]].final) == (20, True)
    assert (seen[trx["txid"]].confirmations, seen[trx["txid"]].final) == (19, False)


def test_tron_block_scan_finds_what_the_lists_show(simulator):
    adapter = TronAdapter(f"{simulator.url}/tron")
    start = adapter.scan_block_range(lambda found: [], cursor=None).tip + 1
    usdt = pay(simulator, "usdt-tron", TRON_ADDRESS, 970_000_000)
    trx = pay(simulator, "trx-tron", TRON_ADDRESS, 7_000_000)
    mine(simulator, "tron", 3)

    scan = adapter.scan_block_range(
        lambda found: [TRON_ADDRESS] if TRON_ADDRESS in found else [], cursor=start
    )
    listed = adapter.scan([WatchTarget(TRON_ADDRESS)]).transfers
    assert not scan.fallback and scan.read == scan.tip - start + 1
    assert {(t.txid, t.asset, t.amount_base) for t in scan.transfers} == {
        (usdt["txid"], "USDT", 970_000_000),
        (trx["txid"], "TRX", 7_000_000),
    }
    assert {(t.txid, t.index, t.block_height) for t in scan.transfers} == {
        (t.txid, t.index, t.block_height) for t in listed
    }


def test_solana_payment_is_found_by_its_reference_and_counts_slots(simulator):
    adapter = SolanaAdapter(f"{simulator.url}/solana")
    paid = pay(simulator, "sol-solana", SOL_RECIPIENT, 123_456_789, reference=SOL_REFERENCE)
    targets = [WatchTarget(SOL_RECIPIENT, reference=SOL_REFERENCE), WatchTarget(SOL_RECIPIENT)]

    [transfer] = adapter.scan(targets).transfers
    assert (transfer.txid, transfer.amount_base, transfer.reference) == (
        paid["txid"],
        123_456_789,
        SOL_REFERENCE,
    )
    assert 80 <= len(transfer.txid) <= 88
    assert (transfer.confirmations, transfer.final) == (1, False)
    assert_recent(transfer.block_time)

    mine(simulator, "solana", 32)
    [transfer] = adapter.scan(targets).transfers
    assert (transfer.confirmations, transfer.final) == (33, True)


def test_the_state_survives_a_restart(simulator, tmp_path):
    paid = pay(simulator, "btc-bitcoin", BTC_ADDRESS, 50_000)
    tip = mine(simulator, "bitcoin", 3)

    restarted = ChainSimulator(tmp_path / "chain-simulator.json")

    assert restarted.tip("bitcoin") == tip
    assert [t["txid"] for t in restarted.state["transfers"]] == [paid["txid"]]
    assert json.loads((tmp_path / "chain-simulator.json").read_text())["version"] == 1


@pytest.mark.parametrize(
    ("verb", "body", "error"),
    [
        ("pay", {"method": "doge", "address": BTC_ADDRESS, "amount_base": 1}, "unknown payment"),
        ("pay", {"method": "btc-bitcoin", "address": BTC_ADDRESS, "amount_base": -5}, "amount"),
        ("pay", {"method": "btc-bitcoin", "address": BTC_ADDRESS, "amount_base": True}, "amount"),
        ("pay", {"method": "btc-bitcoin", "address": BTC_ADDRESS, "amount_base": "٣"}, "amount"),
        ("pay", {"method": "btc-bitcoin", "address": "bc1\x00q", "amount_base": 1}, "address"),
        ("pay", {"method": "eth-ethereum", "address": TRON_ADDRESS, "amount_base": 1}, "Ethereum"),
        ("pay", {"method": "trx-tron", "address": ETH_ADDRESS[2:], "amount_base": 1}, "Tron"),
        ("pay", ["not", "an", "object"], "JSON object"),
        ("mine", {"network": "dogecoin", "blocks": 1}, "unknown network"),
        ("mine", {"network": "bitcoin", "blocks": 10**6}, "blocks"),
        ("mine", {"network": "bitcoin", "blocks": 0}, "blocks"),
    ],
)
def test_the_control_api_refuses_nonsense_and_changes_nothing(simulator, verb, body, error):
    before = httpx.get(f"{simulator.url}/_control/state").json()

    status, answer = control(simulator, verb, body)

    assert status == 400
    assert error in answer["error"]
    assert httpx.get(f"{simulator.url}/_control/state").json() == before


def test_oversized_and_broken_bodies_are_refused(simulator):
    huge = httpx.post(f"{simulator.url}/_control/pay", content=b"{" + b" " * 20_000 + b"}")
    broken = httpx.post(f"{simulator.url}/_control/mine", content=b"\x00\xff{")
    rpc = httpx.post(f"{simulator.url}/ethereum", content=b"nonsense").json()

    assert huge.status_code == 413
    assert broken.status_code == 400
    assert rpc["error"]["code"] == -32700
