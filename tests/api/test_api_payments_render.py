"""POST /api/v1/orders/{reference}/payments renders its answer without validating it against
IntentOut again: the bytes are those the schema renders (GET /api/v1/payments/{id}, which
validates), for every kind of method, with the same headers."""

import json

import pytest

from kernodeck.payments.api import IntentOut, intent_out
from kernodeck.payments.selectors import intent_get_for_owner
from tests.factories import make_offer, make_order

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "method", ["btc-bitcoin", "ltc-litecoin", "eth-ethereum", "usdt-tron", "sol-solana"]
)
def test_new_instructions_are_what_their_schema_renders(api, configured, fresh_rates, method):
    order = make_order(owner=api.user, offer=make_offer(units_total=5))

    created = api.post(
        f"/api/v1/orders/{order.reference}/payments",
        data=json.dumps({"method": method}),
        content_type="application/json",
    )

    assert created.status_code == 201, created.content
    shown = api.get(f"/api/v1/payments/{created.json()['id']}")
    assert shown.status_code == 200
    assert created.content == shown.content
    for header in ("Content-Type", "Cache-Control"):
        assert created[header] == shown[header]
    intent = intent_get_for_owner(owner=api.user, intent_id=created.json()["id"])
    assert list(created.json()) == list(IntentOut.model_fields) == list(intent_out(intent))
