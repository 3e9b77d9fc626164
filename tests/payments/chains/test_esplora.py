import copy
import logging
from datetime import UTC, datetime

import pytest

from kernodeck.payments.chains import esplora
from kernodeck.payments.chains.base import ChainError, ObservedTransfer, WatchTarget
from kernodeck.payments.chains.esplora import EsploraAdapter, watched_among
from tests.loopback import Reply, sample, sample_reply

OURS = "bc1qrt80urnd7hww3x0tek59tc66ldn5ngjaze4afa"  # vout[1] of the address-txs sample
OTHER = "bc1q3jlulk7pw9p5tjqcrwdec9a6vdaw9pqhw0wg4g"
TIP = "/api/blocks/tip/height"


EPOCH = 1_700_000_000  # 2023-11-14: `at` in tx() counts seconds from here (a real block time)


def txs_path(address: str) -> str:
    return f"/api/address/{address}/txs"


def chain_path(address: str, last_seen: str) -> str:
    return f"/api/address/{address}/txs/chain/{last_seen}"


def txid(n: int) -> str:
    return f"{n:064x}"


def tx(
    txid: str, outputs: list[tuple[str | None, int]], height: int | None = None, at: int = 0
) -> dict:
    """A transaction in the shape of the address-txs sample, paying `outputs` (address, sats);
    address None makes an OP_RETURN output. `height` None means still in the mempool."""
    base = copy.deepcopy(sample("esplora/address-txs.json")["response"][0])
    template = base["vout"][1]
    vout = []
    for address, value in outputs:
        output = {**template, "value": value}
        if address is None:
            del output["scriptpubkey_address"]
            output.update(
                scriptpubkey="6a", scriptpubkey_asm="OP_RETURN", scriptpubkey_type="op_return"
            )
        else:
            output["scriptpubkey_address"] = address
        vout.append(output)
    status = {"confirmed": False}
    if height is not None:
        status = {**base["status"], "block_height": height, "block_time": EPOCH + at}
    return {**base, "txid": txid, "vout": vout, "status": status}


def adapter(loopback, sleeps, network="bitcoin", **kwargs) -> EsploraAdapter:
    return EsploraAdapter(network, f"{loopback.url}/api", sleep=sleeps.append, **kwargs)


def test_reads_the_recorded_address_history_and_tip(loopback, sleeps):
    loopback.route("GET", TIP, sample_reply("esplora/blocks-tip-height.json"))
    loopback.route("GET", txs_path(OURS), sample_reply("esplora/address-txs.json"))

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    # The sample's block_height (123213) is a placeholder below the sample tip (698767): the
    # arithmetic is still tip - height + 1.
    assert result.tip == 698767
    assert result.cursor is None
    assert result.transfers == [
        ObservedTransfer(
            network="bitcoin",
            txid="e793cab7e155a0e8f825c4609548faf759c57715fecac587580a1d716bb2b89e",
            index=1,
            address=OURS,
            asset="BTC",
            amount_base=50760,
            confirmations=698767 - 123213 + 1,
            block_height=123213,
            block_time=datetime(2024, 9, 24, 11, 6, 27, tzinfo=UTC),
        )
    ]
    assert [r.path for r in loopback.requests] == [TIP, txs_path(OURS)]
    assert sleeps == []


def test_skips_op_return_and_reports_each_output_to_the_address(loopback, sleeps):
    confirmed = sample("esplora/tx-confirmed.json")["response"]
    watched = "bc1qnzw0zfm5l3c9vztpp3aegx0j68zgqajyffr2r6"
    loopback.route("GET", TIP, body="848140", content_type="text/plain")
    loopback.route("GET", txs_path(watched), json_body=[confirmed])

    result = adapter(loopback, sleeps).scan([WatchTarget(watched)])

    [transfer] = result.transfers
    assert (transfer.txid, transfer.index, transfer.amount_base) == (confirmed["txid"], 2, 23073)
    assert transfer.confirmations == 5
    assert transfer.block_height == 848136
    assert transfer.block_time == datetime(2024, 6, 16, 5, 51, 11, tzinfo=UTC)


