import copy
from datetime import UTC, datetime

import pytest

from kernodeck.payments.chains.base import ChainError, ObservedTransfer, WatchTarget
from kernodeck.payments.chains.tron import (
    TRANSFER_TOPIC,
    TronAdapter,
    to_base58_address,
    to_hex_address,
)
from tests.loopback import Reply, sample

# The recipient of the TRX and USDT samples, and their sender (41dc263d...).
OURS = "TEXFuhpjF8RyncAYX7aunyhwW7F3RUALc5"
OURS_HEX = "4131f03dba56fddb1c649959a2fb3c241f6c7bb62b"
SENDER = "TW3FUKMyBkEyaehtPF1ZQBg1yGdbibGNBr"
SENDER_HEX = "41dc263dc93af4d34ce4748b0da1edcecf9cedcca6"
OURS_TOO = "TVTubzXrxqQDkwM4p8U63N4Ajrnz3c7fSe"  # whom OURS pays 3 USDT in the trc20 sample
USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
LOOKALIKE = "THbeLKM84TvYPs8GM2qLQEnbMU5KSjVK8j"  # the other "USDT" of the trc20 sample

TRX_HEIGHT = 77_120_458  # block of the sample's TRX transfer; its USDT one is 11 blocks later
TIP = TRX_HEIGHT + 30
SOLIDIFIED = TRX_HEIGHT + 10


def txid(n: int) -> str:
    return f"{n:064x}"


def at_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms // 1000, tz=UTC)


def head(number: int) -> dict:
    block = copy.deepcopy(sample("tron/wallet-getnowblock.json")["response"])
    block["block_header"]["raw_data"]["number"] = number
    return block


def v1_page(items: list[dict], fingerprint: str | None = None) -> dict:
    """A v1 list answer; with a fingerprint it is shaped like the page-with-next sample."""
    if fingerprint is None:
        return {"data": items, "success": True, "meta": {"at": 1, "page_size": len(items)}}
    page = copy.deepcopy(sample("tron/v1-accounts-transactions-trc20-page-with-next.json"))
    page = page["response"]
    page["data"] = items
    page["meta"]["fingerprint"] = fingerprint
    return page


def trx_item(tx: str, *, to_hex: str = OURS_HEX, sun: int = 10000, height: int | None = None):
    """A TransferContract item shaped like the recorded TRX sample."""
    item = copy.deepcopy(sample("tron/v1-accounts-transactions-trx.json")["response"]["data"][0])
    item["txID"] = tx
    item["raw_data"]["contract"][0]["parameter"]["value"].update(to_address=to_hex, amount=sun)
    if height is not None:
        item["blockNumber"] = height
    return item


def trc20_item(tx: str, *, contract: str = USDT, to: str = OURS, value: str = "10000") -> dict:
    """A TRC-20 item shaped like the first item of the recorded trc20 sample."""
    recorded = sample("tron/v1-accounts-transactions-trc20.json")["response"]["data"]
    item = copy.deepcopy(recorded[0] if contract == USDT else recorded[1])
    item["token_info"]["address"] = contract
    item.update(transaction_id=tx, to=to, value=value)
    return item


def tx_info(tx: str, height: int, events=(), result: str = "SUCCESS") -> dict:
    """A gettransactioninfobyid answer shaped like the recorded one; events are
    (contract, recipient, amount) Transfer logs in order."""
    info = copy.deepcopy(sample("tron/wallet-gettransactioninfobyid-trc20.json")["response"])
    template = info["log"][0]
    info.update(id=tx, blockNumber=height)
    info["receipt"]["result"] = result
    info["log"] = [
        {
            **template,
            "address": to_hex_address(contract)[2:],
            "topics": [
                template["topics"][0],
                template["topics"][1],
                to_hex_address(to)[2:].rjust(64, "0"),
            ],
            "data": f"{amount:064x}",
        }
        for contract, to, amount in events
    ]
    return info


class FakeTronGrid:
    """TronGrid behind the loopback server: heads, history lists per address, tx infos."""

    def __init__(self, loopback, tip: int = TIP, solidified: int = SOLIDIFIED):
        self.loopback = loopback
        self.infos: dict[str, dict] = {}
        loopback.route("POST", "/wallet/getnowblock", json_body=head(tip))
        loopback.route("POST", "/walletsolidity/getnowblock", json_body=head(solidified))
        loopback.route("POST", "/wallet/gettransactioninfobyid", handler=self.info)
        self.history(OURS)
        self.history(OURS_TOO)

    def history(self, address: str, trx=(), trc20=()) -> None:
        self.loopback.route(
            "GET", f"/v1/accounts/{address}/transactions", json_body=v1_page(list(trx))
        )
        self.loopback.route(
            "GET", f"/v1/accounts/{address}/transactions/trc20", json_body=v1_page(list(trc20))
        )

    def info(self, request):
        return 200, {}, self.infos.get(request.json()["value"], {})

    def requests_to(self, path: str):
        return [request for request in self.loopback.requests if request.path == path]


