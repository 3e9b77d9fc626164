"""Lost races in support answer 409 with the reason, never 500.

The PostgreSQL test opens extension requests for one order from several real concurrent
connections through the API; the other tests drive each constraint-guarded write path
past its service-level check, so the database's constraint is what refuses."""

import threading

import pytest
from django.db import connection, connections
from django.test import Client

from kernodeck.accounts import services as account_services
from kernodeck.core.errors import Conflict
from kernodeck.support import selectors, services
from kernodeck.support.models import Extension, Message, Ticket
from tests.support.helpers import in_days, settled_order

pytest.importorskip("kernodeck.provisioning.services")


def _body(order):
    return {
        "kind": "extension",
        "order": order.reference,
        "subject": "More days",
        "body": "please",
        "fields": {"extra_days": "3", "deadline": in_days(2).date().isoformat()},
    }


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("racers", [3, 6])
def test_concurrent_extension_requests_for_one_order_answer_201_then_409(racers):
    if connection.vendor != "postgresql":
        pytest.skip("race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")
    order = settled_order()
    _token, raw = account_services.api_token_create(user=order.owner, name="race")
    start = threading.Barrier(racers)
    answers = []

    def race():
        client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", raise_request_exception=False)
        try:
            start.wait()
            response = client.post(
                "/api/v1/tickets", _body(order), content_type="application/json"
            )
            answers.append((response.status_code, response.json().get("detail", "")))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=race) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    codes = sorted(code for code, _detail in answers)
    assert codes == [201] + [409] * (racers - 1)
    for code, detail in answers:
        if code == 409:
            assert "already has an extension request in progress" in detail
    assert Extension.objects.filter(order=order).count() == 1
    assert Ticket.objects.filter(order=order).count() == 1


@pytest.mark.django_db
def test_the_open_extension_constraint_answers_409_and_stores_nothing(api, monkeypatch):
    """The request that passed the check while another was being written: the unique
    constraint refuses it, the API answers 409 with the reason, nothing is left behind."""
    order = settled_order(owner=api.user)
    first = api.post("/api/v1/tickets", _body(order), content_type="application/json")
    assert first.status_code == 201
    # As if the other request had not committed yet when this one checked.
    monkeypatch.setattr(selectors, "extension_open_for", lambda *, order: None)
    second = api.post("/api/v1/tickets", _body(order), content_type="application/json")
    assert second.status_code == 409
    assert "already has an extension request in progress" in second.json()["detail"]
    assert Ticket.objects.filter(order=order).count() == 1
    assert Message.objects.filter(ticket__order=order).count() == 1


@pytest.mark.django_db
def test_the_service_raises_conflict_not_integrity_error(monkeypatch):
    order = settled_order()
    services.ticket_create(owner=order.owner, **{k: v for k, v in _body(order).items()})
    monkeypatch.setattr(selectors, "extension_open_for", lambda *, order: None)
    with pytest.raises(Conflict):
        services.ticket_create(owner=order.owner, **{k: v for k, v in _body(order).items()})


@pytest.mark.django_db
def test_an_unmapped_constraint_error_still_answers_409(api, monkeypatch):
    """The API's net under the services: any IntegrityError that escapes is a 409."""
    from django.db import IntegrityError

    def refuse(**kwargs):
        raise IntegrityError('duplicate key value violates unique constraint "x"')

    monkeypatch.setattr(services, "ticket_create", refuse)
    response = api.post(
        "/api/v1/tickets",
        {"kind": "other", "subject": "s", "body": "b"},
        content_type="application/json",
    )
    assert response.status_code == 409
    assert "constraint" in response.json()["detail"]
