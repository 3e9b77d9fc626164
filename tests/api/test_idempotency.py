"""`Idempotency-Key` on the API's money writes: one write per key, the first answer replayed."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client

from kernodeck.accounts import services as account_services
from kernodeck.core import clock
from kernodeck.core.models import IdempotentAnswer
from kernodeck.ledger.models import EntryKind, LedgerEntry, TopUp
from kernodeck.orders.models import Order, PaymentState
from kernodeck.payments.models import PaymentIntent
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

pytestmark = pytest.mark.django_db

TOPUP = {"amount_usd": "100", "method": "btc-bitcoin"}


def bearer(user=None):
    user = user or make_user()
    _token, raw = account_services.api_token_create(user=user, name="tests")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", raise_request_exception=False)
    client.user = user
    return client


def post(client, path, body=None, key=None):
    headers = {} if key is None else {"Idempotency-Key": key}
    return client.post(
        f"/api/v1{path}", body or {}, content_type="application/json", headers=headers
    )


def test_a_retried_top_up_with_the_same_key_is_written_once_and_answered_the_same(
    configured, fresh_rates
):
    api = bearer()

    first = post(api, "/topups", TOPUP, key="7d1c6e0a-retry")
    second = post(api, "/topups", TOPUP, key="7d1c6e0a-retry")

    assert first.status_code == second.status_code == 201
    assert second.content == first.content
    assert second["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert second["Cache-Control"] == "no-store"
    assert TopUp.objects.filter(account=api.user).count() == 1
    assert PaymentIntent.objects.count() == 1


def test_without_a_key_or_with_a_new_key_every_request_writes(configured, fresh_rates):
    api = bearer()

    answers = [
        post(api, "/topups", TOPUP).status_code,
        post(api, "/topups", TOPUP, key="one").status_code,
        post(api, "/topups", TOPUP, key="two").status_code,
    ]

    assert answers == [201, 201, 201]
    assert TopUp.objects.filter(account=api.user).count() == 3


def test_a_key_reused_for_a_different_request_is_refused_and_writes_nothing(
    configured, fresh_rates
):
    api = bearer()
    post(api, "/topups", TOPUP, key="k-1")

    other_body = post(api, "/topups", {**TOPUP, "amount_usd": "500"}, key="k-1")

    assert other_body.status_code == 422
    assert other_body.json()["detail"].startswith("Idempotency-Key: this key was already used")
    assert TopUp.objects.filter(account=api.user).count() == 1


def test_keys_belong_to_the_credential_that_sent_them(configured, fresh_rates):
    ana, bea = bearer(), bearer()

    post(ana, "/topups", TOPUP, key="same")
    answered = post(bea, "/topups", TOPUP, key="same")

    assert answered.status_code == 201
    assert "Idempotent-Replayed" not in answered
    assert TopUp.objects.filter(account=bea.user).count() == 1


@pytest.mark.parametrize("key", ["", "has space", "x" * 256, "clé", "tab\there", "١٢٣"])
def test_a_key_that_is_not_visible_ascii_is_a_422_and_writes_nothing(configured, fresh_rates, key):
    api = bearer()

    response = post(api, "/topups", TOPUP, key=key)

    assert response.status_code == 422
    assert response.json()["detail"].startswith("Idempotency-Key:")
    assert not TopUp.objects.exists()


def test_a_refusal_is_not_kept_so_the_corrected_request_with_the_same_key_goes_through():
    api = bearer()
    order = make_order(owner=api.user, offer=make_offer(prices={3: "40.00", 7: "80", 30: "300"}))
    path = f"/orders/{order.reference}/pay-with-balance"

    refused = post(api, path, key="pay-order-1")  # the balance is empty: 409
    funded_account(api.user, "100", make_user(staff=True))
    paid = post(api, path, key="pay-order-1")
    again = post(api, path, key="pay-order-1")

    assert refused.status_code == 409
    assert paid.status_code == 200
    assert "Idempotent-Replayed" not in paid
    assert again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.content == paid.content
    order.refresh_from_db()
    assert order.payment_state == PaymentState.SETTLED
    assert LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE).count() == 1


def test_an_order_created_twice_with_one_key_is_one_order():
    api = bearer()
    offer = make_offer()
    body = {"offer": offer.slug, "days": 7, "units": 1, "preparation": "pytorch"}

    first = post(api, "/orders", body, key="order-a")
    second = post(api, "/orders", body, key="order-a")

    assert first.status_code == 201, first.content
    assert second.content == first.content
    assert Order.objects.filter(owner=api.user).count() == 1


def test_keys_are_forgotten_after_a_day(configured, fresh_rates):
    api = bearer()
    post(api, "/topups", TOPUP, key="daily")
    IdempotentAnswer.objects.update(created_at=clock.now() - timedelta(hours=25))

    later = post(api, "/topups", TOPUP, key="daily")

    assert later.status_code == 201
    assert "Idempotent-Replayed" not in later
    assert TopUp.objects.filter(account=api.user).count() == 2
    assert IdempotentAnswer.objects.count() == 1


def test_the_document_lists_the_header_on_every_money_write_and_nowhere_else():
    schema = Client().get("/api/v1/openapi.json").json()
    with_header = {
        (method, path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
    }

    assert with_header == {
        ("post", "/api/v1/orders"),
        ("post", "/api/v1/orders/{reference}/payments"),
        ("post", "/api/v1/orders/{reference}/pay-with-balance"),
        ("post", "/api/v1/topups"),
        ("post", "/api/v1/tickets/{ticket_id}/extension/pay-with-balance"),
        ("post", "/api/v1/tickets/{ticket_id}/extension/payments"),
    }
    assert all("x-idempotent" not in op for ops in schema["paths"].values() for op in ops.values())


def test_the_balance_is_charged_once_for_a_replayed_payment():
    api = bearer()
    funded_account(api.user, "100", make_user(staff=True))
    order = make_order(owner=api.user, offer=make_offer(prices={3: "40.00", 7: "80", 30: "300"}))
    path = f"/orders/{order.reference}/pay-with-balance"

    answers = [post(api, path, key="once").status_code for _ in range(3)]

    assert answers == [200, 200, 200]
    charged = LedgerEntry.objects.filter(kind=EntryKind.ORDER_CHARGE).get()
    assert charged.amount_usd == Decimal("-80.00")
