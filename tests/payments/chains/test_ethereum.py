import copy
from datetime import UTC, datetime

import pytest

from kernodeck.core import clock
from kernodeck.payments.chains.base import ChainError, ObservedTransfer, WatchTarget
from kernodeck.payments.chains.ethereum import TRANSFER_TOPIC, EthereumAdapter
from tests.loopback import Reply, sample

OURS = "0x52908400098527886E0F7030069857D2E4169EE7"  # EIP-55 test vector (all caps)
OURS_TOO = "0xde709f2102306220921060314715629080e2fB77"  # EIP-55 test vector (all lower)
STRANGER = "0x6481bda5bc92a52a4fec49a0479289fe59802fe4"  # the payer of the samples
USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
FAKE_USDT = "0x6b175474e89094c44da98b954eedeac495271d0f"  # any other contract
GENESIS_TIME = 1_767_225_600  # 2026-01-01T00:00:00Z; block n is 12 s per block after it


def block_time(number: int) -> datetime:
    return datetime.fromtimestamp(GENESIS_TIME + 12 * number, tz=UTC)


def txid(n: int) -> str:
    return f"0x{n:064x}"


def topic(address: str) -> str:
    return "0x" + address[2:].lower().rjust(64, "0")


class RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class FakeNode:
    """An Ethereum node behind the loopback server: blocks, logs and receipts in memory,
    answered in the shapes of the samples (read here: the handler runs in the server's
    thread, where nothing should read files or fail)."""

    def __init__(self, tip: int, finalized: int | None = None, max_log_range: int | None = None):
        self.block_template = sample("ethereum/eth_getBlockByNumber-finalized-full.json")[
            "response"
        ]["result"]
        self.receipt_template = sample("ethereum/eth_getTransactionReceipt-success.json")[
            "response"
        ]["result"]
        self.log_templates = {
            name: sample(f"ethereum/eth_getLogs-{name}.json")["response"]["result"][0]
            for name in ("erc20-transfer", "topic-filter")
        }
        self.tip = tip
        self.finalized = finalized  # None: the node refuses the `finalized` tag
        self.max_log_range = max_log_range
        self.transactions: dict[int, list[dict]] = {}
        self.logs: list[dict] = []
        self.receipts: dict[str, dict | None] = {}
        self.calls: list[tuple[str, list]] = []
        self.chain_id = 1
        self.balances: dict[str, int] = {}  # lower-case address -> wei

    def handler(self, request):
        body = request.json()
        self.calls.append((body["method"], body["params"]))
        try:
            result = getattr(self, body["method"])(*body["params"])
        except RpcError as error:
            reply = {"code": error.code, "message": error.message}
            return 200, {}, {"jsonrpc": "2.0", "id": body["id"], "error": reply}
        return 200, {}, {"jsonrpc": "2.0", "id": body["id"], "result": result}

    def calls_of(self, method: str) -> list[list]:
        return [params for name, params in self.calls if name == method]

    # What the tests put on the chain.

    def add_log(
        self,
        number: int,
        tx: str,
        index: int,
        *,
        to: str = OURS,
        contract: str = USDT,
        amount: int = 1,
        with_time: bool = False,
        **fields,
    ) -> dict:
        """A Transfer log shaped like the erc20 sample (topic-filter sample with `with_time`)."""
        name = "topic-filter" if with_time else "erc20-transfer"
        log = copy.deepcopy(self.log_templates[name])
        log.update(
            address=contract.lower(),
            topics=[TRANSFER_TOPIC, topic(STRANGER), topic(to)],
            data=f"0x{amount:064x}",
            blockNumber=hex(number),
            blockHash=self.block_hash(number),
            transactionHash=tx,
            logIndex=hex(index),
            **fields,
        )
        if with_time:
            log["blockTimestamp"] = hex(GENESIS_TIME + 12 * number)
        self.logs.append(log)
        return log

    def add_payment(self, number: int, tx: str, *, to: str, wei: int, status: str | None = "0x1"):
        """An ether transaction in block `number`; `status` None stores no receipt at all."""
        template = copy.deepcopy(self.block_template["transactions"][3])  # an ether transfer
        template.update(hash=tx, to=to.lower(), value=hex(wei), blockNumber=hex(number))
        self.transactions.setdefault(number, []).append(template)
        if status is None:
            self.receipts[tx] = None
            return
        receipt = copy.deepcopy(self.receipt_template)
        receipt.update(
            transactionHash=tx,
            blockNumber=hex(number),
            blockHash=self.block_hash(number),
            to=to.lower(),
            status=status,
            logs=[],
        )
        self.receipts[tx] = receipt

    def block_hash(self, number: int) -> str:
        return f"0x{number:064x}"

    # JSON-RPC methods.

    def eth_blockNumber(self):
        return hex(self.tip)

    def eth_chainId(self):
        return hex(self.chain_id)

    def eth_getBalance(self, address, tag):
        return hex(self.balances.get(address.lower(), 0))

    def eth_getBlockByNumber(self, tag, full):
        if tag == "finalized":
            if self.finalized is None:
                raise RpcError(-39001, "Unknown block")
            number = self.finalized
        else:
            number = int(tag, 16)
        if number > self.tip:
            return None
        block = copy.deepcopy(self.block_template)
        transactions = self.transactions.get(number, [])
        block.update(
            number=hex(number),
            hash=self.block_hash(number),
            timestamp=hex(GENESIS_TIME + 12 * number),
            transactions=transactions if full else [tx["hash"] for tx in transactions],
        )
        return block

    def eth_getTransactionReceipt(self, tx):
        return self.receipts.get(tx)

    def eth_getLogs(self, query):
        start, end = int(query["fromBlock"], 16), int(query["toBlock"], 16)
        if self.max_log_range is not None and end - start + 1 > self.max_log_range:
            raise RpcError(-32005, "query returned more than 10000 results")
        first, _, recipients = query["topics"]
        return [
            log
            for log in self.logs
            if start <= int(log["blockNumber"], 16) <= end
            and log["topics"][0] == first
            and log["topics"][2] in recipients
        ]


