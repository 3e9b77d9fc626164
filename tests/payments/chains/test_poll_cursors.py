"""`scan_since`: each adapter's second pass asks only for what came after its cursor, finds
what arrived since, misses nothing across pages, and never moves a cursor past what can
still change (loopback servers; the requests they received are counted)."""

import copy
from datetime import UTC, datetime

from kernodeck.payments.chains import solana, tron
from kernodeck.payments.chains.base import WatchTarget
from kernodeck.payments.chains.esplora import EsploraAdapter
from kernodeck.payments.chains.solana import SolanaAdapter
from kernodeck.payments.chains.tron import CURSOR_MARGIN_MS, CURSOR_STEP_MS, TronAdapter
from tests.loopback import sample
from tests.payments.chains.test_solana import (
    RECIPIENT,
    REFERENCE,
    payment,
    signature_entry,
)
from tests.payments.chains.test_tron import (
    OURS,
    SOLIDIFIED,
    TIP,
    TRX_HEIGHT,
    USDT,
    trc20_item,
    trx_item,
    tx_info,
    txid,
)
from tests.payments.esplora_chain import EsploraChain

# -- Tron: min_timestamp from the solidified head's time ---------------------------------

SOLID_MS = 1_762_021_014_000  # the getnowblock sample's block time


def tron_head(number: int, ms: int = SOLID_MS) -> dict:
    block = copy.deepcopy(sample("tron/wallet-getnowblock.json")["response"])
    block["block_header"]["raw_data"].update(number=number, timestamp=ms)
    return block


class TimedTronGrid:
    """TronGrid's two lists of `address`, honouring min_timestamp and paging by fingerprint
    (`page` items a page, newest first), and the transaction infos."""

    def __init__(self, loopback, page: int = 200, address: str = OURS):
        self.address = address
        self.trx: list[dict] = []
        self.trc20: list[dict] = []
        self.infos: dict[str, dict] = {}
        self.page = page
        self.solid_ms = SOLID_MS
        loopback.route("POST", "/wallet/getnowblock", handler=lambda r: (200, {}, tron_head(TIP)))
        loopback.route(
            "POST",
            "/walletsolidity/getnowblock",
            handler=lambda r: (200, {}, tron_head(SOLIDIFIED, self.solid_ms)),
        )
        loopback.route(
            "POST",
            "/wallet/gettransactioninfobyid",
            handler=lambda r: (200, {}, self.infos.get(r.json()["value"], {})),
        )
        base = f"/v1/accounts/{address}/transactions"
        loopback.route("GET", base, handler=self.lister("trx"))
        loopback.route("GET", f"{base}/trc20", handler=self.lister("trc20"))

    def lister(self, name: str):
        def answer(request):
            since = int(request.query.get("min_timestamp", 0))
            items = [i for i in getattr(self, name) if i["block_timestamp"] >= since]
            items.sort(key=lambda item: -item["block_timestamp"])
            start = int(request.query.get("fingerprint", 0))
            data = items[start : start + self.page]
            meta = {"at": 1, "page_size": len(data)}
            if start + self.page < len(items):
                meta["fingerprint"] = str(start + self.page)
            return 200, {}, {"data": data, "success": True, "meta": meta}

        return answer

    def pay_trx(self, n: int, ms: int) -> None:
        item = trx_item(txid(n), sun=1_000_000 + n, height=TRX_HEIGHT)
        item["block_timestamp"] = ms
        self.trx.append(item)

    def pay_usdt(self, n: int, ms: int, *, indexed: bool = True, amount: int | None = None):
        amount = 5_000_000 + n if amount is None else amount
        item = trc20_item(txid(n), value=str(amount), to=self.address)
        item["block_timestamp"] = ms
        self.trc20.append(item)
        if indexed:
            events = [(USDT, self.address, amount)]
            self.infos[txid(n)] = tx_info(txid(n), TRX_HEIGHT, events)


