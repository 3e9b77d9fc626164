"""Every constraint of the payments app that a write can hit: refused with its reason, never
an IntegrityError (a 500 on the web).

| constraint                             | kind     | write path, and what guards it       |
|----------------------------------------|----------|--------------------------------------|
| payments_method_confirmations_min_1    | value    | back-office method forms: the model's|
| payments_method_precision_within_decimals | value |   clean() (decimals are read-only)   |
| PaymentMethod.code (primary key)       | internal | payment_methods_ensure: get_or_create|
| payments_rate_positive                 | value    | rate_record_manual (422, as stored:  |
|                                        |          |   10 places); providers drop <= 0    |
| payments_counter_chain_wallet          | race     | locks.lock_counter: created in a     |
|                                        |          |   savepoint, then the row lock       |
| payments_intent_address_once           | race     | payment_intent_create: the address   |
| payments_intent_index_once             | race     |   counter's row lock (UPDATE …       |
|                                        |          |   RETURNING) serialises new addresses|
| payments_intent_has_reference_or_index | internal | payment_intent_create sets one       |
| PaymentIntent.solana_reference unique  | internal | 32 fresh random bytes per intent     |
| payments_intent_amount (base > 0)      | value    | crypto_amount rounds up, refuses a   |
| payments_intent_amount_usd (> 0)       | value    |   total <= 0; top-up amounts: 422    |
| payments_intent_order_purpose          | internal | each creator passes its own cause;   |
|                                        |          |   a repeat for one order is a 409    |
| payments_intent_closed_with_reason     | internal | _close sets both; twice is a no-op   |
| payments_intent_reversed_at            | internal | reconciling._reverse sets both       |
| payments_transfer_once                 | race     | watcher: transfer_record's savepoint |
|                                        |          |   updates the stored row; by hand:   |
|                                        |          |   TransferAlreadyRecorded (409)      |
| payments_transfer_amount (>= 0)        | value    | review_record_transfer and           |
| payments_transfer_amount_max           | value    |   ObservedTransfer refuse it (422)   |
| ChainState.network (primary key)       | internal | the watcher's get_or_create          |
"""

from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.db import transaction
from django.test import Client

from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.payments import locks, review, services, watching
from kernodeck.payments.amounts import crypto_amount
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import (
    AddressCounter,
    ChainState,
    ClosedReason,
    PaymentIntent,
    PaymentMethod,
    Rate,
    Transfer,
)
from tests.constraint_races import needs_postgres, race
from tests.factories import make_offer, make_order, make_user

pytestmark = pytest.mark.django_db


def _usdt_intent():
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )


# -- payment methods -----------------------------------------------------------------------


def _method_admin():
    operator = make_user(staff=True, is_superuser=True)
    client = Client()
    client.force_login(operator)
    return client


@pytest.mark.parametrize(
    ("field", "value"), [("confirmations", 0), ("precision", 19)], ids=["confirmations", "prec"]
)
def test_a_method_edit_the_constraints_refuse_is_a_form_error(configured, field, value):
    method = PaymentMethod.objects.get(code="eth-ethereum")  # 18 decimals
    data = {"precision": method.precision, "confirmations": method.confirmations, "enabled": "on"}
    data[field] = value

    url = f"/backoffice/payments/paymentmethod/{method.pk}/change/"
    response = _method_admin().post(url, data)

    assert response.status_code == 200  # the form again, with the error; not a 500
    errors = response.context["adminform"].form.errors[field]
    assert errors == [
        {
            "confirmations": "A payment method needs at least one confirmation.",
            "precision": "The precision cannot exceed the asset's 18 decimals.",
        }[field]
    ]
    method.refresh_from_db()
    assert getattr(method, field) != value


def test_ensuring_the_methods_twice_creates_each_once(configured):
    PaymentMethod.objects.filter(code="btc-bitcoin").delete()  # as on a flushed database

    assert services.payment_methods_ensure() == 1
    assert services.payment_methods_ensure() == 0
    assert PaymentMethod.objects.filter(code="btc-bitcoin").count() == 1