@pytest.fixture
def node(loopback):
    node = FakeNode(tip=110, finalized=100)
    loopback.route("POST", "/rpc", handler=node.handler)
    return node


def adapter(loopback, sleeps, **kwargs) -> EthereumAdapter:
    options = {"token_contracts": {"USDT": USDT, "USDC": USDC}, **kwargs}
    return EthereumAdapter(f"{loopback.url}/rpc", sleep=sleeps.append, **options)


def test_credits_a_canonical_usdt_log_with_its_exact_amount_and_log_index(loopback, sleeps, node):
    node.add_log(105, txid(1), 0xF0, amount=123_456_789_012)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100)

    assert result.transfers == [
        ObservedTransfer(
            network="ethereum",
            txid=txid(1),
            index=240,
            address=OURS,
            asset="USDT",
            amount_base=123_456_789_012,
            confirmations=6,
            block_height=105,
            block_time=block_time(105),
            token_contract=USDT.lower(),
            block_hash=node.block_hash(105),
        )
    ]
    assert (result.tip, result.cursor) == (110, 111)
    # No contract filter (look-alike tokens must be seen too); our address padded as a topic.
    [[query]] = node.calls_of("eth_getLogs")
    assert query == {
        "fromBlock": hex(88),
        "toBlock": hex(110),
        "topics": [TRANSFER_TOPIC, None, [topic(OURS)]],
    }