def lists_asked(loopback, after: int = 0) -> list[dict]:
    """The queries of the v1 lists among the requests after the first `after`."""
    return [r.query for r in loopback.requests[after:] if r.path.startswith("/v1/accounts/")]


def test_tron_second_pass_asks_only_since_the_cursor_and_finds_what_came(loopback, sleeps):
    grid = TimedTronGrid(loopback)
    grid.pay_trx(1, SOLID_MS - 3_600_000)
    adapter = TronAdapter(loopback.url, sleep=sleeps.append)

    first = adapter.scan_since([WatchTarget(OURS)], cursors={})

    assert [t.txid for t in first.transfers] == [txid(1)]
    assert first.cursors == {OURS: str(SOLID_MS - CURSOR_MARGIN_MS)}
    assert first.complete == {OURS}
    assert all("min_timestamp" not in query for query in lists_asked(loopback))

    seen = len(loopback.requests)
    grid.pay_usdt(2, SOLID_MS + 3_000)  # after the cursor, not solidified yet
    grid.solid_ms = SOLID_MS + CURSOR_STEP_MS
    second = adapter.scan_since([WatchTarget(OURS)], cursors=first.cursors)

    assert [(t.txid, t.asset, t.amount_base) for t in second.transfers] == [
        (txid(2), "USDT", 5_000_002)
    ]
    assert [q.get("min_timestamp") for q in lists_asked(loopback, seen)] == [
        first.cursors[OURS]
    ] * 2
    assert second.cursors == {OURS: str(SOLID_MS + CURSOR_STEP_MS - CURSOR_MARGIN_MS)}
    infos = [r for r in loopback.requests[seen:] if r.path == "/wallet/gettransactioninfobyid"]
    assert len(infos) == 1  # the old transfer's list item is not read, nor looked up again


def test_tron_cursor_moves_on_only_by_a_step_so_idle_passes_rewrite_none(loopback, sleeps):
    grid = TimedTronGrid(loopback)
    adapter = TronAdapter(loopback.url, sleep=sleeps.append)
    first = adapter.scan_since([WatchTarget(OURS)], cursors={})

    grid.solid_ms = SOLID_MS + CURSOR_STEP_MS - 3_000  # a few passes later
    kept = adapter.scan_since([WatchTarget(OURS)], cursors=first.cursors)
    grid.pay_trx(4, SOLID_MS + 1_000)  # after the cursor: still read from it
    grid.solid_ms = SOLID_MS + CURSOR_STEP_MS
    moved = adapter.scan_since([WatchTarget(OURS)], cursors=kept.cursors)

    assert (kept.cursors, kept.complete) == (first.cursors, {OURS})
    assert [t.txid for t in moved.transfers] == [txid(4)]
    assert moved.cursors == {OURS: str(SOLID_MS + CURSOR_STEP_MS - CURSOR_MARGIN_MS)}


def test_tron_reads_every_page_since_the_cursor_and_a_cut_list_keeps_it(
    loopback, sleeps, monkeypatch
):
    grid = TimedTronGrid(loopback, page=2)
    for n in range(1, 6):
        grid.pay_trx(n, SOLID_MS - 100_000 + n)
    adapter = TronAdapter(loopback.url, sleep=sleeps.append)

    whole = adapter.scan_since([WatchTarget(OURS)], cursors={OURS: str(SOLID_MS - 200_000)})

    assert sorted(t.txid for t in whole.transfers) == [txid(n) for n in range(1, 6)]
    paths = [r.path for r in loopback.requests if r.path.startswith("/v1/accounts/")]
    assert paths.count(f"/v1/accounts/{OURS}/transactions") == 3  # 2 + 2 + 1 items

    monkeypatch.setattr(tron, "MAX_PAGES", 2)
    cut = adapter.scan_since([WatchTarget(OURS)], cursors={OURS: str(SOLID_MS - 200_000)})

    assert cut.cursors == {OURS: str(SOLID_MS - 200_000)}  # where it was: older items unread
    assert cut.complete == frozenset()


