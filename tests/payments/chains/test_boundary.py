"""Every value an adapter returns is checked at the adapter boundary: nonsense from a chain
API is a ChainError for that network, never another exception, never a stored value.

First the records themselves (ObservedTransfer, ScanResult), then each adapter over a real
loopback server with one value of each bad class put into an otherwise valid answer.
"""

import copy
from datetime import UTC, datetime, timedelta

import pytest

from kernodeck.core import clock
from kernodeck.payments.chains import http
from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
    ScanResult,
    WatchTarget,
    scan_checked,
)
from tests.payments.chains.answers import (
    ANSWERS,
    BLOCK_DATETIME,
    BLOCK_TIME,
    BTC_OURS,
    ETH_OURS,
    SOL_RECIPIENT,
    TRON_OURS,
    scan,
    serve,
    set_at,
)

GOOD = {
    "network": "bitcoin",
    "txid": "ab" * 32,
    "index": 1,
    "address": BTC_OURS,
    "asset": "BTC",
    "amount_base": 150_000,
    "confirmations": 3,
    "block_height": 800_000,
    "block_time": BLOCK_DATETIME,
}


def test_a_plausible_transfer_is_built_as_given():
    transfer = ObservedTransfer(**GOOD, token_contract="", reference=None)
    assert (transfer.amount_base, transfer.block_time) == (150_000, BLOCK_DATETIME)


@pytest.mark.parametrize(
    "fields",
    [
        # out-of-range integers
        {"amount_base": 10**40},
        {"amount_base": 21 * 10**15 + 1},  # more BTC than ten times the supply
        {"amount_base": -1},
        {"index": 2**31},
        {"confirmations": -1},
        {"confirmations": 2**31},
        {"block_height": -5},
        {"block_height": 10**12 + 1},
        # impossible times
        {"block_time": datetime(1970, 1, 1, tzinfo=UTC)},
        {"block_time": datetime(2009, 1, 2, tzinfo=UTC)},
        {"block_time": datetime(9999, 12, 31, tzinfo=UTC)},
        {"block_time": datetime(2026, 1, 1, tzinfo=UTC).replace(tzinfo=None)},  # naive
        # over-long strings
        {"txid": "a" * 101},
        {"address": "b" * 101},
        {"token_contract": "T" * 65},
        {"reference": "R" * 65},
        # NUL bytes and other characters no chain uses
        {"txid": "\x00" * 64},
        {"txid": "ab" * 31 + "a\x00"},
        {"address": BTC_OURS + "\x00"},
        {"token_contract": "0x\x00"},
        {"txid": "ab" * 16 + " " + "ab" * 15},
        {"txid": "<script>"},
        {"txid": "٣" * 64},
        {"txid": ""},
        # wrong types, `true` for a number first
        {"amount_base": True},
        {"index": False},
        {"confirmations": True},
        {"block_height": True},
        {"amount_base": 1.5},
        {"amount_base": "150000"},
        {"txid": ["ab" * 32]},
        {"txid": 12},
        {"block_time": BLOCK_TIME},
        {"failed": "no"},
        {"final": 1},
        {"asset": "DOGE"},
        {"network": "dogecoin"},
    ],
    ids=repr,
)
def test_an_impossible_value_is_a_chain_error_when_the_record_is_built(fields):
    with pytest.raises(ChainError):
        ObservedTransfer(**{**GOOD, **fields})


def test_block_times_up_to_a_day_ahead_of_our_clock_are_accepted():
    clock.freeze(BLOCK_DATETIME - timedelta(hours=23))
    assert ObservedTransfer(**GOOD).block_time == BLOCK_DATETIME
    clock.freeze(BLOCK_DATETIME - timedelta(hours=25))
    with pytest.raises(ChainError, match="impossible"):
        ObservedTransfer(**GOOD)


@pytest.mark.parametrize(
    "fields",
    [
        {"tip": -1},
        {"tip": 10**13},
        {"tip": True},
        {"tip": "100"},
        {"cursor": -1},
        {"cursor": False},
        {"transfers": [{"txid": "ab"}]},
    ],
    ids=repr,
)
def test_an_impossible_scan_result_is_a_chain_error(fields):
    with pytest.raises(ChainError):
        ScanResult(**{"tip": 100, **fields})


class FixedAdapter:
    network = "bitcoin"

    def __init__(self, result):
        self.result = result

    def scan(self, targets, *, cursor=None):
        return self.result


