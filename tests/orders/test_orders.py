from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.catalog.models import OfferPrice
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import Order, PaymentState, RentalState
from kernodeck.orders.references import PATTERN
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_user

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def test_order_snapshots_the_quote_and_gets_a_readable_reference():
    offer = make_offer(gpus_per_unit=2, prices={3: "936.00", 7: "2118.48", 30: "7956.00"})

    order = make_order(offer=offer, days=7, units=2)

    assert PATTERN.match(order.reference)
    assert (order.units, order.gpus, order.unit_price_usd, order.total_usd) == (
        2,
        4,
        Decimal("2118.48"),
        Decimal("4236.96"),
    )
    assert (order.payment_state, order.rental_state) == ("awaiting_payment", "not_started")
    event = AuditEvent.objects.get(action="order.registered", target_id=str(order.pk))
    assert event.after["total_usd"] == "4236.96"


def test_price_change_after_registration_leaves_the_order_unchanged():
    offer = make_offer()
    order = make_order(offer=offer, days=7, units=3)

    OfferPrice.objects.filter(offer=offer, days=7).update(unit_price_usd=Decimal("999.99"))
    order.refresh_from_db()

    assert order.unit_price_usd == Decimal("210.00")
    assert order.total_usd == Decimal("630.00")


def test_order_beyond_the_fleet_is_refused_and_nothing_is_written():
    offer = make_offer(units_total=3)
    make_order(offer=offer, units=2)

    with pytest.raises(Conflict, match=r"Only 1 GPU .* unit is free right now"):
        make_order(offer=offer, units=2)

    assert Order.objects.count() == 1


def test_lapsed_hold_and_cancellation_release_units():
    offer = make_offer(units_total=2)
    lapsed = make_order(offer=offer, units=1)
    cancelled = make_order(offer=offer, units=1)
    with pytest.raises(Conflict):
        make_order(offer=offer, units=1)

    settlement_orders.order_cancel(order=cancelled, actor=cancelled.owner)
    make_order(offer=offer, units=1)
    with pytest.raises(Conflict):
        make_order(offer=offer, units=1)

    clock.freeze(lapsed.hold_until + timedelta(seconds=1))
    make_order(offer=offer, units=1)


def test_settled_orders_hold_units_until_the_rental_ends():
    offer = make_offer(units_total=1)
    order = make_order(offer=offer, units=1)
    Order.objects.filter(pk=order.pk).update(payment_state=PaymentState.SETTLED)
    clock.freeze(order.hold_until + timedelta(days=1))

    with pytest.raises(Conflict):
        make_order(offer=offer, units=1)

    Order.objects.filter(pk=order.pk).update(rental_state=RentalState.ENDED)
    make_order(offer=offer, units=1)


def test_database_refuses_a_rental_state_before_settlement():
    from django.db import IntegrityError, transaction

    order = make_order()
    with pytest.raises(IntegrityError), transaction.atomic():
        Order.objects.filter(pk=order.pk).update(rental_state=RentalState.QUEUED)


