"""The staff inbox and its permission matrix; replies with canned answers; status moves."""

import pytest
from django.urls import reverse

from kernodeck.support.models import Message, Ticket
from tests.factories import make_order, make_user
from tests.support.helpers import make_agent, problem_ticket

pytestmark = pytest.mark.django_db


def _urls(ticket):
    return {
        "inbox": reverse("support_staff:inbox"),
        "case": reverse("support_staff:ticket", args=[ticket.pk]),
        "canned": reverse("support_staff:canned", args=[ticket.pk, "double_payment"]),
    }


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("anonymous", 302),
        ("customer", 403),
        ("owner", 403),
        ("staff_without_permission", 403),
        ("agent", 200),
        ("superuser", 200),
    ],
)
def test_permission_matrix_for_the_staff_screens(client, who, expected):
    owner = make_user()
    ticket = problem_ticket(owner=owner, order=make_order(owner=owner))
    user = {
        "anonymous": None,
        "customer": make_user(),
        "owner": owner,
        "staff_without_permission": make_user(staff=True),
        "agent": make_agent(),
        "superuser": make_user(staff=True, is_superuser=True),
    }[who]
    if user is not None:
        client.force_login(user)
    for name, url in _urls(ticket).items():
        response = client.get(url)
        assert response.status_code == expected, name
    reply = client.post(
        _urls(ticket)["case"], {"form": "reply", "reply-body": "hi", "reply-status": "answered"}
    )
    assert reply.status_code == (302 if expected == 200 else expected)
    assert Message.objects.filter(ticket=ticket).count() == (2 if expected == 200 else 1)


@pytest.mark.parametrize(
    ("who", "expected"),
    [("owner", 200), ("customer", 404), ("agent", 404), ("anonymous", 302)],
)
def test_permission_matrix_for_the_customer_pages(client, who, expected):
    owner = make_user()
    ticket = problem_ticket(owner=owner)
    user = {"owner": owner, "customer": make_user(), "agent": make_agent(), "anonymous": None}[who]
    if user is not None:
        client.force_login(user)
    detail = reverse("support:detail", args=[ticket.pk])
    assert client.get(detail).status_code == expected
    response = client.post(detail, {"body": "me too"})
    assert response.status_code == (302 if expected == 200 else expected)
    assert Message.objects.filter(ticket=ticket).count() == (2 if expected == 200 else 1)


def test_unknown_ticket_is_404_for_staff(client):
    client.force_login(make_agent())
    assert (
        client.get("/backoffice/support/00000000-0000-0000-0000-000000000000/").status_code == 404
    )


def test_inbox_lists_open_tickets_oldest_wait_first_and_filters_by_kind(client):
    from kernodeck.core import clock
    from tests.support.helpers import in_days

    first = problem_ticket(owner=make_user(), subject="First")
    clock.freeze(in_days(1))
    second = problem_ticket(owner=make_user(), subject="Second")
    from kernodeck.support import services

    clock.freeze(in_days(1))
    other = services.ticket_create(owner=make_user(), kind="account", subject="Third", body="x")
    closed = problem_ticket(owner=make_user(), subject="Closed one")
    services.ticket_status_set(ticket=closed, status="closed", actor=make_agent())
    client.force_login(make_agent())
    page = client.get(reverse("support_staff:inbox")).content.decode()
    assert page.index("First") < page.index("Second") < page.index("Third")
    assert "Closed one" not in page
    assert "Closed (1)" in page
    page = client.get(reverse("support_staff:inbox") + "?kind=account").content.decode()
    assert "Third" in page and "First" not in page
    page = client.get(reverse("support_staff:inbox") + "?status=closed").content.decode()
    assert "Closed one" in page and "First" not in page
    assert {first.pk, second.pk, other.pk} <= set(Ticket.objects.values_list("pk", flat=True))


def test_case_shows_the_order_beside_the_thread_and_canned_answers_fill_the_reply(client):
    owner = make_user()
    order = make_order(owner=owner)
    ticket = problem_ticket(owner=owner, order=order)
    client.force_login(make_agent())
    page = client.get(reverse("support_staff:ticket", args=[ticket.pk])).content.decode()
    assert order.reference in page
    assert "Order registered" in page  # the order's timeline
    canned = client.get(reverse("support_staff:canned", args=[ticket.pk, "double_payment"]))
    assert canned.status_code == 200
    body = canned.content.decode()
    assert body.startswith("<textarea")
    assert f"order {order.reference}" in body
    assert client.get(reverse("support_staff:canned", args=[ticket.pk, "nope"])).status_code == 404


def test_staff_reply_can_ask_the_customer_and_close(client):
    ticket = problem_ticket(owner=make_user())
    client.force_login(make_agent())
    case = reverse("support_staff:ticket", args=[ticket.pk])
    client.post(case, {"form": "reply", "reply-body": "Which driver?", "reply-status": "waiting"})
    ticket.refresh_from_db()
    assert ticket.status == "waiting"
    client.post(case, {"form": "status", "status-status": "closed"})
    ticket.refresh_from_db()
    assert ticket.status == "closed"
    refused = client.post(case, {"form": "status", "status-status": "answered"})
    assert refused.status_code == 422
    assert "cannot become" in refused.content.decode()
    ticket.refresh_from_db()
    assert ticket.status == "closed"