def test_reads_the_recorded_erc20_log_sample(loopback, sleeps, node):
    recorded = sample("ethereum/eth_getLogs-erc20-transfer.json")["response"]["result"][0]
    ours = "0x" + recorded["topics"][2][-40:]
    number = int(recorded["blockNumber"], 16)  # 21604113
    recorded["blockHash"] = node.block_hash(number)  # the fake node's hash of that block
    node.tip = number + 2
    node.logs.append(recorded)
    clock.freeze(block_time(node.tip))  # the fake node dates this block in 2034

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(ours)], cursor=number).transfers

    # A LINK transfer: not one of our contracts, so a TOKEN with the raw amount, never credited.
    assert (transfer.asset, transfer.token_contract) == ("TOKEN", recorded["address"])
    assert transfer.amount_base == 250_750_000_000_000_000_000  # 250.75 LINK
    assert (transfer.txid, transfer.block_height) == (recorded["transactionHash"], 21_604_113)
    assert (transfer.index, transfer.confirmations) == (91, 3)


def test_reports_a_transfer_from_another_contract_as_token_with_its_contract(
    loopback, sleeps, node
):
    node.add_log(105, txid(1), 3, contract=FAKE_USDT, amount=500_000_000)
    node.add_log(106, txid(2), 0, contract=USDC.lower(), amount=7_000_000)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100)

    assert [(t.txid, t.asset, t.token_contract, t.amount_base) for t in result.transfers] == [
        (txid(1), "TOKEN", FAKE_USDT, 500_000_000),
        (txid(2), "USDC", USDC.lower(), 7_000_000),
    ]


def test_skips_removed_nft_and_zero_value_logs(loopback, sleeps, node):
    node.add_log(101, txid(1), 0, removed=True)
    nft = node.add_log(102, txid(2), 0, contract=FAKE_USDT)
    nft.update(topics=[*nft["topics"], f"0x{7:064x}"], data="0x")
    node.add_log(103, txid(3), 0, amount=0)
    node.add_log(104, txid(4), 1, amount=5)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100)

    assert [(t.txid, t.amount_base) for t in result.transfers] == [(txid(4), 5)]


def test_halves_a_range_the_node_refuses_and_still_finds_every_log(loopback, sleeps, node):
    node.tip, node.max_log_range = 2000, 150
    for number in (1500, 1650, 1800, 2000):
        node.add_log(number, txid(number), 0, amount=number)

    scanner = adapter(loopback, sleeps, block_range=500, native_scan=False)
    result = scanner.scan([WatchTarget(OURS)], cursor=1512)

    assert sorted(t.amount_base for t in result.transfers) == [1500, 1650, 1800, 2000]
    ranges = [
        (int(q["fromBlock"], 16), int(q["toBlock"], 16)) for [q] in node.calls_of("eth_getLogs")
    ]
    # 500 refused, 250 refused, then 125 at a time (kept for the rest of the scan).
    assert ranges == [
        (1500, 1999),
        (1500, 1749),
        (1500, 1624),
        (1625, 1749),
        (1750, 1874),
        (1875, 1999),
        (2000, 2000),
    ]
    assert result.cursor == 2001
    assert sleeps == []  # a refusal is an answer, not a failure to wait out


def test_a_refused_single_block_is_a_chain_error(loopback, sleeps, node):
    node.max_log_range = 0

    with pytest.raises(ChainError, match="more than 10000 results"):
        scanner = adapter(loopback, sleeps, block_range=4, native_scan=False)
        scanner.scan([WatchTarget(OURS)], cursor=108)

    sizes = [
        int(q["toBlock"], 16) - int(q["fromBlock"], 16) + 1 for [q] in node.calls_of("eth_getLogs")
    ]
    assert sizes == [4, 2, 1]


def test_other_get_logs_errors_are_not_retried_as_ranges(loopback, sleeps, node):
    def eth_getLogs(query):
        raise RpcError(-32000, "boom")

    node.eth_getLogs = eth_getLogs

    with pytest.raises(ChainError, match="-32000: boom"):
        adapter(loopback, sleeps, native_scan=False).scan([WatchTarget(OURS)], cursor=108)

    assert len(node.calls_of("eth_getLogs")) == 1