@pytest.mark.parametrize(
    "changes",
    [{"address": "bc1qsomeoneelse"}, {"network": "litecoin"}, {"reference": "Unasked"}],
    ids=repr,
)
def test_a_scan_answering_what_was_not_asked_is_a_chain_error(changes):
    transfer = ObservedTransfer(**{**GOOD, **changes})
    with pytest.raises(ChainError):
        scan_checked(FixedAdapter(ScanResult([transfer], tip=1)), [WatchTarget(BTC_OURS)])


@pytest.mark.parametrize(
    "changes",
    [
        {"txid": "0x" + "ab" * 32},  # Ethereum's spelling on Bitcoin
        {"txid": "ab" * 31},  # one byte short
        {"txid": "zz" * 32},
        {"network": "ethereum", "txid": "ab" * 32},  # Ethereum's need 0x
        {"network": "solana", "txid": "0" * 88},  # 0 is no base58 digit
        {"network": "solana", "txid": "1" * 40},  # too short for a signature
        {"token_contract": "0x" + "ab" * 20},  # Bitcoin has no token contracts
        {"network": "ethereum", "txid": "0x" + "ab" * 32, "token_contract": "TR7NHqjeKQ"},
    ],
    ids=repr,
)
def test_a_transfer_not_spelled_as_its_chain_spells_it_is_a_chain_error(changes):
    transfer = ObservedTransfer(**{**GOOD, **changes})
    adapter = FixedAdapter(ScanResult([transfer], tip=1))
    adapter.network = transfer.network
    with pytest.raises(ChainError, match=r"no (transaction id|token contract) here"):
        scan_checked(adapter, [WatchTarget(BTC_OURS)])


# -- each adapter, each class of bad value, over loopback --------------------------------

