"""Every constraint of support that a write can hit, and what answers when it does.

constraint (support_…)           kind      write path → answer
-------------------------------  --------  ---------------------------------------------------
one_open_extension_per_order     race      tickets.ticket_create (web form, API): a request
                                           made at the same moment → Conflict 409 "already
                                           has an extension request in progress" (the PG
                                           race through the API: test_ticket_race.py)
ticket_order_for_kind            value     ticket_create: extension/payment without an order
                                           → InvalidInput 422 on "order"
ticket_intent_has_order          value     ticket_create: a payment is chosen among the
                                           order's own (no order, no payment) → 422
attachment_small                 value     intake.attachment_check: over 512 KiB → 422
extension_offer_complete         value     extensions.extension_offer: days 1 to 90, a price
                                           above 0 and a future validity → 422
"""

from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.orders.models import Order
from kernodeck.support import services
from kernodeck.support.models import Extension, Ticket
from tests.constraint_races import needs_postgres, race, unexpected
from tests.factories import make_user
from tests.support.helpers import in_days, make_agent, settled_order


def _extension_request(order):
    return services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="More days",
        body="please",
        fields={"extra_days": "3", "deadline": in_days(2).date().isoformat()},
    )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_extension_requests_at_the_same_moment_make_one_and_409s():
    needs_postgres()
    order = settled_order()
    outcomes = race(lambda i: _extension_request(order), 4)
    assert unexpected(outcomes) == []
    assert sum(isinstance(o, Ticket) for o in outcomes) == 1
    for refusal in (o for o in outcomes if not isinstance(o, Ticket)):
        assert isinstance(refusal, Conflict)
        assert "already has an extension request in progress" in refusal.message
    assert Extension.objects.filter(order=order).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["extension", "payment"])
def test_a_ticket_that_needs_an_order_is_refused_without_one(kind):
    with pytest.raises(InvalidInput) as refused:
        services.ticket_create(owner=make_user(), kind=kind, subject="s", body="b", fields={})
    assert refused.value.field == "order"
    assert not Ticket.objects.exists()


@pytest.mark.django_db
def test_a_payment_ticket_names_only_a_payment_of_its_own_order():
    order = settled_order()
    with pytest.raises(InvalidInput) as refused:
        services.ticket_create(
            owner=order.owner,
            kind="payment",
            order=order.reference,
            subject="s",
            body="b",
            fields={"payment": "999999"},
        )
    assert refused.value.field in {"payment", "fields"}
    assert not Ticket.objects.filter(intent__isnull=False).exists()


@pytest.mark.django_db
def test_an_attachment_over_the_limit_is_refused_first():
    big = services.Upload("log.txt", b"x" * (512 * 1024 + 1))
    with pytest.raises(InvalidInput) as refused:
        services.ticket_create(
            owner=make_user(),
            kind="problem",
            subject="Crash",
            body="b",
            fields={"when": "first_computation"},
            attachments=[big],
        )
    assert refused.value.field == "attachments"
    assert not Ticket.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"days": 0}, "days"),
        ({"days": 91}, "days"),
        ({"price_usd": "0"}, "price_usd"),
        ({"price_usd": "-5"}, "price_usd"),
        ({"valid_until": None}, "valid_until"),
    ],
)
def test_an_incomplete_offer_is_refused_first(values, field):
    order = settled_order()
    Order.objects.filter(pk=order.pk).update(rental_state="active")  # a running rental
    _extension_request(order)
    extension = Extension.objects.get(order=order)
    offer = {"days": 3, "price_usd": "10", "valid_until": clock.now() + timedelta(days=2)}
    with pytest.raises(InvalidInput) as refused:
        services.extension_offer(extension=extension, actor=make_agent(), **(offer | values))
    assert refused.value.field == field
    extension.refresh_from_db()
    assert extension.status == "requested"
