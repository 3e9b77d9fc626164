import copy
from datetime import UTC, datetime

import pytest

from kernodeck.payments.chains.base import ChainError, ObservedTransfer, WatchTarget
from kernodeck.payments.chains.solana import SolanaAdapter
from tests.loopback import Reply, sample

RECIPIENT = "2BygESGGedZ2UCjRAHdatCtXqh3LPb5otEdfYxKsFcd1"  # account 1 of the json sample
PAYER = "GWFQp9mjJep2jhtZ7nvttEmkRYLRwEDxWGxurademQ46"  # account 0 of the json sample
SYSTEM = "11111111111111111111111111111111"
REFERENCE = "Ref1111111111111111111111111111111111111111"
OTHER_REFERENCE = "Ref2222222222222222222222222222222222222222"
TX_OPTIONS = {"encoding": "json", "maxSupportedTransactionVersion": 0, "commitment": "confirmed"}


def signature_entry(signature: str, slot: int, status="confirmed", err=None, at=None) -> dict:
    """An entry of getSignaturesForAddress, in the shape of the recorded sample."""
    entry = copy.deepcopy(sample("solana/getSignaturesForAddress.json")["response"]["result"][0])
    entry.update(signature=signature, slot=slot, err=err, blockTime=at, confirmationStatus=status)
    return entry


def transaction(
    keys: list[str],
    pre: list[int],
    post: list[int],
    slot: int,
    at: int | None = None,
    err=None,
    loaded: dict | None = None,
) -> dict:
    """A getTransaction result (encoding json), in the shape of the recorded sample."""
    result = copy.deepcopy(sample("solana/getTransaction-json.json")["response"]["result"])
    result.update(slot=slot, blockTime=at)
    result["transaction"]["message"]["accountKeys"] = keys
    result["meta"].update(preBalances=pre, postBalances=post, err=err)
    if err is not None:
        result["meta"]["status"] = {"Err": err}
    if loaded is not None:
        result["meta"]["loadedAddresses"] = loaded
        result["version"] = 0
    return result


def payment(lamports: int, slot: int, reference: str | None = REFERENCE, at=None) -> dict:
    """A system transfer of `lamports` from PAYER to RECIPIENT, with a reference key if given."""
    keys = [PAYER, RECIPIENT, SYSTEM, *([reference] if reference else [])]
    pre = [9_000_000_000, 1_000_000_000, 1, *([0] if reference else [])]
    post = [
        9_000_000_000 - lamports - 5000,
        1_000_000_000 + lamports,
        1,
        *([0] if reference else []),
    ]
    return transaction(keys, pre, post, slot, at)


class FakeNode:
    """A JSON-RPC handler answering getSlot, getSignaturesForAddress and getTransaction."""

    def __init__(self, slot: int, signatures=None, transactions=None):
        self.slot = slot
        self.signatures: dict[str, list[dict]] = signatures or {}
        self.transactions: dict[str, dict | None] = transactions or {}
        self.calls: list[tuple[str, list]] = []

    def __call__(self, request):
        call = request.json()
        method, params = call["method"], call["params"]
        self.calls.append((method, params))
        if method == "getSlot":
            result = self.slot
        elif method == "getSignaturesForAddress":
            result = self.signatures.get(params[0], [])
        elif method == "getTransaction":
            result = self.transactions.get(params[0])
        else:
            error = {"code": -32601, "message": "Method not found"}
            return 200, {}, {"jsonrpc": "2.0", "id": call["id"], "error": error}
        return 200, {}, {"jsonrpc": "2.0", "id": call["id"], "result": result}


def adapter(loopback, sleeps, **kwargs) -> SolanaAdapter:
    return SolanaAdapter(loopback.url, sleep=sleeps.append, **kwargs)


def test_finds_a_reference_payment_with_its_lamports_and_reference(loopback, sleeps):
    node = FakeNode(
        slot=1010,
        signatures={
            REFERENCE: [
                signature_entry(
                    "siga111111111111111111111111111111111111111111111111111111111111",
                    1000,
                    status="finalized",
                )
            ]
        },
        transactions={
            "siga111111111111111111111111111111111111111111111111111111111111": payment(
                1_500_000_001, 1000, at=1_767_225_600
            )
        },
    )
    loopback.route("POST", "/", handler=node)

    result = adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)])

    assert result.tip == 1010
    assert result.cursor is None
    assert result.transfers == [
        ObservedTransfer(
            network="solana",
            txid="siga111111111111111111111111111111111111111111111111111111111111",
            index=0,
            address=RECIPIENT,
            asset="SOL",
            amount_base=1_500_000_001,
            confirmations=11,
            block_height=1000,
            block_time=datetime(2026, 1, 1, tzinfo=UTC),
            final=True,
            reference=REFERENCE,
        )
    ]
    assert node.calls == [
        ("getSlot", [{"commitment": "confirmed"}]),
        ("getSignaturesForAddress", [REFERENCE, {"limit": 100, "commitment": "confirmed"}]),
        (
            "getTransaction",
            ["siga111111111111111111111111111111111111111111111111111111111111", TX_OPTIONS],
        ),
    ]
    assert {r.headers["content-type"] for r in loopback.requests} == {"application/json"}