@pytest.fixture
def grid(loopback):
    return FakeTronGrid(loopback)


def adapter(loopback, sleeps, **kwargs) -> TronAdapter:
    return TronAdapter(loopback.url, sleep=sleeps.append, **kwargs)


def test_credits_a_trx_transfer_in_sun_from_the_recorded_sample(loopback, sleeps, grid):
    recorded = sample("tron/v1-accounts-transactions-trx.json")["response"]
    loopback.route("GET", f"/v1/accounts/{OURS}/transactions", json_body=recorded)

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert result.transfers == [
        ObservedTransfer(
            network="tron",
            txid=recorded["data"][0]["txID"],
            index=0,
            address=OURS,
            asset="TRX",
            amount_base=12_500_000,  # 12.5 TRX
            confirmations=31,
            block_height=TRX_HEIGHT,
            block_time=datetime(2025, 11, 1, 18, 15, 24, tzinfo=UTC),
            final=True,
        )
    ]
    assert (result.tip, result.cursor) == (TIP, None)
    [history] = grid.requests_to(f"/v1/accounts/{OURS}/transactions")
    assert history.query == {"only_to": "true", "limit": "200"}
    assert "tron-pro-api-key" not in history.headers


def test_converts_addresses_between_base58_and_hex():
    assert to_hex_address(OURS) == OURS_HEX
    assert to_hex_address(USDT) == "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"
    assert to_base58_address(SENDER_HEX) == SENDER
    assert to_base58_address("a614f803b6fd780986a42c78ec9c7f77e6ded13c") == USDT  # a log's form
    assert to_base58_address("0x" + OURS_HEX[2:].upper()) == OURS
    with pytest.raises(ValueError, match="not a Tron address"):
        to_hex_address(OURS[:-1] + "C")  # checksum broken
    with pytest.raises(ValueError, match="not a Tron address"):
        to_hex_address("1BoatSLRHtKNngkdXEeobR76b53LETtpyT")  # base58check, but Bitcoin
    with pytest.raises(ValueError, match="not a hex Tron address"):
        to_base58_address("42" + OURS_HEX[2:])


def test_a_transfer_that_ran_out_of_energy_is_reported_failed(loopback, sleeps, grid):
    item = trx_item(txid(1))
    item["ret"] = sample("tron/v1-accounts-transactions-failed-item.json")["response"]["ret"]
    grid.history(OURS, trx=[item])

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert (transfer.txid, transfer.amount_base, transfer.failed) == (txid(1), 10000, True)


def test_skips_contract_calls_transfers_to_others_and_zero_amounts(loopback, sleeps, grid):
    call = sample("tron/v1-accounts-transactions-trigger-smart-contract-item.json")["response"]
    failed_call = sample("tron/v1-accounts-transactions-failed-item.json")["response"]
    outgoing = trx_item(txid(2), to_hex=SENDER_HEX)
    grid.history(OURS, trx=[call, failed_call, outgoing, trx_item(txid(3), sun=0)])

    assert adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers == []


def test_an_unconfirmed_trx_transfer_has_no_confirmations(loopback, sleeps, grid):
    item = trx_item(txid(1))
    del item["blockNumber"]
    grid.history(OURS, trx=[item])

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert (transfer.confirmations, transfer.block_height, transfer.final) == (0, None, False)
    assert transfer.block_time is None


def test_a_trc10_token_is_recorded_as_token_with_its_asset_id(loopback, sleeps, grid):
    item = trx_item(txid(1), sun=77)
    item["raw_data"]["contract"][0]["type"] = "TransferAssetContract"
    item["raw_data"]["contract"][0]["parameter"]["value"]["asset_name"] = "1002000"
    grid.history(OURS, trx=[item])

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert (transfer.asset, transfer.token_contract, transfer.amount_base) == (
        "TOKEN",
        "1002000",
        77,
    )


