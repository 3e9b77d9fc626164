"""The order file follows its order by itself: it polls a small owner-only state endpoint,
which answers 204 while nothing changed and HX-Refresh once settlement, preparation, access
or the end changed what the page shows. Access is never rendered once the period is past."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.provisioning import selectors as provisioning_selectors
from kernodeck.provisioning import services as provisioning_services
from kernodeck.settlement import orders as settlement_orders
from tests.factories import (
    make_offer,
    make_operator,
    make_order,
    make_settled_order,
    make_ssh_key,
    make_user,
)

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
T0 = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
SEEN = re.compile(r'id="follow" hx-get="([^"]+)" hx-trigger="every (\d+)s"')


def follow_url(client, order):
    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()
    match = SEEN.search(page)
    return match and match.group(1).replace("&amp;", "&")


def active_rental(token="nb-token-SECRET-77"):
    clock.freeze(T0)
    order = make_settled_order(offer=make_offer(units_total=1), days=3, preparation="notebook")
    make_ssh_key(order.owner)
    operator = make_operator()
    provisioning_services.rental_prepare(order=order, actor=operator)
    return provisioning_services.rental_deliver(
        order=order,
        host="node.example.org",
        port=22,
        user="kd-user",
        url="http://127.0.0.1:8888/",
        token=token,
        actor=operator,
    )


def test_an_unpaid_order_file_polls_and_is_told_to_reload_once_settled():
    order = make_order()
    client = Client()
    client.force_login(order.owner)
    url = follow_url(client, order)
    assert url and url.startswith(reverse("orders:state", args=[order.reference]) + "?seen=")

    unchanged = client.get(url)
    assert unchanged.status_code == 204 and "HX-Refresh" not in unchanged
    assert "no-store" in unchanged["Cache-Control"]

    settlement_orders.order_settle(order=order, cause={"test": "follow"})

    changed = client.get(url)
    assert (changed.status_code, changed["HX-Refresh"]) == (200, "true")
    # The reloaded page polls with the new state, which is unchanged again.
    assert client.get(follow_url(client, order)).status_code == 204


def test_the_state_endpoint_is_the_owners_only():
    order = make_order()
    url = reverse("orders:state", args=[order.reference]) + "?seen=x"
    assert Client().get(url).status_code == 302
    other = Client()
    other.force_login(make_user())
    assert other.get(url).status_code == 404
    staff = Client()
    staff.force_login(make_user(staff=True))
    assert staff.get(url).status_code == 404


def test_a_cancelled_order_file_does_not_poll():
    order = make_order()
    settlement_orders.order_cancel(order=order, actor=order.owner)
    client = Client()
    client.force_login(order.owner)
    assert follow_url(client, order) is None


@pytest.mark.django_db(transaction=True)  # slots are allocated after commit
def test_access_is_gone_from_the_page_the_moment_the_period_ends_before_the_state_catches_up():
    order = active_rental()
    client = Client()
    client.force_login(order.owner)
    clock.freeze(order.ends_at - timedelta(seconds=1))
    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()
    assert 'id="access"' in page and "nb-token-SECRET-77" in page
    assert 'id="period-over"' not in page
    url = follow_url(client, order)

    clock.freeze(order.ends_at)  # no clock tick ran: the state still says active
    order.refresh_from_db()
    assert order.rental_state == "active"

    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()
    assert 'id="access"' not in page
    assert "nb-token-SECRET-77" not in page and "kd-user" not in page
    assert 'id="period-over"' in page
    assert "your access has been withdrawn" in page
    assert client.get(url)["HX-Refresh"] == "true"
    assert provisioning_selectors.access_for_owner(order=order) is None
    assert provisioning_selectors.access_for_owner_by_order([order]) == {order.pk: None}
