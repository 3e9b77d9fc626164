import re
import socket
from decimal import Decimal

import pytest

from kernodeck.payments.chains.base import ChainError
from kernodeck.payments.chains.http import (
    DeadlinePassed,
    each_concurrently,
    get_json,
    get_text,
    new_client,
    pass_deadline,
    post_json,
    rpc_call,
)
from tests.loopback import Reply


def test_parses_fractions_as_decimal_and_keeps_integers(loopback, sleeps):
    loopback.route("GET", "/v", body='{"price": 0.1, "sats": 2100000000000000}')

    body = get_json(f"{loopback.url}/v", sleep=sleeps.append)

    assert body == {"price": Decimal("0.1"), "sats": 2100000000000000}
    assert type(body["price"]) is Decimal
    assert type(body["sats"]) is int
    [request] = loopback.requests
    assert request.headers["accept"] == "application/json"
    assert request.headers["user-agent"] == "Kernodeck chain watcher"


def test_sends_query_parameters_and_headers(loopback, sleeps):
    loopback.route("GET", "/v", json_body=[])

    get_json(
        f"{loopback.url}/v",
        params={"limit": "5"},
        headers={"TRON-PRO-API-KEY": "k"},
        sleep=sleeps.append,
    )

    [request] = loopback.requests
    assert request.query == {"limit": "5"}
    assert request.headers["tron-pro-api-key"] == "k"


def test_refuses_nan_which_is_not_json(loopback, sleeps):
    loopback.route("GET", "/v", body='{"value": NaN}')

    with pytest.raises(ChainError, match="not valid JSON"):
        get_json(f"{loopback.url}/v", sleep=sleeps.append)


def test_retries_a_server_error_then_succeeds(loopback, sleeps):
    loopback.route("GET", "/v", Reply(status=503), Reply(json_body={"ok": True}))

    assert get_json(f"{loopback.url}/v", sleep=sleeps.append) == {"ok": True}
    assert len(loopback.requests) == 2
    assert sleeps == [0.5]