def test_database_refuses_gpus_that_do_not_match_units():
    from django.db import IntegrityError, transaction

    order = make_order(units=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        Order.objects.filter(pk=order.pk).update(gpus=3)


def test_cancel_is_refused_once_settled_and_changes_nothing():
    order = make_order()
    Order.objects.filter(pk=order.pk).update(payment_state=PaymentState.SETTLED)
    order.refresh_from_db()

    with pytest.raises(Conflict, match="A settled order cannot be cancelled"):
        settlement_orders.order_cancel(order=order, actor=order.owner)

    order.refresh_from_db()
    assert order.payment_state == PaymentState.SETTLED
    assert not AuditEvent.objects.filter(action="order.cancelled").exists()


def test_cancel_twice_is_one_cancellation():
    order = make_order()
    settlement_orders.order_cancel(order=order, actor=order.owner)
    settlement_orders.order_cancel(order=order, actor=order.owner)

    assert AuditEvent.objects.filter(action="order.cancelled").count() == 1


def test_inactive_or_unknown_offer_cannot_be_ordered():
    offer = make_offer(is_active=False)

    with pytest.raises(InvalidInput) as refused:
        make_order(offer=offer)

    assert refused.value.field == "offer"


# -- web: confirmation, order file, list, cancel ------------------------------------


def test_anonymous_visitor_signs_in_and_returns_to_the_same_configuration(client):
    offer = make_offer(slug="h100")
    make_user(email="ada@example.org")
    query = "?offer=h100&days=30&units=3&preparation=notebook"

    first = client.get(reverse("orders:new") + query)
    assert first.status_code == 302
    signin = client.post(
        first.url, {"email": "ada@example.org", "password": "correct horse battery staple 42"}
    )
    back = client.get(signin.url, **EN).content.decode()

    assert signin.url == reverse("orders:new") + query
    assert "Confirm your order" in back
    assert '<input type="hidden" name="units" value="3">' in back
    assert offer.gpu_model in back


def test_confirmation_registers_the_order_and_opens_its_file(client):
    make_offer(slug="h100", gpu_model="H100 80 GB")
    user = make_user()
    client.force_login(user)

    response = client.post(
        reverse("orders:new"),
        {"offer": "h100", "days": "7", "units": "2", "preparation": "pytorch"},
    )

    order = Order.objects.get(owner=user)
    assert response.url == reverse("orders:detail", args=[order.reference])
    page = client.get(response.url, **EN).content.decode()
    assert order.reference in page
    assert "420.00 USD" in page
    assert "The rental has not started." in page
    # Not paid yet: its dates come with access, after payment (no "ask support").
    assert "when access is delivered, after payment" in page
    assert "topic=dates" not in page
    assert "Order registered" in page


def test_confirmation_with_a_bad_configuration_explains_and_registers_nothing(client):
    make_offer(slug="h100")
    client.force_login(make_user())

    response = client.post(
        reverse("orders:new"),
        {"offer": "h100", "days": "5", "units": "2", "preparation": "pytorch"},
        **EN,
    )

    assert response.status_code == 422
    assert "Choose a duration of 3, 7 or 30 days." in response.content.decode()
    assert not Order.objects.exists()


def test_my_orders_lists_newest_first_and_paginates(client):
    user = make_user()
    offer = make_offer(units_total=100)
    references = [make_order(owner=user, offer=offer).reference for _ in range(22)]
    client.force_login(user)

    first = client.get(reverse("orders:list"), **EN).content.decode()
    second = client.get(reverse("orders:list"), {"page": 2}, **EN).content.decode()

    assert first.index(references[-1]) < first.index(references[-2])
    assert references[0] not in first and references[0] in second
    assert "Page 1 of 2" in first


def test_my_orders_empty_state(client):
    client.force_login(make_user())

    assert "No orders yet" in client.get(reverse("orders:list"), **EN).content.decode()


def test_customer_cancels_an_unsettled_order_after_confirming(client):
    order = make_order()
    client.force_login(order.owner)

    confirm = client.get(reverse("orders:cancel", args=[order.reference]), **EN)
    assert f"Cancel order {order.reference}?" in confirm.content.decode()
    client.post(reverse("orders:cancel", args=[order.reference]))

    order.refresh_from_db()
    assert order.payment_state == PaymentState.CANCELLED
    assert (
        "Order cancelled"
        in client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()
    )


# -- permissions ---------------------------------------------------------------------


@pytest.mark.parametrize("who", ["anonymous", "other", "staff", "owner"])
def test_order_file_permission_matrix(who):
    order = make_order()
    client = Client()
    if who == "other":
        client.force_login(make_user())
    elif who == "staff":
        client.force_login(make_user(staff=True))
    elif who == "owner":
        client.force_login(order.owner)
    urls = [
        reverse("orders:detail", args=[order.reference]),
        reverse("orders:cancel", args=[order.reference]),
    ]

    statuses = [client.get(url).status_code for url in urls]
    cancel_post = client.post(urls[1]).status_code

    expected = {"anonymous": 302, "other": 404, "staff": 404, "owner": 200}[who]
    assert statuses == [expected, expected]
    order.refresh_from_db()
    if who == "owner":
        assert order.payment_state == PaymentState.CANCELLED
    else:
        assert cancel_post in {302, 404} and order.payment_state == PaymentState.AWAITING_PAYMENT


def test_staff_see_every_order_in_the_back_office():
    order = make_order()
    staff = make_user(staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)

    listing = client.get("/backoffice/orders/order/").content.decode()

    assert order.reference in listing


def test_the_order_file_is_never_kept_by_a_cache(client):
    """It shows the rental's access (and a notebook's or inference server's secret)."""
    order = make_order()
    client.force_login(order.owner)

    response = client.get(reverse("orders:detail", args=[order.reference]))

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