def test_tron_cursor_stays_before_a_transaction_the_node_lacks_yet(loopback, sleeps):
    grid = TimedTronGrid(loopback)
    waiting = SOLID_MS - CURSOR_MARGIN_MS - 5_000
    grid.pay_usdt(3, waiting, indexed=False)
    adapter = TronAdapter(loopback.url, sleep=sleeps.append)

    first = adapter.scan_since([WatchTarget(OURS)], cursors={})

    assert first.transfers == []
    assert first.cursors == {OURS: str(waiting)}  # read again until the node has it
    grid.infos[txid(3)] = tx_info(txid(3), TRX_HEIGHT, [(USDT, OURS, 5_000_003)])
    second = adapter.scan_since([WatchTarget(OURS)], cursors=first.cursors)
    assert [t.txid for t in second.transfers] == [txid(3)]


def test_tron_reads_addresses_concurrently_and_answers_as_address_after_address(loopback, sleeps):
    addresses = [OURS] + [tron.to_base58_address(f"41{n:040x}") for n in range(1, 6)]
    grids = [TimedTronGrid(loopback, address=address) for address in addresses]
    infos = grids[-1].infos  # the last grid's route answers every lookup
    for grid in grids:
        grid.infos = infos
    grids[0].pay_trx(1, SOLID_MS - 3_600_000)
    grids[2].pay_usdt(2, SOLID_MS - 60_000)
    grids[4].pay_usdt(3, SOLID_MS - CURSOR_MARGIN_MS - 5_000, indexed=False)  # not on the node
    targets = [WatchTarget(address) for address in addresses]
    cursors = {addresses[3]: str(SOLID_MS - 7_200_000)}

    one = TronAdapter(loopback.url, sleep=sleeps.append).scan_since(targets, cursors=cursors)
    asked = len(lists_asked(loopback))
    many = TronAdapter(loopback.url, sleep=sleeps.append, concurrency=4).scan_since(
        targets, cursors=cursors
    )

    assert many == one
    assert [(t.txid, t.address) for t in many.transfers] == [
        (txid(1), OURS),
        (txid(2), addresses[2]),
    ]
    assert many.undecided == {txid(3)}
    assert many.cursors[addresses[4]] == str(SOLID_MS - CURSOR_MARGIN_MS - 5_000)
    assert many.cursors[addresses[0]] == str(SOLID_MS - CURSOR_MARGIN_MS)
    assert many.complete == set(addresses)
    assert len(lists_asked(loopback)) == 2 * asked == 2 * 2 * len(addresses)
    assert [q.get("min_timestamp") for q in lists_asked(loopback, 0)].count(
        cursors[addresses[3]]
    ) == 4  # both lists of the address with a cursor, in both scans


# -- Solana: the recipient's signatures `until` the cursor -------------------------------


def sig(n: int) -> str:
    return "sig" + "abcdefghijkmnopqrstuvwxyz"[n] + "1" * 61


