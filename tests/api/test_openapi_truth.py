"""What the document says is what the API answers (issue 24, item 7)."""

import json

import pytest

from kernodeck.accounts import services as account_services
from tests.factories import make_operator, make_order

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(client):
    return client.get("/api/v1/openapi.json").json()


@pytest.fixture
def ops(client):
    _token, raw = account_services.api_token_create(user=make_operator(), name="ops")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


def test_an_unknown_rental_state_is_a_documented_422_naming_the_field(ops, document):
    response = ops.get("/api/v1/ops/rentals?state=available")
    assert response.status_code == 422
    assert response.json()["detail"].startswith("state: Unknown rental state")
    assert "422" in document["paths"]["/api/v1/ops/rentals"]["get"]["responses"]


def test_the_calendar_documents_its_409(api, document):
    order = make_order(owner=api.user)  # not paid: no rental dates yet
    response = api.get(f"/api/v1/orders/{order.reference}/calendar.ics")
    assert response.status_code == 409
    responses = document["paths"]["/api/v1/orders/{reference}/calendar.ics"]["get"]["responses"]
    assert "409" in responses


def test_deliver_refuses_a_port_written_as_a_string(ops):
    response = ops.post(
        "/api/v1/ops/rentals/KD-NONE-NONE/deliver",
        json.dumps({"host": "gpu.example", "port": "22", "user": "kd"}),
        content_type="application/json",
    )
    assert response.status_code == 422
    assert response.json()["detail"].startswith("port:")