# network -> class -> [(path in the answers, value)]; each one alone must fail the scan.
BAD_VALUES = {
    "bitcoin": {
        "out-of-range integer": [
            (("txs", 0, "vout", 0, "value"), 10**40),
            (("txs", 0, "vout", 0, "value"), -1),
            (("tip",), "9" * 15),
            (("tip",), "9" * 5000),
            (("txs", 0, "status", "block_height"), 10**13),
            (("txs", 0, "status", "block_height"), -1),
        ],
        "impossible time": [
            (("txs", 0, "status", "block_time"), 10**12),
            (("txs", 0, "status", "block_time"), -(10**12)),
            (("txs", 0, "status", "block_time"), 0),
        ],
        "over-long string": [(("txs", 0, "txid"), "a" * 101)],
        "NUL bytes": [(("txs", 0, "txid"), "\x00" * 64), (("tip",), "8001\x0000")],
        "nested JSON": [(("txs", 0, "status", "block_time"), [[[BLOCK_TIME]]])],
        "wrong types": [
            (("txs", 0, "vout", 0, "value"), True),
            (("txs", 0, "status", "block_height"), True),
            (("txs", 0, "vout", 0, "value"), "150000"),
            (("txs", 0, "vout", 0, "value"), 1.5),
            (("txs", 0, "txid"), 12),
        ],
    },
    "ethereum": {
        "out-of-range integer": [
            (("eth_blockNumber",), "0x" + "f" * 16),
            (("eth_getLogs", 0, "data"), "0x" + "f" * 64),  # USDT beyond any supply
            (("eth_getLogs", 0, "logIndex"), "0x" + "f" * 12),
            (("eth_getLogs", 0, "blockNumber"), "0x" + "f" * 64),
            (("eth_getBlockByNumber", "transactions", 0, "value"), "0x" + "f" * 64),
        ],
        "impossible time": [
            (("eth_getLogs", 0, "blockTimestamp"), "0x" + "f" * 15),
            (("eth_getLogs", 0, "blockTimestamp"), "0x0"),
            (("eth_getBlockByNumber", "timestamp"), "0x" + "f" * 64),
        ],
        "over-long string": [
            (("eth_getLogs", 0, "transactionHash"), "0x" + "a" * 200),
            (("eth_getBlockByNumber", "transactions", 0, "hash"), "0x" + "a" * 200),
            (("eth_blockNumber",), "0x" + "1" * 5000),
        ],
        "NUL bytes": [
            (("eth_getLogs", 0, "transactionHash"), "0x\x00" + "ff" * 31),
            (("eth_getBlockByNumber", "transactions", 0, "hash"), "\x00"),
        ],
        "nested JSON": [(("eth_getLogs", 0, "blockTimestamp"), [[["0x1"]]])],
        "wrong types": [
            (("eth_getLogs", 0, "logIndex"), True),
            (("eth_blockNumber",), 100),
            (("eth_getBlockByNumber", "timestamp"), BLOCK_TIME),
            (("eth_getLogs", 0, "transactionHash"), 5),
        ],
    },
    "tron": {
        "out-of-range integer": [
            (("head", "block_header", "raw_data", "number"), 10**13),
            (("head", "block_header", "raw_data", "number"), -1),
            (
                (
                    "transactions",
                    "data",
                    0,
                    "raw_data",
                    "contract",
                    0,
                    "parameter",
                    "value",
                    "amount",
                ),
                10**30,
            ),
            (("trc20", "data", 0, "value"), "9" * 40),  # USDT beyond any supply
            (("trc20", "data", 0, "value"), "9" * 5000),
            (("info", "blockNumber"), 10**13),
            (("transactions", "data", 0, "blockNumber"), -1),
        ],
        "impossible time": [
            (("transactions", "data", 0, "block_timestamp"), 10**16),
            (("transactions", "data", 0, "block_timestamp"), -1),
            (("trc20", "data", 0, "block_timestamp"), 10**20),
        ],
        "over-long string": [
            (("transactions", "data", 0, "txID"), "a" * 101),
            (("trc20", "data", 0, "transaction_id"), "b" * 101),
            (("transactions", "meta", "fingerprint"), "f" * 10_000),
        ],
        "NUL bytes": [
            (("transactions", "data", 0, "txID"), "\x00" * 64),
            (("trc20", "data", 0, "token_info", "address"), "TR7\x00"),
        ],
        "nested JSON": [(("transactions", "data", 0, "block_timestamp"), [[[1]]])],
        "wrong types": [
            (
                (
                    "transactions",
                    "data",
                    0,
                    "raw_data",
                    "contract",
                    0,
                    "parameter",
                    "value",
                    "amount",
                ),
                True,
            ),
            (("transactions", "data", 0, "blockNumber"), True),
            (("info", "blockNumber"), "75418400"),
            (("trc20", "data", 0, "value"), 25_000_000),
            (("head", "block_header", "raw_data", "number"), True),
            (("transactions", "meta", "fingerprint"), {"next": "x"}),
        ],
    },
    "solana": {
        "out-of-range integer": [
            (("getSlot",), 10**13),
            (("getTransaction", "slot"), -1),
            (("getTransaction", "meta", "postBalances", 1), 2**64),
            (("getTransaction", "meta", "postBalances", 1), 2**64 - 1),  # beyond any supply
        ],
        "impossible time": [
            (("getTransaction", "blockTime"), 10**12),
            (("getTransaction", "blockTime"), -(10**12)),
            (("getTransaction", "blockTime"), 1),
        ],
        "over-long string": [(("getSignaturesForAddress", 0, "signature"), "5" * 101)],
        "NUL bytes": [(("getSignaturesForAddress", 0, "signature"), "5\x00" * 44)],
        "nested JSON": [(("getTransaction", "blockTime"), [[[BLOCK_TIME]]])],
        "wrong types": [
            (("getSlot",), True),
            (("getTransaction", "meta", "postBalances", 1), True),
            (("getTransaction", "meta", "loadedAddresses", "writable"), 5),
            (("getTransaction", "transaction", "message", "accountKeys", 0), [[SOL_RECIPIENT]]),
            (("getTransaction", "blockTime"), "1767225600"),
        ],
    },
}

CASES = [
    pytest.param(network, path, value, id=f"{network}: {kind}: {'/'.join(map(str, path))}")
    for network, kinds in BAD_VALUES.items()
    for kind, changes in kinds.items()
    for path, value in changes
]


@pytest.mark.parametrize("network", list(ANSWERS))
def test_the_valid_answers_give_their_credits(loopback, network):
    clock.freeze(BLOCK_DATETIME + timedelta(days=1))
    serve(loopback, network, ANSWERS[network]())
    result = scan(loopback, network)
    ours = {"bitcoin": BTC_OURS, "ethereum": ETH_OURS, "tron": TRON_OURS, "solana": SOL_RECIPIENT}
    expected = {
        "bitcoin": {("BTC", 150_000)},
        "ethereum": {("ETH", 10**17), ("USDT", 25_000_000)},
        "tron": {("TRX", 10_000), ("USDT", 25_000_000)},
        "solana": {("SOL", 100_000_000)},
    }[network]
    assert {(t.asset, t.amount_base) for t in result.transfers} == expected
    assert {t.address for t in result.transfers} == {ours[network]}
    assert {t.block_time for t in result.transfers} == {BLOCK_DATETIME}


