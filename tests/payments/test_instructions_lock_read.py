"""The API's instructions for an order (`payment_intent_create_for_reference`): the order's
instructions come with its lock and are read after the lock was granted; and the new
instructions are built positionally (`_new_intent`), the same instance as
`PaymentIntent(**fields)`."""

import threading
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection, connections, transaction

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, ServiceError
from kernodeck.payments import locks, services
from kernodeck.payments.models import ChainState, PaymentIntent, PaymentMethod
from kernodeck.payments.services import instructions
from tests.factories import make_offer, make_order

# -- the instance -----------------------------------------------------------------------


def _fields(order, method, now):
    return {
        "purpose": "order",
        "order": order,
        "topup": None,
        "extension": None,
        "repays": None,
        "owner": order.owner,
        "method": method,
        "chain": method.chain,
        "testnet": False,
        "address": "bc1qexample",
        "wallet_fingerprint": "e06675e6",
        "derivation_index": 7,
        "solana_reference": None,
        "demo_wallet": True,
        "amount_base": 1234,
        "amount_usd": Decimal("12.34"),
        "rate_usd_per_coin": Decimal("97000"),
        "rate_source": "kraken",
        "rate_fetched_at": now,
        "uri": "bitcoin:bc1qexample?amount=0.00001234",
        "created_at": now,
        "expires_at": now + timedelta(hours=1),
        "monitor_until": now + timedelta(hours=2),
    }


def _comparable(intent):
    values = {
        field.attname: getattr(intent, field.attname)
        for field in PaymentIntent._meta.concrete_fields
        if field.attname != "id"
    }
    cached = {name: id(value) for name, value in intent._state.fields_cache.items()}
    return values, cached, intent._state.adding, intent._state.db


def test_new_intent_is_the_instance_the_keyword_constructor_builds(configured):
    order = make_order(offer=make_offer())
    method = PaymentMethod.objects.get(code="btc-bitcoin")
    now = clock.now()

    built = instructions._new_intent(**_fields(order, method, now))
    expected = PaymentIntent(**_fields(order, method, now))

    assert _comparable(built) == _comparable(expected)
    assert isinstance(built.pk, type(expected.pk)) and built.pk != expected.pk  # a fresh UUID
    assert built.order is order and built.owner is order.owner and built.method is method
    assert built.topup is None and built.repays is None
    assert (built.status, built.received_base, built.reversed_base) == ("pending", 0, 0)


def test_new_intent_refuses_a_field_the_model_does_not_have(configured):
    order = make_order(offer=make_offer())
    method = PaymentMethod.objects.get(code="btc-bitcoin")
    with pytest.raises(TypeError, match="no field"):
        instructions._new_intent(**_fields(order, method, clock.now()), colour="blue")


def test_the_locking_read_returns_the_orders_instructions_newest_first(configured, fresh_rates):
    order = make_order(offer=make_offer())
    first = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )
    services.payment_intent_abandon(intent=first, actor=order.owner)
    second = services.payment_intent_create_for_order(
        order=order, method_code="eth-ethereum", actor=order.owner
    )
    ChainState.objects.create(network="tron", last_success_at=(watched_at := clock.now()))
    with transaction.atomic():
        found, method, rate, state, intents = locks.lock_order_of_owner_with_method_and_intents(
            owner=order.owner,
            reference=order.reference.lower(),
            method_code="usdt-tron",
            fresh_since=clock.now() - timedelta(minutes=5),
        )
    assert found.pk == order.pk and found.owner is order.owner
    assert method.code == "usdt-tron" and rate.asset == "USDT"
    assert state.network == "tron" and state.last_success_at == watched_at
    assert [intent.pk for intent in intents] == [second.pk, first.pk]
    assert all(intent.order is found for intent in intents)
    assert [intent.method.code for intent in intents] == ["eth-ethereum", "btc-bitcoin"]


# -- concurrency, PostgreSQL ------------------------------------------------------------


def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")


def _wait_for_a_lock_wait(thread, outcome, timeout=10.0):
    deadline = time.monotonic() + timeout
    with connections["default"].cursor() as cursor:
        while time.monotonic() < deadline and thread.is_alive():
            # pg_stat_activity is a snapshot per transaction unless cleared.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND cardinality(pg_blocking_pids(pid)) > 0"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError(f"the second request never waited on the lock: {outcome}")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_instructions_committed_while_waiting_on_the_lock_are_seen(configured, fresh_rates):
    """The second request's locking statement waits on the order's lock; the holder adds
    instructions and commits; the second then sees them (409), no second instructions."""
    _needs_postgres()
    configured.KERNODECK_THROTTLE_PAYMENT_CREATE = (10_000, 3600)
    order = make_order(offer=make_offer(units_total=10))
    owner = order.owner
    outcome = []

    def second():
        try:
            services.payment_intent_create_for_reference(
                owner=owner, reference=order.reference, method_code="eth-ethereum", actor=owner
            )
            outcome.append("created")
        except ServiceError as exc:
            outcome.append(exc.status)
        except Exception as exc:  # anything else is what the test reports
            outcome.append(repr(exc))
        finally:
            connections.close_all()

    prepared = instructions.instructions_prepare("btc-bitcoin")
    with transaction.atomic():
        locked = locks.lock_order_of_owner(owner=owner, reference=order.reference)
        thread = threading.Thread(target=second)
        thread.start()
        _wait_for_a_lock_wait(thread, outcome)
        instructions._create_for_locked_order(
            order=locked,
            method_code="btc-bitcoin",
            actor=owner,
            prepared=prepared,
            different_payment=False,
        )
    thread.join(timeout=30)

    assert outcome == [409]
    assert PaymentIntent.objects.filter(order=order).count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_eight_concurrent_requests_for_one_order_give_one_set_of_instructions(
    configured, fresh_rates
):
    _needs_postgres()
    configured.KERNODECK_THROTTLE_PAYMENT_CREATE = (10_000, 3600)
    order = make_order(offer=make_offer(units_total=10))
    owner = order.owner
    start = threading.Barrier(8)
    outcomes = []

    def create(method):
        try:
            start.wait()
            services.payment_intent_create_for_reference(
                owner=owner, reference=order.reference, method_code=method, actor=owner
            )
            outcomes.append("created")
        except Conflict:
            outcomes.append(409)
        except Exception as exc:  # anything else is what the test reports
            outcomes.append(repr(exc))
        finally:
            connections.close_all()

    methods = ["btc-bitcoin", "eth-ethereum", "usdt-tron", "ltc-litecoin"] * 2
    threads = [threading.Thread(target=create, args=(m,)) for m in methods]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(outcomes, key=str) == sorted(["created"] + [409] * 7, key=str)
    assert PaymentIntent.objects.filter(order=order).count() == 1