def test_a_confirmed_not_finalized_payment_is_not_final(loopback, sleeps):
    node = FakeNode(
        slot=1000,
        signatures={
            REFERENCE: [
                signature_entry(
                    "siga111111111111111111111111111111111111111111111111111111111111",
                    1000,
                    status="confirmed",
                )
            ]
        },
        transactions={
            "siga111111111111111111111111111111111111111111111111111111111111": payment(7, 1000)
        },
    )
    loopback.route("POST", "/", handler=node)

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)]).transfers

    assert (transfer.final, transfer.confirmations, transfer.block_time) == (False, 1, None)


def test_a_transfer_without_reference_is_found_on_the_recipient(loopback, sleeps):
    node = FakeNode(
        slot=2000,
        signatures={
            RECIPIENT: [
                signature_entry(
                    "sigpLain11111111111111111111111111111111111111111111111111111111", 1990
                )
            ]
        },
        transactions={
            "sigpLain11111111111111111111111111111111111111111111111111111111": payment(
                250_000_123, 1990, reference=None
            )
        },
    )
    loopback.route("POST", "/", handler=node)

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT)]).transfers

    assert (transfer.txid, transfer.amount_base, transfer.reference) == (
        "sigpLain11111111111111111111111111111111111111111111111111111111",
        250_000_123,
        None,
    )
    assert node.calls[1] == (
        "getSignaturesForAddress",
        [RECIPIENT, {"limit": 100, "commitment": "confirmed"}],
    )


def test_a_payment_seen_by_reference_and_on_the_recipient_is_one_transfer(loopback, sleeps):
    entry = signature_entry(
        "siga111111111111111111111111111111111111111111111111111111111111", 500
    )
    node = FakeNode(
        slot=500,
        signatures={REFERENCE: [entry], RECIPIENT: [entry]},
        transactions={
            "siga111111111111111111111111111111111111111111111111111111111111": payment(42, 500)
        },
    )
    loopback.route("POST", "/", handler=node)

    result = adapter(loopback, sleeps).scan(
        [WatchTarget(RECIPIENT), WatchTarget(RECIPIENT, REFERENCE)]
    )

    assert [(t.txid, t.reference, t.amount_base) for t in result.transfers] == [
        ("siga111111111111111111111111111111111111111111111111111111111111", REFERENCE, 42)
    ]
    assert [method for method, _ in node.calls].count("getTransaction") == 1


def test_the_recipient_watch_names_the_reference_of_another_target(loopback, sleeps):
    node = FakeNode(
        slot=500,
        signatures={
            RECIPIENT: [
                signature_entry(
                    "sigb111111111111111111111111111111111111111111111111111111111111", 499
                )
            ]
        },
        transactions={
            "sigb111111111111111111111111111111111111111111111111111111111111": payment(
                42, 499, reference=OTHER_REFERENCE
            )
        },
    )
    loopback.route("POST", "/", handler=node)

    result = adapter(loopback, sleeps).scan(
        [WatchTarget(RECIPIENT), WatchTarget(RECIPIENT, OTHER_REFERENCE)]
    )

    assert [(t.txid, t.reference) for t in result.transfers] == [
        ("sigb111111111111111111111111111111111111111111111111111111111111", OTHER_REFERENCE)
    ]


def test_reads_the_recorded_json_parsed_transfer(loopback, sleeps):
    recorded = sample("solana/getTransaction-jsonParsed.json")["response"]["result"]
    receiver = "HkXfyLMZ84YQwPr4HdTWejffvTx2gG8NKSvKEvxeb6Gf"  # the shop, account 1
    signature = recorded["transaction"]["signatures"][0]
    node = FakeNode(
        slot=331_880_417 + 96,
        signatures={receiver: [signature_entry(signature, 331_880_417, status="finalized")]},
        transactions={signature: recorded},
    )
    loopback.route("POST", "/", handler=node)

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(receiver)]).transfers

    assert (transfer.txid, transfer.address) == (signature, receiver)
    assert transfer.amount_base == 1_250_000_000  # 1.25 SOL
    assert transfer.block_height == 331_880_417
    assert transfer.confirmations == 97
    assert transfer.block_time == datetime(2025, 3, 27, 17, 3, 40, tzinfo=UTC)
    assert transfer.reference is None


