"""Every constraint on an order that a write can hit is refused with its reason, never a 500.

- `reference` unique (race): `order_register` retries a colliding reference in a
  savepoint; `test_a_colliding_reference_is_retried`.
- `orders_order_units_range`, `orders_order_days_allowed` (value): the quote refuses them
  first, 422 naming the field; `test_values_the_quote_refuses_never_reach_the_database`.
- `orders_order_gpus_match_units`, `orders_order_amounts_positive` (value): GPUs and
  amounts are computed from the quote and the offer's prices, never taken from input;
  `test_gpus_and_amounts_come_from_the_quote`.
- `orders_order_payment_state_valid`, `orders_order_rental_state_valid`,
  `orders_order_rental_needs_settlement` (internal): only the state machine writes them; a
  write that skips it is refused by the database
  (`test_state_constraints_are_reached_only_through_the_state_machine`), and an unsettled
  order has no rental, so a move on it is a 404 before any write
  (`test_a_rental_move_on_an_unpaid_order_is_refused_before_the_database`).
"""

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from kernodeck.accounts import services as account_services
from kernodeck.core.errors import InvalidInput
from kernodeck.orders import services
from kernodeck.orders.models import Order, PaymentState, RentalState
from tests.factories import api_post, make_offer, make_operator, make_order, make_user

pytestmark = pytest.mark.django_db


def test_a_colliding_reference_is_retried(monkeypatch):
    taken = make_order()
    fresh = iter([taken.reference, taken.reference, "KD-FRSH-0001"])
    monkeypatch.setattr(services, "new_reference", lambda: next(fresh))

    order = make_order(owner=make_user(), offer=make_offer(slug="second"))

    assert order.reference == "KD-FRSH-0001"
    assert Order.objects.filter(reference=taken.reference).count() == 1


@pytest.mark.parametrize(
    ("days", "units", "field"),
    [(5, 1, "days"), (7, 0, "units"), (7, 11, "units"), (0, 1, "days")],
)
def test_values_the_quote_refuses_never_reach_the_database(days, units, field):
    offer = make_offer()

    with pytest.raises(InvalidInput) as refused:
        services.order_register(
            owner=make_user(), offer=offer.slug, days=days, units=units, preparation="pytorch"
        )

    assert refused.value.field == field
    assert not Order.objects.exists()


def test_gpus_and_amounts_come_from_the_quote():
    offer = make_offer(gpus_per_unit=4, prices={3: "10.00", 7: "20.00", 30: "80.00"})

    order = make_order(offer=offer, units=3, days=7)

    assert (order.gpus, order.gpus_per_unit, order.units) == (12, 4, 3)
    assert order.unit_price_usd == Decimal("20.00")
    assert order.total_usd == Decimal("60.00")


def test_state_constraints_are_reached_only_through_the_state_machine():
    order = make_order()

    # The database is the last word: a write that skips the state machine is refused.
    for change in (
        {"payment_state": "paid-ish"},
        {"rental_state": "running"},
        {"rental_state": RentalState.ACTIVE},  # not settled
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            Order.objects.filter(pk=order.pk).update(**change)

    order.refresh_from_db()
    assert (order.payment_state, order.rental_state) == (
        PaymentState.AWAITING_PAYMENT,
        RentalState.NOT_STARTED,
    )


@pytest.mark.parametrize("action", ["prepare", "suspend", "end"])
def test_a_rental_move_on_an_unpaid_order_is_refused_before_the_database(client, action):
    order = make_order()
    _token, raw = account_services.api_token_create(user=make_operator(), name="ops")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"

    response = api_post(client, f"/ops/rentals/{order.reference}/{action}", {"reason": "x"})

    assert response.status_code == 404, response.content
    assert response.json()["detail"] == "No rental with this reference."
    order.refresh_from_db()
    assert order.rental_state == RentalState.NOT_STARTED
