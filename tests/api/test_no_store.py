"""Answers that carry a token or access details say `Cache-Control: no-store`."""

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.accounts import services as account_services
from kernodeck.provisioning import services as provisioning_services
from tests.factories import PASSWORD, make_operator, make_settled_order, make_ssh_key, make_user

pytestmark = pytest.mark.django_db


def active_rental(*, token):
    staff = make_user(staff=True)
    order = make_settled_order()
    make_ssh_key(order.owner)
    provisioning_services.rental_allocate(order=order)
    provisioning_services.rental_prepare(order=order, actor=staff)
    return provisioning_services.rental_deliver(
        order=order,
        host="gpu-01.example.org",
        port=22,
        user="kd-rental",
        url="https://127.0.0.1:8888/lab",
        token=token,
        actor=staff,
    )


def _bearer(user):
    _token, raw = account_services.api_token_create(user=user, name="t")
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_the_token_exchange_is_not_cached(client):
    make_user(email="ada@example.org")
    ok = client.post(
        "/api/v1/auth/token",
        {"email": "ada@example.org", "password": PASSWORD},
        content_type="application/json",
    )
    assert ok.status_code == 200 and ok.json()["token"]
    assert ok["Cache-Control"] == "no-store"
    refused = client.post(
        "/api/v1/auth/token",
        {"email": "ada@example.org", "password": "wrong wrong"},
        content_type="application/json",
    )
    assert refused["Cache-Control"] == "no-store"


def test_a_customers_answers_with_access_are_not_cached():
    order = active_rental(token="nb-secret-token-2")
    api = _bearer(order.owner)
    me = api.get("/api/v1/auth/me")
    assert me.status_code == 200 and me["Cache-Control"] == "no-store"
    detail = api.get(f"/api/v1/orders/{order.reference}")
    assert detail.status_code == 200
    assert "nb-secret-token-2" in detail.content.decode()
    assert detail["Cache-Control"] == "no-store"
    missing = api.get("/api/v1/orders/KD-NONE-NONE")
    assert missing["Cache-Control"] == "no-store"


def test_the_operators_access_answers_are_not_cached():
    order = active_rental(token="nb-secret-token-3")
    operator = make_operator()
    answer = _bearer(operator).get(f"/api/v1/ops/rentals/{order.reference}/access")
    assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
    desk = Client()
    desk.force_login(operator)
    page = desk.get(reverse("desk:access", args=[order.reference]))
    assert page.status_code == 200
    assert "no-store" in page["Cache-Control"]


def test_the_public_catalog_stays_cacheable(client):
    assert "no-store" not in client.get("/api/v1/offers").get("Cache-Control", "")