# -- rates ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-3", "0.00000000004", "1e14", "nan", "abc"])
def test_a_manual_rate_that_is_not_positive_is_refused_before_the_database(db, value):
    with pytest.raises(InvalidInput) as refused:
        services.rate_record_manual(asset="BTC", usd_per_coin=value)
    assert refused.value.field == "usd_per_coin"
    assert not Rate.objects.exists()


def test_a_provider_price_that_is_not_positive_is_dropped():
    from kernodeck.payments.rates.base import positive_price

    assert positive_price("0") is None
    assert positive_price("-1") is None
    assert positive_price("97000.5") == Decimal("97000.5")


# -- the address counter and the addresses -------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_addresses_of_a_wallet_create_one_counter():
    needs_postgres()

    def take(_n):
        with transaction.atomic():
            return locks.counter_take_index(chain="bitcoin", wallet_fingerprint="feedf00d")

    results = race(take, 6)

    assert all(isinstance(r, int) for r in results), results  # no IntegrityError among them
    assert sorted(results) == list(range(6))
    assert AddressCounter.objects.filter(wallet_fingerprint="feedf00d").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_instructions_get_distinct_addresses_indexes_and_references(
    configured, fresh_rates
):
    needs_postgres()
    offer = make_offer(units_total=100)
    orders = [make_order(offer=offer) for _ in range(8)]
    methods = ["eth-ethereum", "usdt-tron", "sol-solana", "btc-bitcoin"] * 2

    def create(n):
        return services.payment_intent_create_for_order(
            order=orders[n], method_code=methods[n], actor=orders[n].owner
        )

    results = race(create, 8)

    assert all(isinstance(r, PaymentIntent) for r in results), results
    intents = list(PaymentIntent.objects.all())
    assert len(intents) == 8
    others = [i for i in intents if i.chain != "solana"]
    assert len({(i.chain, i.address) for i in others}) == len(others)
    assert len({(i.chain, i.wallet_fingerprint, i.derivation_index) for i in others}) == 6
    solana = [i for i in intents if i.chain == "solana"]
    assert len({i.solana_reference for i in solana}) == 2
    assert all(i.derivation_index is None and i.solana_reference for i in solana)
    assert all(i.derivation_index is not None for i in others)


# -- amounts, purpose, closing -------------------------------------------------------------


def test_an_amount_is_never_zero_base_units_and_a_zero_total_is_refused():
    # The smallest total at a very high rate still asks for one quantum, never 0.
    assert crypto_amount(Decimal("0.01"), Decimal("1e15"), decimals=8, precision=8) == 1
    with pytest.raises(ValueError, match="positive"):
        crypto_amount(Decimal("0"), Decimal("97000"), decimals=8, precision=8)


@pytest.mark.parametrize("amount", ["0", "-100", "0.00"])
def test_a_topup_amount_outside_the_list_is_a_422_before_any_intent(
    api, configured, fresh_rates, amount
):
    response = api.post(
        "/api/v1/topups",
        {"amount_usd": amount, "method": "usdt-tron"},
        content_type="application/json",
    )
    assert response.status_code == 422
    assert not PaymentIntent.objects.exists()


def test_instructions_carry_their_purposes_cause_and_a_repeat_is_a_409(configured, fresh_rates):
    intent = _usdt_intent()
    assert (intent.purpose, intent.topup_id, intent.extension_id) == ("order", None, None)

    with pytest.raises(Conflict, match="already has payment instructions"):
        services.payment_intent_create_for_order(
            order=intent.order, method_code="eth-ethereum", actor=intent.order.owner
        )
    assert PaymentIntent.objects.count() == 1


def test_closing_an_orders_instructions_twice_sets_the_reason_once(configured, fresh_rates):
    intent = _usdt_intent()
    with transaction.atomic():
        first = services.payment_intents_close_for_order(
            order=intent.order, reason=ClosedReason.ORDER_CANCELLED
        )
        again = services.payment_intents_close_for_order(
            order=intent.order, reason=ClosedReason.ORDER_SETTLED
        )
    intent.refresh_from_db()
    assert [i.pk for i in first] == [intent.pk]
    assert again == []
    assert intent.closed_at is not None
    assert intent.closed_reason == ClosedReason.ORDER_CANCELLED
    with pytest.raises(ValueError):
        services.payment_intents_close_for_order(order=intent.order, reason="")


