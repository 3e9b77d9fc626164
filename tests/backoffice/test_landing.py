"""The operators' landing page at /backoffice/: staff only, links every operator screen
with the counts that need a human at the top, in a fixed number of queries; staff land
there after signing in, and the admin's "View site" link leads there."""

import re
import uuid
from datetime import timedelta

import pytest
from django.test import Client

from kernodeck.core import clock
from kernodeck.orders.models import Order, PaymentState, RentalState
from kernodeck.support.models import Status as TicketStatus
from kernodeck.support.models import Ticket
from tests.budgets.data import build
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

SCREEN_PATHS = (
    "/backoffice/review/",
    "/backoffice/rentals/",
    "/backoffice/fleet/",
    "/backoffice/nodes/",
    "/backoffice/payments/rate/",
    "/backoffice/support/",
    "/backoffice/outbox/",
    "/backoffice/core/auditevent/",
    "#kd-records",
)


def _main(response) -> str:
    return response.content.decode().split("<main", 1)[1]


def _figures(response) -> dict[str, str]:
    return dict(re.findall(r'data-figure="([a-z-]+)">([^<]*)<', response.content.decode()))


def _needs_a_human(size: int, waiting: int):
    """`size` rows of every kind (tests/budgets: a third of the payments in review),
    `waiting` rentals stuck in the queue and `waiting` tickets waiting for an answer."""
    dataset = build(size)
    now = clock.now()
    stuck = Order.objects.order_by("pk").values_list("pk", flat=True)[:waiting]
    Order.objects.filter(pk__in=list(stuck)).update(
        payment_state=PaymentState.SETTLED,
        settled_at=now - timedelta(hours=2),
        rental_state=RentalState.QUEUED,
        rental_state_changed_at=now - timedelta(hours=2),
    )
    Ticket.objects.bulk_create(
        Ticket(
            id=uuid.uuid4(),
            owner=dataset.customer,
            kind="other",
            subject=f"Question {i}",
            status=TicketStatus.OPEN,
            created_at=now,
            last_customer_at=now,
            updated_at=now,
        )
        for i in range(waiting)
    )
    return dataset


def test_a_customer_is_refused_and_a_visitor_sent_to_sign_in():
    customer = Client()
    customer.force_login(make_user())
    assert customer.get("/backoffice/").status_code == 403

    visitor = Client().get("/backoffice/")
    assert visitor.status_code == 302
    assert "/backoffice/login/" in visitor["Location"]


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ("Needs you now", "Exchange rates", "Audit trail", "E-mail outbox")),
        ("es", ("Lo que te necesita ahora", "Tipos de cambio", "Registro de auditoría")),
    ],
)
def test_the_landing_page_links_every_operator_screen(language, words):
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_user(staff=True, is_superuser=True))
    html = _main(client.get("/backoffice/"))
    for path in SCREEN_PATHS:
        assert f'href="{path}' in html, path
    for word in words:
        assert word in html, word
    assert 'id="kd-records"' in html


@pytest.mark.parametrize(("size", "waiting", "reviews"), [(2, 1, 1), (12, 6, 4)])
def test_the_landing_page_counts_what_needs_a_human_in_fixed_queries(
    django_assert_num_queries, size, waiting, reviews
):
    dataset = _needs_a_human(size, waiting)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(dataset.operator)
    with django_assert_num_queries(LANDING_QUERIES):
        response = client.get("/backoffice/")
    shown = _figures(response)
    assert shown["stuck-rentals"] == str(waiting)
    assert shown["tickets-open"] == str(waiting)
    assert shown["review-payments"] == str(reviews)


def test_staff_land_on_the_back_office_after_signing_in_and_customers_on_their_account():
    operator = make_user(staff=True, is_superuser=True)
    response = Client().post("/account/sign-in/", {"email": operator.email, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/backoffice/"

    customer = make_user()
    response = Client().post("/account/sign-in/", {"email": customer.email, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/account/"


def test_the_admin_view_site_link_leads_to_the_landing_page():
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(make_user(staff=True, is_superuser=True))
    html = client.get("/backoffice/orders/order/").content.decode()
    assert re.search(r'<a href="/backoffice/">View site</a>', html)


# Measured with one case of each kind; a query per row shows as a larger count at six.
LANDING_QUERIES = 23
