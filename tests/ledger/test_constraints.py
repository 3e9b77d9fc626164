"""Every constraint of the ledger that a write can hit: refused with its reason, never an
IntegrityError (a 500 on the web).

Every entry is appended by `services._append` under the account's row lock, which reads
the last entry and the entry of the same cause first: that lock serialises the races.

| constraint                            | kind     | write path, and what guards it        |
|---------------------------------------|----------|---------------------------------------|
| ledger_topup_allowed_amounts          | value    | topup_amount_parse / the API schema:  |
|                                       |          |   422 before anything is written      |
| ledger_entry_sequence_once            | race     | _append: the account lock             |
| ledger_balance_never_negative         | race     | _append: InsufficientBalance (409)    |
|                                       |          |   under the account lock              |
| ledger_entry_sign_by_kind             | value    | balance_adjust refuses 0 (422); the   |
|                                       |          |   charges and credits pass their sign |
| ledger_one_charge_per_order           | race     | order_pay_with_balance: the order's   |
|                                       |          |   lock; order_charge maps a violation |
|                                       |          |   to a 409                            |
| ledger_one_charge_per_extension       | race     | extension_charge: the offer's lock,   |
|                                       |          |   a violation mapped to a 409         |
| ledger_one_refund_per_order           | internal | balance_refund_order: a repeat        |
|                                       |          |   returns the refund                  |
| ledger_one_credit_per_topup           | internal | topup_credit (the allocator): a       |
|                                       |          |   repeat is a no-op, another payment  |
|                                       |          |   of the same top-up a 409            |
| ledger_one_credit_per_intent_and_kind | internal | balance_credit_payment: a repeat      |
|                                       |          |   returns the credit                  |
| ledger_topup_credit_has_cause         | internal | topup_credit passes top-up and intent |
| ledger_payment_credit_has_intent      | internal | balance_credit_payment passes intent  |
| ledger_refund_has_order               | internal | balance_refund_order passes the order |
"""

from decimal import Decimal

import pytest
from django.db import transaction

from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.ledger import selectors, services
from kernodeck.ledger.models import EntryKind, LedgerEntry, TopUp
from kernodeck.orders import locks as order_locks
from kernodeck.payments import services as payment_services
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from tests.constraint_races import needs_postgres, race
from tests.factories import make_offer, make_order, make_settled_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = pytest.mark.django_db


def _operator():
    return make_user(staff=True)


# -- top-ups -------------------------------------------------------------------------------


@pytest.mark.parametrize("amount", ["0", "99.99", "-100", "250", "nan"])
def test_a_topup_amount_outside_the_list_is_refused_before_the_database(amount):
    with pytest.raises(InvalidInput) as refused:
        settlement_topups.topup_create(account=make_user(), amount_usd=amount, method_code="x")
    assert refused.value.field == "amount_usd"
    assert not TopUp.objects.exists()


# -- sequence and balance: the account lock ------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_movements_of_one_account_number_their_entries_once():
    needs_postgres()
    account, operator = make_user(), _operator()
    funded_account(account, "100", operator)

    def move(n):
        amount = "-30" if n % 2 else "10"  # 4 debits of 30 and 4 credits of 10
        return services.balance_adjust(
            account=account, amount_usd=amount, actor=operator, reason=f"race {n}"
        )

    results = race(move, 8)

    assert all(isinstance(r, LedgerEntry | services.InsufficientBalance) for r in results), results
    entries = list(LedgerEntry.objects.filter(account=account).order_by("sequence"))
    assert [e.sequence for e in entries] == list(range(1, len(entries) + 1))
    running = Decimal(0)
    for entry in entries:
        running += entry.amount_usd
        assert entry.balance_after_usd == running >= 0
    assert selectors.balance_available(account=account) == running


@pytest.mark.parametrize("amount", ["0", "0.00", "0.001", "abc", "nan", ""])
def test_an_adjustment_of_zero_is_refused_with_the_reason(amount):
    account = make_user()
    with pytest.raises(InvalidInput) as refused:
        services.balance_adjust(account=account, amount_usd=amount, actor=_operator(), reason="x")
    assert refused.value.field == "amount_usd"
    assert "not 0" in refused.value.message
    assert not LedgerEntry.objects.exists()