class PagedNode:
    """getSlot, getSignaturesForAddress honouring until, before and limit (newest first),
    and getTransaction."""

    def __init__(self):
        self.signatures: dict[str, list[dict]] = {}
        self.transactions: dict[str, dict] = {}
        self.calls: list[tuple[str, list]] = []

    def pay(
        self,
        n: int,
        slot: int,
        *,
        status: str = "finalized",
        reference=REFERENCE,
        lamports: int | None = None,
        recipient: str = RECIPIENT,
    ):
        entry = signature_entry(sig(n), slot, status=status)
        self.signatures.setdefault(recipient, []).insert(0, entry)
        if reference:
            self.signatures.setdefault(reference, []).insert(0, entry)
        lamports = 1_000_000 + n if lamports is None else lamports
        transaction = payment(lamports, slot, reference=reference)
        keys = transaction["transaction"]["message"]["accountKeys"]
        keys[keys.index(RECIPIENT)] = recipient
        self.transactions[sig(n)] = transaction

    def __call__(self, request):
        call = request.json()
        method, params = call["method"], call["params"]
        self.calls.append((method, params))
        if method == "getSlot":
            result = 2000
        elif method == "getTransaction":
            result = self.transactions.get(params[0])
        else:
            entries = self.signatures.get(params[0], [])
            names = [entry["signature"] for entry in entries]
            options = params[1]
            end = names.index(options["until"]) if "until" in options else len(entries)
            start = names.index(options["before"]) + 1 if "before" in options else 0
            result = entries[start:end][: options["limit"]]
        return 200, {}, {"jsonrpc": "2.0", "id": call["id"], "result": result}

    def listed(self) -> list[tuple[str, dict]]:
        return [(p[0], p[1]) for m, p in self.calls if m == "getSignaturesForAddress"]


def test_solana_second_pass_lists_the_recipient_until_its_cursor_only(loopback, sleeps):
    node = PagedNode()
    node.pay(0, 1000)
    node.pay(1, 1001, status="confirmed")  # may still change: the cursor stays before it
    loopback.route("POST", "/", handler=node)
    adapter = SolanaAdapter(loopback.url, sleep=sleeps.append)
    targets = [WatchTarget(RECIPIENT, REFERENCE), WatchTarget(RECIPIENT)]

    first = adapter.scan_since(targets, cursors={})

    assert sorted(t.txid for t in first.transfers) == [sig(0), sig(1)]
    assert first.cursors == {RECIPIENT: sig(0)}
    assert [key for key, _ in node.listed()] == [REFERENCE, RECIPIENT]  # no cursor yet

    node.calls.clear()
    node.pay(2, 1002, status="confirmed")
    second = adapter.scan_since(targets, cursors=first.cursors)

    assert node.listed() == [
        (RECIPIENT, {"limit": solana.SIGNATURES_LIMIT, "commitment": "confirmed", "until": sig(0)})
    ]
    assert sorted(t.txid for t in second.transfers) == [sig(1), sig(2)]  # the window again
    assert {t.reference for t in second.transfers} == {REFERENCE}
    assert second.cursors == {RECIPIENT: sig(0)}
    assert second.complete == {RECIPIENT}


def test_solana_follows_pages_back_to_the_cursor(loopback, sleeps, monkeypatch):
    monkeypatch.setattr(solana, "SIGNATURES_LIMIT", 2)
    node = PagedNode()
    for n in range(6):
        node.pay(n, 1000 + n, reference=None)
    loopback.route("POST", "/", handler=node)
    adapter = SolanaAdapter(loopback.url, sleep=sleeps.append)

    result = adapter.scan_since([WatchTarget(RECIPIENT)], cursors={RECIPIENT: sig(0)})

    assert sorted(t.txid for t in result.transfers) == [sig(n) for n in range(1, 6)]
    assert [options.get("before") for _key, options in node.listed()] == [None, sig(4), sig(2)]
    assert result.cursors == {RECIPIENT: sig(5)}

    monkeypatch.setattr(solana, "MAX_SIGNATURE_PAGES", 2)
    cut = adapter.scan_since([WatchTarget(RECIPIENT)], cursors={RECIPIENT: sig(0)})
    assert (cut.cursors, cut.complete) == ({RECIPIENT: sig(0)}, frozenset())