def test_credits_ether_to_our_address_and_reads_each_receipt(loopback, sleeps, node):
    node.add_payment(103, txid(1), to=OURS, wei=2 * 10**18)
    node.add_payment(104, txid(2), to=OURS_TOO, wei=5, status="0x0")
    node.add_payment(105, txid(3), to=OURS, wei=7, status=None)  # no receipt yet
    node.add_payment(105, txid(4), to=STRANGER, wei=9)
    node.add_payment(106, txid(5), to=OURS, wei=0)  # a contract call with no value

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS), WatchTarget(OURS_TOO)], cursor=103)

    assert result.transfers == [
        ObservedTransfer(
            network="ethereum",
            txid=txid(1),
            index=0,
            address=OURS,
            asset="ETH",
            amount_base=2_000_000_000_000_000_000,
            confirmations=8,
            block_height=103,
            block_time=block_time(103),
            block_hash=node.block_hash(103),
        ),
        ObservedTransfer(
            network="ethereum",
            txid=txid(2),
            index=0,
            address=OURS_TOO,
            asset="ETH",
            amount_base=5,
            confirmations=7,
            block_height=104,
            block_time=block_time(104),
            block_hash=node.block_hash(104),
            failed=True,
        ),
    ]
    assert node.calls_of("eth_getTransactionReceipt") == [
        [txid(1)],
        [txid(2)],
        [txid(3)],
    ]
    assert result.undecided == {txid(3)}  # seen, not judged: it cannot count as gone
    # Blocks 91..110: the 12 below the cursor again, then the new ones, each read once.
    numbers = [int(tag, 16) for tag, full in node.calls_of("eth_getBlockByNumber") if full]
    assert numbers == list(range(91, 111))


def test_a_receipt_without_status_counts_as_a_success(loopback, sleeps, node):
    node.add_payment(105, txid(1), to=OURS, wei=3)
    legacy = sample("ethereum/eth_getTransactionReceipt-root-no-status.json")["response"]
    node.receipts[txid(1)] = {**legacy["result"], "blockHash": node.block_hash(105)}

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=105).transfers

    assert (transfer.amount_base, transfer.failed) == (3, False)


def test_native_scan_off_reads_no_blocks_but_log_block_times(loopback, sleeps, node):
    node.add_payment(105, txid(1), to=OURS, wei=3)
    node.add_log(106, txid(2), 0, amount=4)
    node.add_log(107, txid(3), 0, amount=5, with_time=True)

    result = adapter(loopback, sleeps, native_scan=False).scan([WatchTarget(OURS)], cursor=105)

    assert [(t.txid, t.block_time) for t in result.transfers] == [
        (txid(2), block_time(106)),
        (txid(3), block_time(107)),
    ]
    # Only the log without blockTimestamp needed its block header (and not its transactions).
    # (and the last block's header, for its hash: the next scan's reorg check).
    calls = node.calls_of("eth_getBlockByNumber")
    assert calls == [["finalized", False], [hex(106), False], [hex(110), False]]


def test_confirmations_count_from_the_tip_and_final_from_the_finalized_block(
    loopback, sleeps, node
):
    node.tip, node.finalized = 120, 104
    node.add_log(104, txid(1), 0)
    node.add_log(105, txid(2), 0)
    node.add_payment(120, txid(3), to=OURS, wei=1)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=110)

    by_tx = {t.txid: (t.confirmations, t.final) for t in result.transfers}
    assert by_tx == {txid(1): (17, True), txid(2): (16, False), txid(3): (1, False)}


def test_a_node_without_a_finalized_block_reports_nothing_final(loopback, sleeps, node):
    node.finalized = None
    node.add_log(100, txid(1), 0)

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100).transfers

    assert (transfer.confirmations, transfer.final) == (11, False)
    assert sleeps == []  # the refused tag is an answer, not retried


def test_a_log_reorged_out_is_no_longer_reported(loopback, sleeps, node):
    log = node.add_log(108, txid(1), 0, amount=42)
    scanner = adapter(loopback, sleeps)

    first = scanner.scan([WatchTarget(OURS)], cursor=105)
    node.logs.remove(log)
    node.tip = 112
    node.add_log(109, txid(2), 0, amount=42)  # the same payment, mined again elsewhere
    second = scanner.scan([WatchTarget(OURS)], cursor=first.cursor)

    assert [(t.txid, t.confirmations) for t in first.transfers] == [(txid(1), 3)]
    assert [(t.txid, t.confirmations) for t in second.transfers] == [(txid(2), 4)]
    assert second.cursor == 113