def test_a_debit_is_ignored(loopback, sleeps):
    # The json sample: account 0 (PAYER) sends 0.75 SOL to account 1 and pays the fee.
    recorded = sample("solana/getTransaction-json.json")["response"]["result"]
    signature = recorded["transaction"]["signatures"][0]
    entry = signature_entry(signature, recorded["slot"])
    node = FakeNode(
        slot=recorded["slot"],
        signatures={PAYER: [entry], RECIPIENT: [entry]},
        transactions={signature: recorded},
    )
    loopback.route("POST", "/", handler=node)

    payer_side = adapter(loopback, sleeps).scan([WatchTarget(PAYER)])
    both_sides = adapter(loopback, sleeps).scan([WatchTarget(PAYER), WatchTarget(RECIPIENT)])

    assert payer_side.transfers == []
    assert payer_side.tip == recorded["slot"]
    # The same transaction is a credit to the recipient: only the debit was left out.
    assert [(t.address, t.amount_base) for t in both_sides.transfers] == [(RECIPIENT, 750_000_000)]


def test_a_failed_transaction_is_not_credited(loopback, sleeps):
    error = {"InstructionError": [0, {"Custom": 1}]}
    failed = transaction(
        [PAYER, RECIPIENT, SYSTEM, REFERENCE],
        pre=[9_000, 1_000, 1, 0],
        post=[4_000, 1_000, 1, 0],  # only the fee left the payer
        slot=800,
        err=error,
    )
    node = FakeNode(
        slot=800,
        signatures={
            REFERENCE: [
                signature_entry(
                    "sigListedfaiLed1111111111111111111111111111111111111111111111111",
                    800,
                    err=error,
                )
            ],
            RECIPIENT: [
                signature_entry(
                    "sigmetafaiLed111111111111111111111111111111111111111111111111111", 800
                )
            ],
        },
        transactions={
            "sigListedfaiLed1111111111111111111111111111111111111111111111111": failed,
            "sigmetafaiLed111111111111111111111111111111111111111111111111111": failed,
        },
    )
    loopback.route("POST", "/", handler=node)

    result = adapter(loopback, sleeps).scan(
        [WatchTarget(RECIPIENT, REFERENCE), WatchTarget(RECIPIENT)]
    )

    assert result.transfers == []
    # The signature list already says it failed: its transaction is not even fetched.
    fetched = [params[0] for method, params in node.calls if method == "getTransaction"]
    assert fetched == ["sigmetafaiLed111111111111111111111111111111111111111111111111111"]


def test_a_transaction_not_yet_served_is_skipped_this_round(loopback, sleeps):
    node = FakeNode(
        slot=900,
        signatures={
            REFERENCE: [
                signature_entry(
                    "sigLate111111111111111111111111111111111111111111111111111111111", 899
                )
            ]
        },
        transactions={"sigLate111111111111111111111111111111111111111111111111111111111": None},
    )
    loopback.route("POST", "/", handler=node)
    watcher = adapter(loopback, sleeps)

    first = watcher.scan([WatchTarget(RECIPIENT, REFERENCE)])
    node.transactions["sigLate111111111111111111111111111111111111111111111111111111111"] = (
        payment(10, 899)
    )
    second = watcher.scan([WatchTarget(RECIPIENT, REFERENCE)])

    assert first.transfers == []
    assert [(t.txid, t.amount_base, t.confirmations) for t in second.transfers] == [
        ("sigLate111111111111111111111111111111111111111111111111111111111", 10, 2)
    ]


def test_finds_the_recipient_among_addresses_loaded_from_a_lookup_table(loopback, sleeps):
    v0 = transaction(
        [PAYER, SYSTEM, REFERENCE],
        pre=[9_000, 1, 0, 50, 1_000],
        post=[3_000, 1, 0, 50, 6_000],
        slot=70,
        loaded={
            "writable": ["Other111111111111111111111111111111111111", RECIPIENT],
            "readonly": [],
        },
    )
    node = FakeNode(
        slot=70,
        signatures={
            REFERENCE: [
                signature_entry(
                    "sigvo11111111111111111111111111111111111111111111111111111111111", 70
                )
            ]
        },
        transactions={"sigvo11111111111111111111111111111111111111111111111111111111111": v0},
    )
    loopback.route("POST", "/", handler=node)

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)]).transfers

    assert (transfer.amount_base, transfer.reference) == (5_000, REFERENCE)