# -- transfers -----------------------------------------------------------------------------


def _recorder():
    operator = make_user(staff=True)
    operator.user_permissions.add(
        Permission.objects.get(content_type__app_label="payments", codename="record_transfer")
    )
    return operator


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_operators_recording_one_transaction_at_once_store_it_once(configured, fresh_rates):
    needs_postgres()
    intent = _usdt_intent()
    operators = [_recorder() for _ in range(3)]
    amounts = ["209.96", "5", "7"]

    def record(n):
        return review.review_record_transfer(
            intent_id=intent.pk,
            txid="f00d" * 16,
            amount=amounts[n],
            actor=operators[n],
            reason="seen on tronscan",
        )

    results = race(record, 3)

    stored = [r for r in results if isinstance(r, Transfer)]
    refused = [r for r in results if isinstance(r, Conflict)]
    assert len(stored) == 1, results
    assert len(refused) == 2, results
    assert all("already recorded" in r.message and r.field == "txid" for r in refused)
    transfer = Transfer.objects.get()
    assert transfer.pk == stored[0].pk
    assert transfer.amount_base == stored[0].amount_base  # not overwritten by the losers


def test_a_transfer_recorded_by_hand_that_a_watcher_stored_is_a_409(configured, fresh_rates):
    """Recorded by hand once a watcher stored it: refused, by the service's check and by
    `transfer_record` itself (what a request that passed that check meets), and the row
    is unchanged."""
    intent = _usdt_intent()
    seen = ObservedTransfer(
        network="tron",
        txid="f00d" * 16,
        index=0,
        address=intent.address,
        asset="USDT",
        amount_base=intent.amount_units,
        confirmations=1,
    )
    watching.transfer_record(seen, intent=intent)
    with pytest.raises(Conflict, match="already recorded"):
        review.review_record_transfer(
            intent_id=intent.pk, txid="f00d" * 16, amount="1", actor=_recorder(), reason="x"
        )
    with pytest.raises(watching.TransferAlreadyRecorded):
        watching.transfer_record(seen, intent=intent, recorded_by=_recorder(), new_only=True)
    transfer = Transfer.objects.get()
    assert transfer.amount_base == intent.amount_units
    assert transfer.recorded_by is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_watcher_passes_store_one_transfer(configured, fresh_rates):
    needs_postgres()
    intent = _usdt_intent()
    seen = ObservedTransfer(
        network="tron",
        txid="ab" * 32,
        index=0,
        address=intent.address,
        asset="USDT",
        amount_base=intent.amount_units,
        confirmations=3,
    )

    results = race(lambda _n: watching.transfer_record(seen, intent=intent), 5)

    assert all(isinstance(r, Transfer) for r in results), results
    assert Transfer.objects.count() == 1


@pytest.mark.parametrize("amount", ["0", "-1", "9" * 45, "1e60"])
def test_a_transfer_amount_out_of_range_is_a_422_before_the_database(
    configured, fresh_rates, amount
):
    intent = _usdt_intent()
    with pytest.raises(InvalidInput) as refused:
        review.review_record_transfer(
            intent_id=intent.pk, txid="beef", amount=amount, actor=_recorder(), reason="typed"
        )
    assert refused.value.field == "amount"
    assert not Transfer.objects.exists()


# -- chain state ---------------------------------------------------------------------------


def test_a_chain_state_is_created_once_however_often_the_watcher_records_it(db):
    from kernodeck.payments.watching import scanning

    scanning._health_record("tron", tip=5, cursor=5)
    scanning._health_record("tron", error="timeout")

    state = ChainState.objects.get(network="tron")
    assert (state.tip, state.last_error) == (5, "timeout")