def test_a_debit_past_the_balance_is_a_409_not_a_negative_balance():
    account = make_user()
    funded_account(account, "10", _operator())
    with pytest.raises(services.InsufficientBalance):
        services.balance_adjust(account=account, amount_usd="-10.01", actor=account, reason="x")
    assert selectors.balance_available(account=account) == Decimal("10.00")


# -- one charge per order / extension ------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_balance_payments_of_one_order_charge_it_once():
    needs_postgres()
    account = make_user()
    funded_account(account, "1000", _operator())
    order = make_order(owner=account)

    results = race(
        lambda _n: settlement_orders.order_pay_with_balance(order=order, actor=account), 5
    )

    assert all(isinstance(r, tuple) for r in results), results  # each sees it paid
    assert len({entry.pk for _order, entry in results}) == 1
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE, order=order).count() == 1


def test_a_second_charge_past_the_check_is_a_409(monkeypatch):
    """The charge that passed the "already charged" check while another was written: the
    unique constraint refuses it, the service answers 409, nothing is left behind."""
    account = make_user()
    funded_account(account, "1000", _operator())
    order = make_order(owner=account)
    settlement_orders.order_pay_with_balance(order=order, actor=account)
    monkeypatch.setattr(services, "_existing", lambda kind, **cause: None)

    with pytest.raises(Conflict, match="balance changed meanwhile"), transaction.atomic():
        services.order_charge(order=order_locks.lock_order(order.pk), actor=account)

    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE).count() == 1


def test_a_second_extension_charge_past_the_check_is_a_409(monkeypatch):
    pytest.importorskip("kernodeck.provisioning.services")
    from kernodeck.support import services as support_services
    from tests.support.helpers import in_days, settled_order

    order = settled_order()
    funded_account(order.owner, "500", _operator())
    ticket = support_services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="More days",
        body="please",
        fields={"extra_days": "3", "deadline": in_days(2).date().isoformat()},
    )
    extension = ticket.extensions.get()
    extension.price_usd = Decimal("30.00")  # as offered
    first = services.extension_charge(extension=extension, actor=order.owner)
    assert services.extension_charge(extension=extension, actor=order.owner) == first
    monkeypatch.setattr(services, "_existing", lambda kind, **cause: None)

    with pytest.raises(Conflict, match="balance changed meanwhile"):
        services.extension_charge(extension=extension, actor=order.owner)

    assert LedgerEntry.objects.filter(kind=EntryKind.EXTENSION_CHARGE).count() == 1


# -- one credit per cause: the system's repeats --------------------------------------------


def test_refunding_an_order_twice_refunds_it_once():
    order = make_settled_order()
    first = services.balance_refund_order(order=order, actor=None, reason="failed")
    again = services.balance_refund_order(order=order, actor=None, reason="failed")
    assert again == first
    assert first.order_id == order.pk
    assert LedgerEntry.objects.filter(kind=EntryKind.REFUND_CREDIT).count() == 1


def test_crediting_a_topup_twice_credits_it_once(configured, fresh_rates):
    account = make_user()
    topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    first = services.topup_credit(intent=intent, amount_usd=topup.amount_usd)
    again = services.topup_credit(intent=intent, amount_usd=topup.amount_usd)

    assert again == first
    assert (first.topup_id, first.intent_id) == (topup.pk, intent.pk)
    assert selectors.balance_available(account=account) == Decimal("100.00")

    other = payment_services.payment_intent_create(
        owner=account, method_code="eth-ethereum", amount_usd=topup.amount_usd,
        purpose="topup", topup=topup,
    )  # fmt: skip
    with pytest.raises(Conflict, match="already credited by another payment"):
        services.topup_credit(intent=other, amount_usd=topup.amount_usd)
    assert LedgerEntry.objects.filter(kind=EntryKind.TOPUP_CREDIT).count() == 1


def test_crediting_a_payment_twice_for_one_cause_credits_it_once(configured, fresh_rates):
    order = make_order(offer=make_offer())
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    credit = {"intent": intent, "amount_usd": Decimal("12.50"), "actor": None, "memo": "over"}
    first = services.balance_credit_payment(kind=EntryKind.OVERPAYMENT_CREDIT, **credit)
    again = services.balance_credit_payment(kind=EntryKind.OVERPAYMENT_CREDIT, **credit)

    assert again == first
    assert first.intent_id == intent.pk
    assert LedgerEntry.objects.filter(intent=intent).count() == 1
