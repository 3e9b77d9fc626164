import pytest

from kernodeck.orders.models import Order
from tests.factories import api_post, make_offer, make_order

pytestmark = pytest.mark.django_db


def test_offers_are_public_with_prices_as_decimal_strings(client):
    make_offer(slug="b200", gpus_per_unit=2, prices={3: "936.00", 7: "2118.48", 30: "7956.00"})

    body = client.get("/api/v1/offers").json()

    assert body == [
        {
            "slug": "b200",
            "gpu": body[0]["gpu"],
            "vendor": "nvidia",
            "backend": "cuda",
            "memory_gib": 80,
            "gpus_per_unit": 2,
            "prices": {"3": "936.00", "7": "2118.48", "30": "7956.00"},
            "units_available": 10,
            "preparations": ["python", "pytorch", "notebook", "inference"],
        }
    ]


def test_quote_matches_the_configurator(client):
    make_offer(slug="b200", gpus_per_unit=2, prices={3: "936.00", 7: "2118.48", 30: "7956.00"})

    response = api_post(
        client, "/quotes", {"offer": "b200", "days": 7, "units": 2, "preparation": "pytorch"}
    )

    assert response.json() == {
        "offer": "b200",
        "days": 7,
        "units": 2,
        "gpus": 4,
        "preparation": "pytorch",
        "unit_price_usd": "2118.48",
        "total_usd": "4236.96",
    }


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"days": 5}, "days: Choose a duration of 3, 7 or 30 days."),
        ({"units": 0}, "units: Choose between 1 and 10 units."),
        ({"units": 11}, "units: Choose between 1 and 10 units."),
        ({"offer": "nope"}, "offer: There is no GPU offer called “nope”."),
        (
            {"preparation": "cobol"},
            "preparation: This GPU offers these preparations: "
            "python, pytorch, notebook, inference.",
        ),
    ],
)
def test_quote_validation_answers_422_naming_the_field(client, body, detail):
    make_offer(slug="h100")
    payload = {"offer": "h100", "days": 7, "units": 1, "preparation": "python", **body}

    response = api_post(client, "/quotes", payload)

    assert response.status_code == 422
    assert response.json() == {"detail": detail}


def test_order_create_needs_a_token(client):
    make_offer(slug="h100")

    response = api_post(
        client, "/orders", {"offer": "h100", "days": 7, "units": 1, "preparation": "python"}
    )

    assert response.status_code == 401
    assert not Order.objects.exists()


def test_order_lifecycle_through_the_api(api):
    make_offer(slug="h100")

    created = api_post(
        api, "/orders", {"offer": "h100", "days": 30, "units": 2, "preparation": "python"}
    )
    reference = created.json()["reference"]
    listed = api.get("/api/v1/orders").json()
    shown = api.get(f"/api/v1/orders/{reference}").json()
    cancelled = api_post(api, f"/orders/{reference}/cancel")

    assert created.status_code == 201
    assert created.json()["total_usd"] == "1600.00"
    assert created.json()["gpus"] == 2
    assert (shown["starts_at"], shown["ends_at"], shown["payments"]) == (None, None, [])
    assert listed["count"] == 1 and listed["items"][0]["reference"] == reference
    assert cancelled.json()["payment_state"] == "cancelled"


def test_not_enough_units_answers_409(api):
    make_offer(slug="h100", units_total=1)

    response = api_post(
        api, "/orders", {"offer": "h100", "days": 7, "units": 2, "preparation": "python"}
    )

    assert response.status_code == 409
    assert "free right now" in response.json()["detail"]


def test_another_customers_order_is_404_in_the_api(api):
    foreign = make_order()

    shown = api.get(f"/api/v1/orders/{foreign.reference}")
    cancel = api_post(api, f"/orders/{foreign.reference}/cancel")

    assert (shown.status_code, cancel.status_code) == (404, 404)
    assert shown.json() == {"detail": "No order with this reference on your account."}
    foreign.refresh_from_db()
    assert foreign.payment_state == "awaiting_payment"
    assert api.get("/api/v1/orders").json()["count"] == 0


def test_settled_order_cannot_be_cancelled_through_the_api(api):
    order = make_order(owner=api.user)
    Order.objects.filter(pk=order.pk).update(payment_state="settled")

    response = api_post(api, f"/orders/{order.reference}/cancel")

    assert response.status_code == 409