def test_two_outputs_to_the_same_address_are_two_transfers(loopback, sleeps):
    both = tx(txid(7), [(None, 0), (OURS, 1000), (OTHER, 5), (OURS, 2500)], height=100, at=1)
    loopback.route("GET", TIP, body="100")
    loopback.route("GET", txs_path(OURS), json_body=[both])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [(t.index, t.amount_base, t.confirmations) for t in result.transfers] == [
        (1, 1000, 1),
        (3, 2500, 1),
    ]


def test_mempool_transaction_has_no_confirmations_and_no_block(loopback, sleeps):
    unconfirmed = sample("esplora/tx-unconfirmed.json")["response"]
    watched = "1stAprEZapjCYGUACUcXohQqSHF9MU5Kj"
    loopback.route("GET", TIP, body="698767")
    loopback.route("GET", txs_path(watched), json_body=[unconfirmed])

    result = adapter(loopback, sleeps).scan([WatchTarget(watched)])

    assert result.transfers == [
        ObservedTransfer(
            network="bitcoin",
            txid=unconfirmed["txid"],
            index=0,
            address=watched,
            asset="BTC",
            amount_base=49040,
            confirmations=0,
        )
    ]


def test_pages_through_older_confirmed_transactions(loopback, sleeps):
    mempool = [tx(txid(n), [(OURS, n)]) for n in (1, 2)]
    first = [tx(txid(n), [(OURS, n)], height=1000 - n, at=n) for n in range(100, 125)]
    second = [tx(txid(n), [(OURS, n)], height=1000 - n, at=n) for n in range(125, 150)]
    last = [tx(txid(n), [(OURS, n)], height=1000 - n, at=n) for n in range(150, 153)]
    loopback.route("GET", TIP, body="1000")
    loopback.route("GET", txs_path(OURS), json_body=mempool + first)
    loopback.route("GET", chain_path(OURS, txid(124)), json_body=second)
    loopback.route("GET", chain_path(OURS, txid(149)), json_body=last)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [r.path for r in loopback.requests] == [
        TIP,
        txs_path(OURS),
        chain_path(OURS, txid(124)),
        chain_path(OURS, txid(149)),
    ]
    expected = [1, 2, *range(100, 153)]
    assert [t.amount_base for t in result.transfers] == expected
    assert [t.txid for t in result.transfers] == [txid(n) for n in expected]
    assert [t.confirmations for t in result.transfers[:3]] == [0, 0, 101]
    assert result.transfers[-1].confirmations == 153


def test_a_short_first_page_needs_no_paging(loopback, sleeps):
    loopback.route("GET", TIP, body="1000")
    page = [tx(txid(n), [(OURS, n)], height=900) for n in range(1, 25)]
    loopback.route("GET", txs_path(OURS), json_body=page)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert len(result.transfers) == 24
    assert len(loopback.requests) == 2


def test_stops_paging_at_the_cap_and_logs_it(loopback, sleeps, monkeypatch, caplog):
    monkeypatch.setattr(esplora, "MAX_CHAIN_PAGES", 2)

    def page_after(request):
        start = int(request.path.rsplit("/", 1)[1], 16) + 1
        return 200, {}, [tx(txid(n), [(OURS, 1)], height=10) for n in range(start, start + 25)]

    loopback.route("GET", TIP, body="10")
    loopback.route(
        "GET", txs_path(OURS), json_body=[tx(txid(n), [(OURS, 1)], height=10) for n in range(25)]
    )
    loopback.route("GET", chain_path(OURS, txid(24)), handler=page_after)
    loopback.route("GET", chain_path(OURS, txid(49)), handler=page_after)

    with caplog.at_level(logging.WARNING, logger="kernodeck.payments.chains.esplora"):
        result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert len(result.transfers) == 75
    assert len(loopback.requests) == 4
    assert "stopped paging" in caplog.text
    assert OURS in caplog.text