def test_a_slot_past_the_tip_has_no_negative_confirmations(loopback, sleeps):
    node = FakeNode(
        slot=100,
        signatures={
            REFERENCE: [
                signature_entry(
                    "signew1111111111111111111111111111111111111111111111111111111111", 102
                )
            ]
        },
        transactions={
            "signew1111111111111111111111111111111111111111111111111111111111": payment(1, 102)
        },
    )
    loopback.route("POST", "/", handler=node)

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)]).transfers

    assert transfer.confirmations == 0


def test_a_json_rpc_error_is_a_chain_error_without_retry_when_the_call_is_wrong(loopback, sleeps):
    error = {"code": -32602, "message": "Invalid param: WrongSize"}
    loopback.route("POST", "/", json_body={"jsonrpc": "2.0", "id": 1, "error": error})

    with pytest.raises(ChainError, match=r"getSlot: JSON-RPC error -32602: Invalid param"):
        adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)])

    assert len(loopback.requests) == 1
    assert sleeps == []


def test_a_json_rpc_server_error_is_retried_then_a_chain_error(loopback, sleeps):
    error = {"code": -32005, "message": "Node is behind by 42 slots"}
    loopback.route("POST", "/", json_body={"jsonrpc": "2.0", "id": 1, "error": error})

    with pytest.raises(ChainError, match=r"-32005: Node is behind by 42 slots.*3 attempts"):
        adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)])

    assert len(loopback.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_retries_after_429_then_succeeds(loopback, sleeps):
    node = FakeNode(
        slot=50,
        signatures={
            REFERENCE: [
                signature_entry(
                    "siga111111111111111111111111111111111111111111111111111111111111", 45
                )
            ]
        },
        transactions={
            "siga111111111111111111111111111111111111111111111111111111111111": payment(99, 45)
        },
    )
    too_many = Reply(
        status=429,
        json_body={"jsonrpc": "2.0", "error": {"code": 429, "message": "Too many requests"}},
        headers={"Retry-After": "1"},
    )
    loopback.route("POST", "/", too_many, Reply(handler=node))

    result = adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)])

    assert [(t.txid, t.amount_base) for t in result.transfers] == [
        ("siga111111111111111111111111111111111111111111111111111111111111", 99)
    ]
    assert sleeps == [1.0]
    assert len(loopback.requests) == 4


def test_malformed_json_is_a_chain_error(loopback, sleeps):
    loopback.route("POST", "/", body="{'jsonrpc': ", content_type="application/json")

    with pytest.raises(ChainError, match="not valid JSON"):
        adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)])

    assert len(loopback.requests) == 3


def test_timeout_is_a_chain_error(loopback, sleeps):
    loopback.route("POST", "/", json_body={"jsonrpc": "2.0", "id": 1, "result": 5}, delay=2.0)

    with pytest.raises(ChainError, match="timed out"):
        adapter(loopback, sleeps, timeout=0.2).scan([WatchTarget(RECIPIENT, REFERENCE)])

    assert len(loopback.requests) == 3


def test_a_signature_list_of_the_wrong_shape_is_a_chain_error(loopback, sleeps):
    node = FakeNode(slot=5, signatures={REFERENCE: {"signature": "x"}})
    loopback.route("POST", "/", handler=node)

    with pytest.raises(ChainError, match="not a signature list"):
        adapter(loopback, sleeps).scan([WatchTarget(RECIPIENT, REFERENCE)])


def test_the_same_signature_listed_twice_is_one_transfer_read_once(loopback, sleeps):
    signature = "sigd111111111111111111111111111111111111111111111111111111111111"
    entry = signature_entry(signature, 1000, status="finalized")
    node = FakeNode(
        slot=1010,
        # Listed twice in one answer, and once more under the bare recipient.
        signatures={REFERENCE: [entry, dict(entry)], RECIPIENT: [dict(entry)]},
        transactions={signature: payment(2_000_000, 1000, at=1_767_225_600)},
    )
    loopback.route("POST", "/", handler=node)

    targets = [WatchTarget(RECIPIENT, REFERENCE), WatchTarget(RECIPIENT)]
    result = adapter(loopback, sleeps).scan(targets)

    assert [(t.txid, t.index, t.amount_base, t.reference) for t in result.transfers] == [
        (signature, 0, 2_000_000, REFERENCE)
    ]
    assert [params[0] for method, params in node.calls if method == "getTransaction"] == [
        signature
    ]
