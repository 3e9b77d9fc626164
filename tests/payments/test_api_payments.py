import pytest

from kernodeck.payments.models import PaymentIntent, PaymentMethod
from tests.factories import api_post, make_offer, make_order

pytestmark = pytest.mark.django_db


def test_payment_methods_say_which_are_available(client, configured, fresh_rates, settings):
    settings.KERNODECK_XPUBS = {**settings.KERNODECK_XPUBS, "litecoin": ""}
    PaymentMethod.objects.filter(code="btc-bitcoin").update(enabled=False)

    methods = {m["code"]: m for m in client.get("/api/v1/payment-methods").json()}

    assert len(methods) == 8
    assert methods["usdt-tron"]["available"] is True
    assert methods["btc-bitcoin"] == {
        "code": "btc-bitcoin",
        "asset": "BTC",
        "network": "Bitcoin",
        "available": False,
        "reason": "Not offered at the moment.",
    }
    assert methods["ltc-litecoin"]["available"] is False


def test_create_declare_and_cancel_through_the_api(api, configured, fresh_rates):
    order = make_order(
        owner=api.user, offer=make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"})
    )

    created = api_post(api, f"/orders/{order.reference}/payments", {"method": "usdt-tron"})
    body = created.json()
    declared = api_post(api, f"/payments/{body['id']}/declare").json()
    again = api_post(api, f"/payments/{body['id']}/declare").json()
    cancelled = api_post(api, f"/payments/{body['id']}/cancel").json()
    shown = api.get(f"/api/v1/orders/{order.reference}").json()

    assert created.status_code == 201
    assert body["amount"] == "209.96"
    assert body["amount_base_units"] == "209960000"
    assert body["amount_usd"] == "210.00"
    assert body["network"] == "Tron (TRC-20)"
    assert body["uri"] == body["address"]
    assert declared["declared_at"] is not None and declared["status"] == "pending"
    assert again["declared_at"] == declared["declared_at"]
    assert cancelled["abandoned_at"] is not None
    assert [p["id"] for p in shown["payments"]] == [body["id"]]


def test_live_instructions_answer_409_and_stale_rate_503(api, configured, fresh_rates):
    from datetime import timedelta

    from kernodeck.core import clock

    order = make_order(owner=api.user)
    api_post(api, f"/orders/{order.reference}/payments", {"method": "btc-bitcoin"})

    second = api_post(api, f"/orders/{order.reference}/payments", {"method": "btc-bitcoin"})
    other = make_order(owner=api.user)
    clock.freeze(clock.now() + timedelta(hours=1))
    stale = api_post(api, f"/orders/{other.reference}/payments", {"method": "eth-ethereum"})

    assert (
        second.status_code == 409 and "already has payment instructions" in second.json()["detail"]
    )
    assert stale.status_code == 503 and "out of date" in stale.json()["detail"]
    assert api.get(f"/api/v1/orders/{other.reference}").status_code == 200


def test_unknown_method_answers_422_naming_the_field(api, configured, fresh_rates):
    order = make_order(owner=api.user)

    response = api_post(api, f"/orders/{order.reference}/payments", {"method": "doge-dogecoin"})

    assert response.status_code == 422
    assert response.json()["detail"].startswith("method: Unknown payment method")


def test_another_customers_payment_is_404(api, configured, fresh_rates):
    from kernodeck.payments import services

    foreign_order = make_order()
    foreign = services.payment_intent_create_for_order(
        order=foreign_order, method_code="btc-bitcoin", actor=foreign_order.owner
    )

    assert api.get(f"/api/v1/payments/{foreign.pk}").status_code == 404
    assert api_post(api, f"/payments/{foreign.pk}/declare").status_code == 404
    assert api_post(api, f"/payments/{foreign.pk}/cancel").status_code == 404
    assert (
        api_post(
            api, f"/orders/{foreign_order.reference}/payments", {"method": "ltc-litecoin"}
        ).status_code
        == 404
    )
    assert api.get("/api/v1/payments/not-a-uuid").status_code == 404
    foreign.refresh_from_db()
    assert foreign.declared_at is None and foreign.abandoned_at is None
    assert PaymentIntent.objects.count() == 1


@pytest.mark.parametrize("method", ["no-such-method", "btc-bitcoin"])
def test_another_customers_order_is_404_before_the_method_is_judged(
    api, configured, fresh_rates, method
):
    foreign_order = make_order()
    PaymentMethod.objects.filter(code="btc-bitcoin").update(enabled=False)

    response = api_post(api, f"/orders/{foreign_order.reference}/payments", {"method": method})
    unknown = api_post(api, "/orders/KD-NOSUCHREF/payments", {"method": method})

    assert response.status_code == 404
    assert unknown.status_code == 404
    assert PaymentIntent.objects.count() == 0


def test_the_owners_order_hears_why_the_method_is_refused(api, configured, fresh_rates):
    order = make_order(owner=api.user)
    PaymentMethod.objects.filter(code="btc-bitcoin").update(enabled=False)

    response = api_post(api, f"/orders/{order.reference}/payments", {"method": "btc-bitcoin"})

    assert response.status_code == 409
    assert "not offered" in response.json()["detail"]