def test_deduplicates_outputs_seen_twice(loopback, sleeps):
    once = tx(txid(5), [(OURS, 700)], height=50)
    loopback.route("GET", TIP, body="50")
    # A block found between two page requests can show the same transaction on both.
    loopback.route("GET", txs_path(OURS), json_body=[once, once])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS), WatchTarget(OURS)])

    assert [(t.txid, t.index) for t in result.transfers] == [(txid(5), 0)]
    assert [r.path for r in loopback.requests] == [TIP, txs_path(OURS)]


def test_several_addresses_in_one_scan(loopback, sleeps):
    loopback.route("GET", TIP, body="50")
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(1), [(OURS, 10), (OTHER, 20)])])
    loopback.route("GET", txs_path(OTHER), json_body=[tx(txid(2), [(OTHER, 30)], height=49)])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS), WatchTarget(OTHER)])

    assert [
        (t.address, t.txid, t.index, t.amount_base, t.confirmations) for t in result.transfers
    ] == [
        (OURS, txid(1), 0, 10, 0),
        (OTHER, txid(2), 0, 30, 2),
    ]


def test_a_replaced_mempool_transaction_is_no_longer_reported(loopback, sleeps):
    original = tx(txid(0xA), [(OURS, 5000)])
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body=[original])
    watcher = adapter(loopback, sleeps)

    first = watcher.scan([WatchTarget(OURS)])
    # Replaced by fee (RBF) with a version paying elsewhere: the address's history is empty.
    loopback.route("GET", txs_path(OURS), json_body=[])
    second = watcher.scan([WatchTarget(OURS)])

    assert [(t.txid, t.confirmations) for t in first.transfers] == [(txid(0xA), 0)]
    assert second.transfers == []


def test_confirmations_go_down_when_the_block_is_reorged_out(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(3), [(OURS, 1)], height=798, at=5)])
    watcher = adapter(loopback, sleeps)

    before = watcher.scan([WatchTarget(OURS)])
    # Blocks 798-800 replaced by a competing chain; the tx made it into the new block 800.
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(3), [(OURS, 1)], height=800, at=9)])
    after = watcher.scan([WatchTarget(OURS)])

    assert [(t.confirmations, t.block_height) for t in before.transfers] == [(3, 798)]
    assert [(t.confirmations, t.block_height) for t in after.transfers] == [(1, 800)]
    assert after.transfers[0].block_time == datetime.fromtimestamp(EPOCH + 9, tz=UTC)


def test_a_block_newer_than_the_tip_counts_one_confirmation(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body=[tx(txid(4), [(OURS, 1)], height=801)])

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert transfer.confirmations == 1


def test_litecoin_reports_ltc(loopback, sleeps):
    address = "ltc1qg82tl6ryn3mpycmrqn5fu6u5f4rz3x6rg5r6az"
    loopback.route("GET", TIP, body="2700000")
    loopback.route(
        "GET", txs_path(address), json_body=[tx(txid(9), [(address, 12345678)], 2699990)]
    )

    result = adapter(loopback, sleeps, network="litecoin").scan([WatchTarget(address)])

    [transfer] = result.transfers
    assert (transfer.network, transfer.asset, transfer.amount_base) == (
        "litecoin",
        "LTC",
        12345678,
    )
    assert transfer.confirmations == 11


def test_refuses_an_unknown_network():
    with pytest.raises(ValueError, match="dogecoin"):
        EsploraAdapter("dogecoin", "http://127.0.0.1:9")


def test_retries_after_429_waiting_as_asked(loopback, sleeps):
    loopback.route(
        "GET",
        TIP,
        Reply(status=429, body="Too Many Requests", headers={"Retry-After": "3"}),
        Reply(body="500"),
    )
    loopback.route("GET", txs_path(OURS), json_body=[])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert result.tip == 500
    assert sleeps == [3.0]
    assert [r.path for r in loopback.requests] == [TIP, TIP, txs_path(OURS)]


