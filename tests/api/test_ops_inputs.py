"""The operators' node endpoints answer 422 naming the field for input the database cannot
hold (too long, a lone surrogate), as the customer API does, never 500."""

import json

import pytest

from kernodeck.accounts import services as account_services
from kernodeck.provisioning.models import Node
from tests.factories import make_offer, make_operator

pytestmark = pytest.mark.django_db


@pytest.fixture
def ops(client):
    _token, raw = account_services.api_token_create(user=make_operator(), name="ops")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


def post(client, path, raw_json: str):
    """POST a JSON text as written (so "\\ud800" reaches the server as JSON escapes)."""
    return client.post(f"/api/v1{path}", raw_json, content_type="application/json")


def _node(offer_obj, **fields):
    body = {"name": "n-1", "offer": offer_obj.slug, "gpu_count": 1, "host": "gpu.example"}
    body.update(fields)
    return json.dumps(body)


LONG = [
    ("name", "n" * 65),
    ("host", "h" * 300),
    ("admin_user", "u" * 300),
    ("notes", "x" * 10_001),
    ("offer", "o" * 300),
]


@pytest.mark.parametrize(("field", "value"), LONG, ids=[f for f, _v in LONG])
def test_an_over_long_node_field_is_422_naming_it(ops, field, value):
    offer = make_offer()
    response = post(ops, "/ops/nodes", _node(offer, **{field: value}))
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"{field}:")
    assert not Node.objects.filter(host="h" * 300).exists()


@pytest.mark.parametrize("field", ["name", "host", "notes", "admin_user", "offer"])
def test_a_lone_surrogate_in_a_node_field_is_422_naming_it(ops, field):
    offer = make_offer()
    body = _node(offer, **{field: "SURROGATE"}).replace("SURROGATE", "\\ud800")
    response = post(ops, "/ops/nodes", body)
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"{field}:")
    assert "unicode" in response.json()["detail"].lower()


def test_a_lone_surrogate_in_a_recipe_or_a_state_reason_is_422(ops):
    offer = make_offer()
    assert post(ops, "/ops/nodes", _node(offer)).status_code == 201
    recipe = post(ops, "/ops/nodes/n-1/ssh", '{"recipes": {"python": "pip \\ud800"}}')
    assert recipe.status_code == 422
    assert recipe.json()["detail"].startswith("recipes.python:")
    key = post(ops, "/ops/nodes/n-1/ssh", '{"recipes": {"\\udfff": "pip"}}')
    assert key.status_code == 422
    reason = post(ops, "/ops/nodes/n-1/state", '{"state": "maintenance", "reason": "\\ud800"}')
    assert reason.status_code == 422
    assert reason.json()["detail"].startswith("reason:")
    long_reason = post(
        ops, "/ops/nodes/n-1/state", json.dumps({"state": "maintenance", "reason": "r" * 301})
    )
    assert long_reason.status_code == 422
    host_key = post(ops, "/ops/nodes/n-1/host-key", '{"offered": "ssh-ed25519 \\ud800"}')
    assert host_key.status_code == 422
    assert Node.objects.get(name="n-1").state == "available"