def test_solana_a_recipient_without_history_is_read_whole_without_its_references(loopback, sleeps):
    node = PagedNode()
    loopback.route("POST", "/", handler=node)
    adapter = SolanaAdapter(loopback.url, sleep=sleeps.append)
    targets = [WatchTarget(RECIPIENT, REFERENCE), WatchTarget(RECIPIENT)]

    first = adapter.scan_since(targets, cursors={})
    assert first.cursors == {RECIPIENT: solana.FROM_THE_START}

    node.calls.clear()
    node.pay(0, 1000)
    second = adapter.scan_since(targets, cursors=first.cursors)
    assert node.listed() == [
        (RECIPIENT, {"limit": solana.SIGNATURES_LIMIT, "commitment": "confirmed"})
    ]
    assert [(t.txid, t.reference) for t in second.transfers] == [(sig(0), REFERENCE)]
    assert second.cursors == {RECIPIENT: sig(0)}


# -- Esplora: the address's counters, then its history only when they moved -------------

ADDRESS = "bc1qpollcursor0000000000000000000000000000"
MINED = datetime(2026, 12, 1, tzinfo=UTC)


def test_esplora_second_pass_reads_only_the_counters_until_they_move(loopback, sleeps):
    chain = EsploraChain(loopback, at=MINED)
    chain.pay(ADDRESS, 50_000)
    chain.mine(at=MINED)
    adapter = EsploraAdapter("bitcoin", loopback.url, sleep=sleeps.append)
    targets = [WatchTarget(ADDRESS)]

    first = adapter.scan_since(targets, cursors={})
    assert [t.amount_base for t in first.transfers] == [50_000]

    seen = len(loopback.requests)
    idle = adapter.scan_since(targets, cursors=first.cursors)
    assert idle.transfers == [] and idle.complete == frozenset()
    asked = [r.path for r in loopback.requests[seen:]]
    assert asked == ["/blocks/tip/height", f"/address/{ADDRESS}"]

    chain.pay(ADDRESS, 70_000)
    moved = adapter.scan_since(targets, cursors=first.cursors)
    assert sorted(t.amount_base for t in moved.transfers) == [50_000, 70_000]
    assert moved.complete == {ADDRESS} and moved.cursors != first.cursors


def test_esplora_reads_every_page_of_a_moved_address(loopback, sleeps):
    chain = EsploraChain(loopback, at=MINED)
    for n in range(30):  # more than a page (25) of confirmed transactions
        chain.pay(ADDRESS, 10_000 + n)
    chain.mine(at=MINED)
    adapter = EsploraAdapter("bitcoin", loopback.url, sleep=sleeps.append)

    result = adapter.scan_since([WatchTarget(ADDRESS)], cursors={ADDRESS: "0" * 32})

    assert sorted(t.amount_base for t in result.transfers) == [10_000 + n for n in range(30)]
    assert any("/txs/chain/" in r.path for r in loopback.requests)


def test_esplora_an_address_never_paid_costs_its_history_only(loopback, sleeps):
    EsploraChain(loopback, at=MINED)
    adapter = EsploraAdapter("bitcoin", loopback.url, sleep=sleeps.append)

    result = adapter.scan_since([WatchTarget(ADDRESS)], cursors={})

    assert [r.path for r in loopback.requests] == ["/blocks/tip/height", f"/address/{ADDRESS}/txs"]
    assert (result.cursors, result.complete) == ({}, {ADDRESS})


def test_esplora_counters_that_count_other_transactions_are_no_cursor(loopback, sleeps):
    chain = EsploraChain(loopback, at=MINED)
    chain.pay(ADDRESS, 50_000)
    chain.mine(at=MINED)
    stats = {"tx_count": 2, "funded_txo_count": 2, "funded_txo_sum": 1, "spent_txo_count": 0}
    idle = {**stats, "tx_count": 0}
    # One more came between the history and the counters: they are not the cursor.
    loopback.route(
        "GET", f"/address/{ADDRESS}", json_body={"chain_stats": stats, "mempool_stats": idle}
    )
    adapter = EsploraAdapter("bitcoin", loopback.url, sleep=sleeps.append)

    result = adapter.scan_since([WatchTarget(ADDRESS)], cursors={})

    assert [t.amount_base for t in result.transfers] == [50_000]
    assert result.cursors == {}