def test_server_error_three_times_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), status=500, body="Internal Server Error")

    with pytest.raises(ChainError, match=r"127\.0\.0\.1:\d+: HTTP 500.*after 3 attempts"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [r.path for r in loopback.requests] == [TIP] + [txs_path(OURS)] * 3
    assert sleeps == [0.5, 1.0]


def test_timeout_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800", delay=2.0)

    with pytest.raises(ChainError, match=r"timed out after 0\.2 s"):
        adapter(loopback, sleeps, timeout=0.2).scan([WatchTarget(OURS)])

    assert len(loopback.requests) == 3


def test_malformed_json_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), body='[{"txid": "ab', content_type="application/json")

    with pytest.raises(ChainError, match="not valid JSON"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert len(loopback.requests) == 4


def test_a_body_of_the_wrong_shape_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path(OURS), json_body={"error": "nope"})

    with pytest.raises(ChainError, match="not a list of transactions"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])


def test_a_tip_that_is_not_a_number_is_a_chain_error(loopback, sleeps):
    loopback.route("GET", TIP, body="<html>maintenance</html>")

    with pytest.raises(ChainError, match="tip height is not a number"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])


def test_a_refused_address_fails_at_once_with_the_servers_words(loopback, sleeps):
    loopback.route("GET", TIP, body="800")
    loopback.route("GET", txs_path("garbage"), sample_reply("esplora/error-invalid-address.json"))

    with pytest.raises(ChainError, match="HTTP 400: Invalid Bitcoin address"):
        adapter(loopback, sleeps).scan([WatchTarget("garbage")])

    # A 400 says the request is wrong: asking again would get the same answer.
    assert [r.path for r in loopback.requests] == [TIP, txs_path("garbage")]
    assert sleeps == []


def test_addresses_are_fetched_concurrently_up_to_the_limit(loopback, sleeps):
    import threading
    import time

    running, most = [0], [0]
    lock = threading.Lock()

    def slow_history(request):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
        address = request.path.split("/")[3]
        return 200, {}, [tx(txid(int(address[-2:])), [(address, 1000)])]

    addresses = [f"{OTHER[:-2]}{n:02d}" for n in range(12)]
    loopback.route("GET", TIP, body="100", content_type="text/plain")
    for address in addresses:
        loopback.route("GET", txs_path(address), handler=slow_history)

    began = time.monotonic()
    result = adapter(loopback, sleeps, concurrency=4).scan([WatchTarget(a) for a in addresses])

    assert most[0] == 4
    assert time.monotonic() - began < 12 * 0.1
    assert [t.address for t in result.transfers] == addresses  # in the targets' order


def test_a_failing_address_fails_the_concurrent_scan(loopback, sleeps):
    addresses = [f"{OTHER[:-2]}{n:02d}" for n in range(6)]
    loopback.route("GET", TIP, body="100", content_type="text/plain")
    for address in addresses:
        loopback.route("GET", txs_path(address), json_body=[])
    loopback.route("GET", txs_path(addresses[3]), status=400, body="Invalid Bitcoin address")

    with pytest.raises(ChainError, match="Invalid Bitcoin address"):
        adapter(loopback, sleeps, concurrency=3).scan([WatchTarget(a) for a in addresses])


# -- block scanning ---------------------------------------------------------------------


def block_hash(n: int) -> str:
    return f"{n:064x}"