def test_each_scan_rescans_below_the_cursor_until_the_transfer_is_deep(loopback, sleeps, node):
    node.tip = 108
    node.add_log(100, txid(1), 0)
    scanner = adapter(loopback, sleeps, native_scan=False)

    seen, cursor = [], 101
    for tip in (108, 111, 113, 130):
        node.tip = tip
        result = scanner.scan([WatchTarget(OURS)], cursor=cursor)
        seen.append([t.confirmations for t in result.transfers])
        cursor = result.cursor

    # Reported until a scan saw it with more than 12 confirmations, then left behind.
    assert seen == [[9], [12], [14], []]


def test_a_first_scan_starts_fifty_blocks_below_the_tip(loopback, sleeps, node):
    node.tip = 1000

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    [[query]] = node.calls_of("eth_getLogs")
    assert (query["fromBlock"], query["toBlock"]) == (hex(950), hex(1000))
    assert result.cursor == 1001


def test_a_long_way_behind_scans_at_most_max_blocks_and_resumes_there(loopback, sleeps, node):
    node.tip = 10_000
    node.add_log(1_300, txid(1), 0)
    scanner = adapter(loopback, sleeps, native_scan=False, max_blocks_per_scan=300)

    first = scanner.scan([WatchTarget(OURS)], cursor=1_012)
    second = scanner.scan([WatchTarget(OURS)], cursor=first.cursor)

    assert (first.transfers, first.cursor) == ([], 1_300)
    assert [t.txid for t in second.transfers] == [txid(1)]
    assert second.cursor == 1_588
    [first_query], [second_query] = node.calls_of("eth_getLogs")
    assert (first_query["fromBlock"], first_query["toBlock"]) == (hex(1_000), hex(1_299))
    assert (second_query["fromBlock"], second_query["toBlock"]) == (hex(1_288), hex(1_587))


def test_a_cursor_ahead_of_a_lagging_node_is_kept(loopback, sleeps, node):
    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=130)

    assert (result.transfers, result.tip, result.cursor) == ([], 110, 130)
    assert [method for method, _ in node.calls] == ["eth_blockNumber"]


def test_no_targets_reads_only_the_tip(loopback, sleeps, node):
    result = adapter(loopback, sleeps).scan([], cursor=100)

    assert (result.transfers, result.cursor) == ([], 111)
    assert [method for method, _ in node.calls] == ["eth_blockNumber"]


def test_a_thousand_addresses_cost_one_log_query_per_range(loopback, sleeps, node):
    targets = [WatchTarget(f"0x{n:040x}") for n in range(1, 1001)]
    node.add_log(109, txid(1), 0, to=targets[999].address)
    node.add_log(110, txid(2), 3, to=targets[0].address)

    result = adapter(loopback, sleeps, native_scan=False).scan(targets, cursor=109)

    paid = sorted(t.address for t in result.transfers)
    assert paid == [targets[0].address, targets[999].address]
    [[query]] = node.calls_of("eth_getLogs")
    assert (query["fromBlock"], query["toBlock"]) == (hex(109 - 12), hex(110))
    assert query["topics"][2] == [topic(t.address) for t in targets]


def test_groups_more_addresses_into_several_log_queries(loopback, sleeps, node):
    targets = [WatchTarget(f"0x{n:040x}") for n in range(1, 1151)]
    node.add_log(109, txid(1), 0, to=targets[1149].address)

    result = adapter(loopback, sleeps, native_scan=False).scan(targets, cursor=110)

    assert [t.address for t in result.transfers] == [targets[1149].address]
    assert [len(q["topics"][2]) for [q] in node.calls_of("eth_getLogs")] == [1000, 150]