@pytest.mark.parametrize(("network", "path", "value"), CASES)
def test_one_bad_value_in_an_answer_is_a_chain_error(loopback, network, path, value):
    clock.freeze(BLOCK_DATETIME + timedelta(days=1))
    answers = ANSWERS[network]()
    set_at(answers, path, value)
    serve(loopback, network, answers)
    with pytest.raises(ChainError):
        scan(loopback, network)


def test_a_spam_token_with_an_absurd_amount_is_skipped_not_a_failure(loopback):
    clock.freeze(BLOCK_DATETIME + timedelta(days=1))
    answers = ANSWERS["ethereum"]()
    spam = copy.deepcopy(answers["eth_getLogs"][0])
    spam.update(address="0x" + "66" * 20, data="0x" + "f" * 64, transactionHash="0x" + "99" * 32)
    answers["eth_getLogs"].append(spam)
    serve(loopback, "ethereum", answers)
    assert {t.asset for t in scan(loopback, "ethereum").transfers} == {"ETH", "USDT"}


def test_a_trc20_spam_token_with_an_absurd_amount_is_skipped_not_a_failure(loopback):
    clock.freeze(BLOCK_DATETIME + timedelta(days=1))
    answers = ANSWERS["tron"]()
    spam = copy.deepcopy(answers["trc20"]["data"][0])
    spam["token_info"]["address"] = "THbeLKM84TvYPs8GM2qLQEnbMU5KSjVK8j"
    spam["value"] = "9" * 70
    answers["trc20"]["data"].append(spam)
    serve(loopback, "tron", answers)
    assert {t.asset for t in scan(loopback, "tron").transfers} == {"TRX", "USDT"}


# -- the HTTP layer ------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [http.MAX_DEPTH + 1, 100_000])
def test_json_nested_too_deep_is_a_chain_error_without_retries(loopback, sleeps, depth):
    loopback.route("GET", "/deep", body="[" * depth + "]" * depth, content_type="application/json")
    with pytest.raises(ChainError, match="nested"):
        http.get_json(f"{loopback.url}/deep", sleep=sleeps.append)
    assert (len(loopback.requests), sleeps) == (1, [])


def test_json_nested_up_to_the_limit_is_read(loopback, sleeps):
    depth = http.MAX_DEPTH
    loopback.route("GET", "/deep", body="[" * depth + "]" * depth, content_type="application/json")
    body = http.get_json(f"{loopback.url}/deep", sleep=sleeps.append)
    for _ in range(depth - 1):
        body = body[0]
    assert body == []


def test_an_answer_over_the_size_limit_is_a_chain_error(loopback, sleeps, monkeypatch):
    monkeypatch.setattr(http, "MAX_BODY_BYTES", 1000)
    loopback.route("GET", "/big", json_body=["x" * 2000])
    loopback.route("GET", "/small", json_body=["x" * 900])
    with pytest.raises(ChainError, match="larger than 1000 bytes"):
        http.get_json(f"{loopback.url}/big", sleep=sleeps.append)
    assert http.get_json(f"{loopback.url}/small", sleep=sleeps.append) == ["x" * 900]


def test_a_compressed_answer_is_bounded_after_decompression(loopback, sleeps, monkeypatch):
    import gzip
    import json

    monkeypatch.setattr(http, "MAX_BODY_BYTES", 10_000)
    bomb = gzip.compress(json.dumps(["0" * 100_000]).encode())
    assert len(bomb) < 10_000
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    loopback.route("GET", "/bomb", body=bomb, headers=headers)
    small = gzip.compress(json.dumps({"ok": 1}).encode())
    loopback.route("GET", "/small", body=small, headers=headers)
    with pytest.raises(ChainError, match="larger than"):
        http.get_json(f"{loopback.url}/bomb", sleep=sleeps.append)
    assert http.get_json(f"{loopback.url}/small", sleep=sleeps.append) == {"ok": 1}


def test_the_adapters_bound_is_the_one_the_database_enforces():
    from kernodeck.payments.chains.base import AMOUNT_COLUMN_MAX, MAX_AMOUNT_BASE
    from kernodeck.payments.models import TRANSFER_AMOUNT_MAX

    assert AMOUNT_COLUMN_MAX == TRANSFER_AMOUNT_MAX
    assert max(MAX_AMOUNT_BASE.values()) == TRANSFER_AMOUNT_MAX
