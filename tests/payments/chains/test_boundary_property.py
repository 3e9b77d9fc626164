"""Property: whatever JSON a chain API answers, its adapter returns checked records or
raises ChainError; never another exception (which would stop a watcher pass).

Random JSON alone rarely gets past an adapter's first type check, so hypothesis starts from
a valid answer (tests/payments/chains/answers.py) and replaces a few of its values, at any
depth, with arbitrary JSON: extreme integers, `true`, fractions, long or binary strings,
empty or nested containers, or deletes them.
"""

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernodeck.core import clock
from kernodeck.payments.chains.base import ChainError, ObservedTransfer, ScanResult
from tests.loopback import LoopbackServer
from tests.payments.chains.answers import ANSWERS, BLOCK_DATETIME, paths, scan, serve

DELETE = object()

EXTREMES = st.sampled_from(
    [
        0,
        -1,
        2**31,
        2**63,
        2**64,
        10**40,
        2**256,
        -(10**30),
        True,
        False,
        None,
        "",
        "\x00",
        "0x",
        "0x" + "f" * 64,
        "0x" + "f" * 200,
        "9" * 100,
        "a" * 300,
        "٣",
        "SUCCESS",
        "finalized",
        [],
        {},
        [[[]]],
    ]
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=80)
    | EXTREMES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def mutated(draw, network):
    """A valid answer tree for `network` with one to four values replaced or deleted."""
    answers = ANSWERS[network]()
    where = paths(answers)
    for path in draw(st.lists(st.sampled_from(where), min_size=1, max_size=4)):
        parent = answers
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change replaced what held this path
        if not isinstance(parent, dict | list):
            continue  # an earlier change put a string where a list was: "ab"[0] reads
        value = draw(st.one_of(JSON, st.just(DELETE)))
        if value is DELETE and isinstance(parent, dict) and len(path) > 1:
            del parent[path[-1]]
        elif value is not DELETE:
            parent[path[-1]] = value
    return answers


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as loopback:  # a handler error fails the module's last test
        yield loopback


@pytest.mark.parametrize("network", list(ANSWERS))
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_answer_gives_checked_records_or_a_chain_error(server, network, data):
    clock.freeze(BLOCK_DATETIME + timedelta(days=1))
    answers = data.draw(mutated(network))
    serve(server, network, answers)
    try:
        result = scan(server, network)
    except ChainError:
        return
    assert isinstance(result, ScanResult)
    assert type(result.tip) is int and 0 <= result.tip <= 10**12
    for transfer in result.transfers:
        assert isinstance(transfer, ObservedTransfer)
        assert_storable(transfer)


def assert_storable(transfer: ObservedTransfer) -> None:
    """What the columns and the pages need, written out independently of the code."""
    assert type(transfer.amount_base) is int and 0 <= transfer.amount_base < 10**40
    assert type(transfer.index) is int and 0 <= transfer.index < 2**31
    assert type(transfer.confirmations) is int and 0 <= transfer.confirmations < 2**31
    assert transfer.block_height is None or (
        type(transfer.block_height) is int and 0 <= transfer.block_height <= 10**12
    )
    assert transfer.block_time is None or (
        datetime(2009, 1, 3, tzinfo=UTC) <= transfer.block_time <= clock.now() + timedelta(days=1)
    )
    assert re.fullmatch(r"[0-9A-Za-z]{1,100}", transfer.txid)
    assert re.fullmatch(r"[0-9A-Za-z]{1,100}", transfer.address)
    for text in (transfer.token_contract, transfer.reference):
        assert text is None or re.fullmatch(r"[0-9A-Za-z]{0,64}", text)
    assert type(transfer.failed) is bool and type(transfer.final) is bool