def test_a_json_rpc_error_is_a_chain_error(loopback, sleeps):
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal error"}}
    loopback.route("POST", "/rpc", json_body=error)

    with pytest.raises(ChainError, match="internal error"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100)

    assert len(loopback.requests) == 3  # http.py's attempts, with its backoff between them
    assert sleeps == [0.5, 1.0]


def test_http_errors_and_bad_bodies_are_chain_errors_after_retries(loopback, sleeps):
    loopback.route("POST", "/rpc", Reply(status=503), Reply(status=429), Reply(body="<html>"))

    with pytest.raises(ChainError, match="not valid JSON"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=100)

    assert len(loopback.requests) == 3


def test_refuses_a_target_that_is_not_an_ethereum_address(loopback, sleeps, node):
    with pytest.raises(ValueError, match="not an Ethereum address"):
        adapter(loopback, sleeps).scan([WatchTarget("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")])

    assert loopback.requests == []


# -- issue 22: reorgs by hash, the node's chain and its finalized block ---------------------


def test_a_changed_block_below_the_rescan_window_sends_the_scan_back_to_the_fork(
    loopback, sleeps, node
):
    first = adapter(loopback, sleeps, rescan_depth=2).scan([WatchTarget(OURS)], cursor=100)
    assert (first.scanned_from, first.scanned_to) == (98, 110)
    assert first.blocks[-1] == [110, node.block_hash(110)]
    # Blocks from 104 on are replaced: the new branch pays us at 104, far below the window.
    stored = first.blocks
    node.block_hash = lambda number: f"0x{number + (1000 if number >= 104 else 0):064x}"
    node.tip = 112
    node.add_log(104, txid(1), 0, amount=9)

    second = adapter(loopback, sleeps, rescan_depth=2).scan(
        [WatchTarget(OURS)], cursor=first.cursor, blocks=stored
    )

    assert (second.scanned_from, second.scanned_to, second.cursor) == (104, 112, 113)
    [transfer] = second.transfers
    assert (transfer.block_height, transfer.block_hash) == (104, f"0x{1104:064x}")
    assert second.blocks[-1] == [112, node.block_hash(112)]
    assert [pair for pair in second.blocks if pair[0] < 104] == [
        pair for pair in stored if pair[0] < 104
    ]


def test_a_node_on_another_chain_is_refused_before_anything_is_read(loopback, sleeps, node):
    node.chain_id = 11155111

    with pytest.raises(ChainError, match="chain id 11155111, not the configured 1"):
        adapter(loopback, sleeps, chain_id=1).scan([WatchTarget(OURS)], cursor=100)

    assert [name for name, _ in node.calls] == ["eth_chainId"]


def test_a_finalized_block_too_close_to_the_head_is_not_believed(loopback, sleeps, node):
    node.tip, node.finalized = 120, 115
    node.add_log(110, txid(1), 0)

    close = adapter(loopback, sleeps, final_depth=6).scan([WatchTarget(OURS)], cursor=115)
    far = adapter(loopback, sleeps, final_depth=5).scan([WatchTarget(OURS)], cursor=115)

    assert [t.final for t in close.transfers] == [False]
    assert [t.final for t in far.transfers] == [True]


def test_balances_are_read_where_the_confirmations_are_reached(loopback, sleeps, node):
    node.balances = {OURS.lower(): 7}

    result = adapter(loopback, sleeps, final_depth=3).scan(
        [WatchTarget(OURS)], cursor=110, balances=True
    )

    assert (result.balances, result.balances_at) == ({OURS: 7}, 108)
    assert node.calls_of("eth_getBalance") == [[OURS, hex(108)]]


def test_a_node_refusing_eth_getbalance_only_skips_the_balance_check(loopback, sleeps, node):
    def refuse(address, tag):
        raise RpcError(-32601, "the method eth_getBalance does not exist/is not available")

    node.eth_getBalance = refuse
    node.add_log(105, txid(1), 0)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)], cursor=110, balances=True)

    assert (result.balances, result.balances_at) == ({}, None)
    assert len(result.transfers) == 1