def test_credits_canonical_usdt_with_block_and_index_from_the_transaction_info(
    loopback, sleeps, grid
):
    recorded = sample("tron/v1-accounts-transactions-trc20.json")["response"]
    loopback.route("GET", f"/v1/accounts/{OURS}/transactions/trc20", json_body=recorded)
    tx = recorded["data"][0]["transaction_id"]  # the only USDT item paying OURS
    info = sample("tron/wallet-gettransactioninfobyid-trc20.json")["response"]  # its info
    grid.infos[tx] = info

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    # The look-alike "USDT" item pays OURS too, but the node has no info for it yet: it waits.
    assert result.transfers == [
        ObservedTransfer(
            network="tron",
            txid=tx,
            index=0,
            address=OURS,
            asset="USDT",
            amount_base=25_000_000,  # 25 USDT
            confirmations=TIP - SOLIDIFIED,
            block_height=SOLIDIFIED + 1,
            block_time=at_ms(info["blockTimeStamp"]),
            token_contract=USDT,
        )
    ]
    asked = [r.json() for r in grid.requests_to("/wallet/gettransactioninfobyid")]
    assert asked == [{"value": tx}, {"value": recorded["data"][1]["transaction_id"]}]
    [history] = grid.requests_to(f"/v1/accounts/{OURS}/transactions/trc20")
    assert history.query == {"only_to": "true", "limit": "200"}


def test_a_token_from_another_contract_is_reported_as_token(loopback, sleeps, grid):
    grid.history(OURS, trc20=[trc20_item(txid(1), contract=LOOKALIKE, value="800" + "0" * 18)])
    grid.infos[txid(1)] = tx_info(txid(1), TRX_HEIGHT, events=[(LOOKALIKE, OURS, 800 * 10**18)])

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert (transfer.asset, transfer.token_contract) == ("TOKEN", LOOKALIKE)
    assert (transfer.amount_base, transfer.index, transfer.final) == (800 * 10**18, 0, True)


def test_one_transaction_paying_two_of_our_addresses_gets_two_indexes(loopback, sleeps, grid):
    grid.history(OURS, trc20=[trc20_item(txid(1), value="5")])
    grid.history(OURS_TOO, trc20=[trc20_item(txid(1), to=OURS_TOO, value="7")])
    grid.infos[txid(1)] = tx_info(
        txid(1), TRX_HEIGHT, events=[(LOOKALIKE, OURS, 5), (USDT, OURS_TOO, 7), (USDT, OURS, 5)]
    )

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS), WatchTarget(OURS_TOO)])

    # Positions in the log: the LOOKALIKE event at 0 is not the USDT transfer listed.
    assert [(t.address, t.index, t.amount_base) for t in result.transfers] == [
        (OURS, 2, 5),
        (OURS_TOO, 1, 7),
    ]
    assert len(grid.requests_to("/wallet/gettransactioninfobyid")) == 1  # read once


def test_a_trc20_transfer_listed_twice_is_one_transfer_at_its_log_index(loopback, sleeps, grid):
    # TronGrid lists the same transfer twice in one answer: the event log holds it once.
    grid.history(OURS, trc20=[trc20_item(txid(1), value="5"), trc20_item(txid(1), value="5")])
    grid.infos[txid(1)] = tx_info(
        txid(1), TRX_HEIGHT, events=[(LOOKALIKE, OURS, 9), (USDT, OURS, 5)]
    )

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [(t.txid, t.index, t.asset, t.amount_base) for t in result.transfers] == [
        (txid(1), 1, "USDT", 5)
    ]


def test_two_equal_transfers_in_one_transaction_are_two_whatever_the_list_says(
    loopback, sleeps, grid
):
    grid.history(OURS, trc20=[trc20_item(txid(1), value="5")])  # listed once
    grid.infos[txid(1)] = tx_info(txid(1), TRX_HEIGHT, events=[(USDT, OURS, 5), (USDT, OURS, 5)])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [(t.index, t.amount_base) for t in result.transfers] == [(0, 5), (1, 5)]


def test_a_listed_transfer_no_event_confirms_is_no_money(loopback, sleeps, grid, caplog):
    grid.history(OURS, trc20=[trc20_item(txid(1), value="5")])
    grid.infos[txid(1)] = tx_info(txid(1), TRX_HEIGHT, events=[(USDT, OURS_TOO, 5)])

    assert adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers == []
    assert "logs do not show" in caplog.text


def test_a_reverted_transfer_listed_twice_is_recorded_once(loopback, sleeps, grid):
    grid.history(OURS, trc20=[trc20_item(txid(1)), trc20_item(txid(1))])
    grid.infos[txid(1)] = tx_info(txid(1), TRX_HEIGHT, events=[], result="REVERT")

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert (transfer.index, transfer.failed) == (0, True)