def serve_blocks(loopback, tip: int, *, mempool=(), txs_of=None):
    """Blocks up to `tip` whose hash is their height; block `h` holds txs_of(h)."""
    txs_of = txs_of or (lambda height: [])
    loopback.route("GET", "/api/mempool/txids", json_body=list(mempool))
    loopback.route("GET", TIP, body=str(tip), content_type="text/plain")
    for height in range(tip - 5, tip + 1):
        loopback.route("GET", f"/api/block-height/{height}", body=block_hash(height))
        txs = txs_of(height)
        info = {"id": block_hash(height), "height": height, "timestamp": EPOCH + height}
        loopback.route(
            "GET", f"/api/block/{block_hash(height)}", json_body={**info, "tx_count": len(txs)}
        )
        for start in range(0, len(txs), 25):
            loopback.route(
                "GET",
                f"/api/block/{block_hash(height)}/txs/{start}",
                json_body=txs[start : start + 25],
            )


def test_block_scan_reads_each_new_block_page_by_page(loopback, sleeps):
    strangers = [tx(txid(n), [(OTHER, 1000)]) for n in range(30)]
    ours = tx(txid(99), [(OTHER, 5), (OURS.upper(), 70_000)])
    serve_blocks(loopback, 102, txs_of=lambda h: [*strangers, ours] if h == 102 else [])

    scan = adapter(loopback, sleeps).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=[[100, block_hash(100)]]
    )

    [transfer] = scan.transfers
    assert (transfer.txid, transfer.index, transfer.address) == (txid(99), 1, OURS)
    assert (transfer.block_height, transfer.confirmations) == (102, 1)
    assert (scan.blocks, scan.rescanned_from, scan.fallback) == (
        [[100, block_hash(100)], [101, block_hash(101)], [102, block_hash(102)]],
        101,
        "",
    )
    pages = [r.path for r in loopback.requests if "/txs/" in r.path]
    assert sorted(pages) == [
        f"/api/block/{block_hash(102)}/txs/0",
        f"/api/block/{block_hash(102)}/txs/25",
    ]


def test_block_scan_walks_back_to_the_fork_after_a_reorg(loopback, sleeps):
    serve_blocks(loopback, 103)
    stored = [[100, block_hash(100)], [101, "ee" * 32], [102, "ff" * 32]]  # 101, 102 replaced

    scan = adapter(loopback, sleeps).scan_blocks(watched_among([WatchTarget(OURS)]), blocks=stored)

    assert scan.rescanned_from == 101
    assert [height for height, _ in scan.blocks] == [100, 101, 102, 103]


@pytest.mark.parametrize(
    ("blocks", "mempool", "reason"),
    [
        ([], [], "no block scanned yet"),
        ([[100, "ee" * 32]], [], "a reorg deeper than we keep"),
        ([[100, block_hash(100)]], [txid(n) for n in range(5)], "5 new mempool txs"),
    ],
)
def test_block_scan_falls_back_when_it_cannot_follow(loopback, sleeps, blocks, mempool, reason):
    serve_blocks(loopback, 102, mempool=mempool)

    scan = adapter(loopback, sleeps, mempool_budget=4).scan_blocks(
        watched_among([WatchTarget(OURS)]), blocks=blocks
    )

    assert (scan.fallback, scan.blocks, scan.transfers) == (reason, [[102, block_hash(102)]], [])


@pytest.mark.parametrize(
    ("path", "reply"),
    [
        ("/api/mempool/txids", Reply(json_body={"txids": []})),
        ("/api/mempool/txids", Reply(json_body=["<script>"])),
        ("/api/block-height/101", Reply(body="not a hash")),
        (f"/api/block/{block_hash(101)}", Reply(json_body={"id": block_hash(7), "tx_count": 0})),
        (
            f"/api/block/{block_hash(101)}",
            Reply(json_body={"id": block_hash(101), "tx_count": -1}),
        ),
    ],
)
def test_block_scan_refuses_nonsense_as_a_chain_error(loopback, sleeps, path, reply):
    serve_blocks(loopback, 101)
    loopback.route("GET", path, reply)

    with pytest.raises(ChainError):
        adapter(loopback, sleeps).scan_blocks(
            watched_among([WatchTarget(OURS)]), blocks=[[100, block_hash(100)]]
        )