def test_backs_off_exponentially_between_attempts(loopback, sleeps):
    loopback.route("GET", "/v", Reply(status=500), Reply(status=502), Reply(json_body=1))

    assert get_json(f"{loopback.url}/v", sleep=sleeps.append) == 1
    assert len(loopback.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_gives_up_after_three_attempts_naming_the_host_and_last_status(loopback, sleeps):
    loopback.route("GET", "/v", Reply(status=500), Reply(status=502), Reply(status=503))

    with pytest.raises(ChainError) as caught:
        get_json(f"{loopback.url}/v", sleep=sleeps.append)

    assert str(caught.value) == (f"127.0.0.1:{loopback.port}: HTTP 503 (gave up after 3 attempts)")
    assert len(loopback.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_honours_a_small_retry_after(loopback, sleeps):
    loopback.route(
        "GET",
        "/v",
        Reply(status=429, headers={"Retry-After": "2"}),
        Reply(status=429, headers={"Retry-After": "0"}),
        Reply(json_body=["ok"]),
    )

    assert get_json(f"{loopback.url}/v", sleep=sleeps.append) == ["ok"]
    assert sleeps == [2.0, 0.0]


def test_a_long_retry_after_fails_at_once(loopback, sleeps):
    loopback.route("GET", "/v", status=429, headers={"Retry-After": "120"})

    with pytest.raises(ChainError, match=r"rate limited \(HTTP 429\), asks to retry after 120 s$"):
        get_json(f"{loopback.url}/v", sleep=sleeps.append)

    assert len(loopback.requests) == 1
    assert sleeps == []


def test_a_retry_after_date_falls_back_to_the_backoff(loopback, sleeps):
    loopback.route(
        "GET",
        "/v",
        Reply(status=429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        Reply(json_body=[]),
    )

    assert get_json(f"{loopback.url}/v", sleep=sleeps.append) == []
    assert sleeps == [0.5]


def test_a_client_error_is_not_retried_and_quotes_a_short_text_body(loopback, sleeps):
    loopback.route("GET", "/tx/ff", status=404, body="Transaction not found")

    with pytest.raises(ChainError, match=r"^127\.0\.0\.1:\d+: HTTP 404: Transaction not found$"):
        get_json(f"{loopback.url}/tx/ff", sleep=sleeps.append)

    assert len(loopback.requests) == 1
    assert sleeps == []


def test_an_html_error_page_is_not_quoted(loopback, sleeps):
    loopback.route("GET", "/v", status=403, body="<html><body>Forbidden by WAF</body></html>")

    with pytest.raises(ChainError) as caught:
        get_json(f"{loopback.url}/v", sleep=sleeps.append)

    assert str(caught.value) == f"127.0.0.1:{loopback.port}: HTTP 403"


def test_redirects_are_not_followed(loopback, sleeps):
    loopback.route("GET", "/v", status=301, headers={"Location": "http://elsewhere.invalid/"})

    with pytest.raises(ChainError, match="HTTP 301"):
        get_json(f"{loopback.url}/v", sleep=sleeps.append)

    assert len(loopback.requests) == 1


def test_the_error_names_the_host_but_not_a_key_in_the_path_or_query(loopback, sleeps):
    loopback.route("POST", "/secret-token", status=500)

    with pytest.raises(ChainError) as caught:
        post_json(f"{loopback.url}/secret-token?api-key=hunter2", {}, sleep=sleeps.append)

    assert f"127.0.0.1:{loopback.port}" in str(caught.value)
    assert "secret" not in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_refused_connection_is_retried_then_a_chain_error(sleeps):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on `port` any more.

    with pytest.raises(ChainError, match=rf"^127\.0\.0\.1:{port}: request failed: .*3 attempts"):
        get_json(f"http://127.0.0.1:{port}/v", sleep=sleeps.append)

    assert sleeps == [0.5, 1.0]


def test_a_timeout_is_retried_then_a_chain_error(loopback, sleeps):
    loopback.route("GET", "/slow", Reply(json_body=1, delay=2.0))

    with pytest.raises(ChainError, match=r"timed out after 0\.2 s .*3 attempts"):
        get_json(f"{loopback.url}/slow", timeout=0.2, sleep=sleeps.append)

    assert len(loopback.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_a_slow_first_answer_then_a_quick_one_succeeds(loopback, sleeps):
    loopback.route("GET", "/v", Reply(json_body=1, delay=2.0), Reply(json_body=2))

    assert get_json(f"{loopback.url}/v", timeout=0.2, sleep=sleeps.append) == 2
    assert sleeps == [0.5]


def test_get_text_returns_the_stripped_body(loopback, sleeps):
    loopback.route("GET", "/blocks/tip/height", body="698767\n", content_type="text/plain")

    assert get_text(f"{loopback.url}/blocks/tip/height", sleep=sleeps.append) == "698767"


def test_post_json_sends_the_payload_as_json(loopback, sleeps):
    loopback.route("POST", "/rpc", json_body={"echo": True})

    answer = post_json(f"{loopback.url}/rpc", {"a": [1, "b"]}, sleep=sleeps.append)

    assert answer == {"echo": True}
    [request] = loopback.requests
    assert request.json() == {"a": [1, "b"]}
    assert request.headers["content-type"] == "application/json"


def test_rpc_call_returns_the_result_even_when_null(loopback, sleeps):
    loopback.route("POST", "/", json_body={"jsonrpc": "2.0", "id": 1, "result": None})

    assert rpc_call(loopback.url, "getTransaction", ["sig"], sleep=sleeps.append) is None
    [request] = loopback.requests
    assert request.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "getTransaction",
        "params": ["sig"],
    }


def test_rpc_call_does_not_retry_an_error_in_the_call(loopback, sleeps):
    error = {"code": -32601, "message": "Method not found"}
    loopback.route("POST", "/", json_body={"jsonrpc": "2.0", "id": 1, "error": error})

    with pytest.raises(ChainError) as caught:
        rpc_call(loopback.url, "eth_nope", sleep=sleeps.append)

    assert str(caught.value) == (
        f"127.0.0.1:{loopback.port}: eth_nope: JSON-RPC error -32601: Method not found"
    )
    assert len(loopback.requests) == 1


def test_rpc_call_retries_a_server_side_error(loopback, sleeps):
    error = {"code": -32000, "message": "header not found"}
    loopback.route(
        "POST",
        "/",
        Reply(json_body={"jsonrpc": "2.0", "id": 1, "error": error}),
        Reply(json_body={"jsonrpc": "2.0", "id": 1, "result": "0x10"}),
    )

    assert rpc_call(loopback.url, "eth_blockNumber", sleep=sleeps.append) == "0x10"
    assert sleeps == [0.5]


def test_rpc_call_retries_an_answer_without_result(loopback, sleeps):
    loopback.route("POST", "/", json_body={"jsonrpc": "2.0", "id": 1})

    with pytest.raises(ChainError, match="neither result nor error"):
        rpc_call(loopback.url, "getSlot", sleep=sleeps.append)

    assert len(loopback.requests) == 3


def test_a_shared_client_serves_several_calls(loopback, sleeps):
    loopback.route("GET", "/a", json_body=1)
    loopback.route("GET", "/b", json_body=2)

    with new_client() as client:
        a = get_json(f"{loopback.url}/a", client=client, sleep=sleeps.append)
        b = get_json(f"{loopback.url}/b", client=client, sleep=sleeps.append)

    assert (a, b) == (1, 2)


def test_a_url_that_is_no_url_fails_at_once(sleeps):
    with pytest.raises(
        ChainError, match=r"^chain API: the configured API URL is not a valid URL$"
    ):
        get_json("http://host:abc/v", sleep=sleeps.append)
    with pytest.raises(ChainError, match=r"^x: the configured API URL is not http"):
        get_json("ftp://x/v", sleep=sleeps.append)

    assert sleeps == []


# -- deadlines: a whole answer, and a whole pass ---------------------------------------------


def test_an_answer_dripped_a_byte_at_a_time_fails_once_the_whole_answer_is_late(loopback, sleeps):
    # Every read is answered within the timeout (a byte every 0.1 s); the whole of the 60
    # bytes would take 6 s, beyond the 0.3 s the answer may take.
    loopback.route("GET", "/drip", Reply(json_body={"padding": "x" * 40}, drip=0.1))

    with pytest.raises(ChainError, match=r"whole answer took longer than 0\.3 s.*3 attempts"):
        get_json(f"{loopback.url}/drip", timeout=0.3, sleep=sleeps.append)

    assert len(loopback.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_a_dripped_answer_that_ends_in_time_is_read(loopback, sleeps):
    loopback.route("GET", "/drip", Reply(json_body=7, drip=0.01))

    assert get_json(f"{loopback.url}/drip", timeout=5, sleep=sleeps.append) == 7


def test_the_pass_deadline_ends_a_call_and_refuses_the_next_without_asking(loopback, sleeps):
    loopback.route("GET", "/drip", Reply(json_body={"padding": "x" * 40}, drip=0.1))
    loopback.route("GET", "/quick", json_body=1)

    with pass_deadline(0.3):
        # The call's own timeout (10 s) is not what ends it: the pass's 0.3 s are, and no
        # attempt is made after them.
        with pytest.raises(DeadlinePassed, match=r"whole answer took longer than") as ended:
            get_json(f"{loopback.url}/drip", sleep=sleeps.append)
        # What was left of the pass when the call began: 0.3 s less the moment it took.
        given = float(re.search(r"longer than ([0-9.]+) s", str(ended.value)).group(1))
        assert 0.2 < given <= 0.3
        with pytest.raises(DeadlinePassed, match="not asked"):
            get_json(f"{loopback.url}/quick", sleep=sleeps.append)

    assert [request.path for request in loopback.requests] == ["/drip"]
    assert sleeps == []
    # Outside the pass, calls have their own timeout again.
    assert get_json(f"{loopback.url}/quick", sleep=sleeps.append) == 1


def test_no_retry_waits_past_the_pass_deadline(loopback, sleeps):
    loopback.route("GET", "/busy", Reply(status=503))

    with pass_deadline(0.4), pytest.raises(DeadlinePassed, match="no time left to retry"):
        get_json(f"{loopback.url}/busy", sleep=sleeps.append)  # the backoff is 0.5 s

    assert len(loopback.requests) == 1 and sleeps == []


def test_the_pass_deadline_reaches_the_concurrent_calls(loopback, sleeps):
    loopback.route("GET", "/drip", Reply(json_body={"padding": "x" * 40}, drip=0.1))

    def fetch(_item):
        return get_json(f"{loopback.url}/drip", sleep=sleeps.append)

    with pass_deadline(0.3), pytest.raises(DeadlinePassed):
        each_concurrently(fetch, [1, 2, 3], workers=3)