def test_a_reverted_token_transfer_is_reported_failed(loopback, sleeps, grid):
    grid.history(OURS, trc20=[trc20_item(txid(1))])
    grid.infos[txid(1)] = tx_info(txid(1), TRX_HEIGHT, events=[], result="REVERT")

    [transfer] = adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers

    assert (transfer.asset, transfer.index, transfer.failed) == ("USDT", 0, True)


def test_a_token_transfer_the_node_does_not_know_yet_waits(loopback, sleeps, grid):
    grid.history(OURS, trc20=[trc20_item(txid(1)), trc20_item(txid(2), value="0")])

    assert adapter(loopback, sleeps).scan([WatchTarget(OURS)]).transfers == []
    # The zero-value one (address poisoning) is not even looked up.
    assert [r.json() for r in grid.requests_to("/wallet/gettransactioninfobyid")] == [
        {"value": txid(1)}
    ]


def test_follows_the_fingerprint_to_the_second_page(loopback, sleeps, grid):
    first = v1_page([trc20_item(txid(1), value="1")], fingerprint="page-2-fingerprint")
    second = v1_page([trc20_item(txid(2), value="2")])
    loopback.route(
        "GET",
        f"/v1/accounts/{OURS}/transactions/trc20",
        handler=lambda request: (200, {}, second if request.query.get("fingerprint") else first),
    )
    for n, amount in ((1, 1), (2, 2)):
        grid.infos[txid(n)] = tx_info(txid(n), TRX_HEIGHT, events=[(USDT, OURS, amount)])

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [(t.txid, t.amount_base) for t in result.transfers] == [(txid(1), 1), (txid(2), 2)]
    pages = grid.requests_to(f"/v1/accounts/{OURS}/transactions/trc20")
    assert [page.query for page in pages] == [
        {"only_to": "true", "limit": "200"},
        {"only_to": "true", "limit": "200", "fingerprint": "page-2-fingerprint"},
    ]


def test_final_only_up_to_the_solidified_block(loopback, sleeps, grid):
    grid.history(
        OURS,
        trx=[
            trx_item(txid(1), height=SOLIDIFIED),
            trx_item(txid(2), height=SOLIDIFIED + 1),
            trx_item(txid(3), height=TIP),
        ],
    )

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert [(t.txid, t.confirmations, t.final) for t in result.transfers] == [
        (txid(1), 21, True),
        (txid(2), 20, False),
        (txid(3), 1, False),
    ]


def test_sends_the_api_key_only_when_set(loopback, sleeps, grid):
    adapter(loopback, sleeps, api_key="k-123").scan([WatchTarget(OURS)])

    assert {r.headers.get("tron-pro-api-key") for r in loopback.requests} == {"k-123"}


def test_waits_out_a_429_then_reads_the_answer(loopback, sleeps, grid):
    loopback.route(
        "POST",
        "/wallet/getnowblock",
        Reply(status=429, headers={"Retry-After": "2"}),
        Reply(json_body=head(TIP)),
    )

    result = adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert (result.tip, sleeps) == (TIP, [2.0])


def test_a_server_error_that_persists_is_a_chain_error(loopback, sleeps, grid):
    loopback.route("GET", f"/v1/accounts/{OURS}/transactions", status=500, body="oops")

    with pytest.raises(ChainError, match="HTTP 500"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])

    assert len(grid.requests_to(f"/v1/accounts/{OURS}/transactions")) == 3
    assert sleeps == [0.5, 1.0]


def test_an_unsuccessful_answer_is_a_chain_error(loopback, sleeps, grid):
    loopback.route(
        "GET",
        f"/v1/accounts/{OURS}/transactions/trc20",
        json_body={"success": False, "error": "Invalid fingerprint", "statusCode": 400},
    )

    with pytest.raises(ChainError, match="Invalid fingerprint"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])


def test_a_node_error_body_is_a_chain_error(loopback, sleeps, grid):
    error = "class org.tron.core.exception.StoreException : block not found"
    loopback.route("POST", "/walletsolidity/getnowblock", json_body={"Error": error})

    with pytest.raises(ChainError, match="block not found"):
        adapter(loopback, sleeps).scan([WatchTarget(OURS)])


def test_the_transfer_topic_is_the_erc20_one_without_prefix():
    recorded = sample("tron/wallet-gettransactioninfobyid-trc20.json")["response"]
    assert recorded["log"][0]["topics"][0] == TRANSFER_TOPIC
