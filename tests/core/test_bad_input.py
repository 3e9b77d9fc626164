"""Input from outside never answers 5xx: one input layer refuses it with 4xx, naming the field.

Runs on SQLite and on PostgreSQL (which refuses NUL bytes in text and integers past 64
bits, so a value that slips through the edge would be a 500 there).
"""

import json

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.accounts.models import User
from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import Order
from tests.factories import PASSWORD, make_offer, make_order, make_user

pytestmark = pytest.mark.django_db

ASCII_ONLY_REFUSED = ["³", "٣", "²⁵", "9" * 5000, "1" * 20]


@pytest.fixture
def offer(db):
    return make_offer(slug="h100", preparations=("python", "pytorch"))


def _query(**changes):
    return {"days": "7", "units": "1", "preparation": "python", **changes}


@pytest.mark.parametrize("value", ASCII_ONLY_REFUSED)
@pytest.mark.parametrize("field", ["units", "days"])
def test_configurator_refuses_digits_int_does_not_take_naming_the_field(
    client, offer, field, value
):
    message = "Choose between 1 and 10 units." if field == "units" else "Choose a duration of 3, 7"
    for name in ("catalog:configure", "catalog:summary"):
        response = client.get(reverse(name, args=[offer.slug]), _query(**{field: value}))

        assert response.status_code == 422, (name, value)
        assert message in response.content.decode()
        assert 'id="summary-total"' not in response.content.decode()


@pytest.mark.parametrize("value", ASCII_ONLY_REFUSED)
def test_order_form_refuses_odd_digits_and_registers_nothing(client, offer, value):
    client.force_login(make_user())
    config = {"offer": offer.slug, **_query(units=value)}

    shown = client.get(reverse("orders:new"), config)
    posted = client.post(reverse("orders:new"), config)

    assert shown.status_code == posted.status_code == 422
    assert "Choose between 1 and 10 units." in posted.content.decode()
    assert Order.objects.count() == 0


@pytest.mark.parametrize("value", [*ASCII_ONLY_REFUSED, True, 7.0, "7", None, [7], {"n": 7}])
def test_api_quote_takes_only_json_integers(client, offer, value):
    body = {"offer": offer.slug, "days": 7, "units": value, "preparation": "python"}

    response = client.post("/api/v1/quotes", body, content_type="application/json")

    assert response.status_code == 422, value
    assert response.json()["detail"].startswith("units")


@pytest.mark.parametrize("encoding", ["multipart", "urlencoded"])
def test_api_answers_a_form_body_with_a_4xx_not_a_500(api, offer, encoding):
    body = {"offer": offer.slug, "days": "7", "units": "1", "preparation": "python"}
    if encoding == "multipart":
        sent = {"data": body}  # the test client's default encoding
    else:
        from urllib.parse import urlencode

        sent = {"data": urlencode(body), "content_type": "application/x-www-form-urlencoded"}

    quote = api.post("/api/v1/quotes", **sent)
    order = api.post("/api/v1/orders", **sent)

    assert 400 <= quote.status_code < 500, quote.content
    assert 400 <= order.status_code < 500, order.content
    assert "detail" in quote.json()
    assert Order.objects.count() == 0


def test_api_order_refuses_json_true_as_a_number(api, offer):
    body = {"offer": offer.slug, "days": 7, "units": True, "preparation": "python"}

    response = api.post("/api/v1/orders", body, content_type="application/json")

    assert response.status_code == 422
    assert response.json()["detail"].startswith("units")
    assert Order.objects.count() == 0


@pytest.mark.parametrize(
    "query", ["offset=99999999999999999999999", "limit=99999999999999999999999", "limit=0"]
)
def test_api_pagination_refuses_huge_or_empty_windows(api, query):
    make_order(owner=api.user)

    response = api.get(f"/api/v1/orders?{query}")

    assert response.status_code == 422
    assert response.json()["detail"].split(":")[0] in {"offset", "limit"}


def test_api_pagination_still_pages(api):
    for _ in range(3):
        make_order(owner=api.user)

    response = api.get("/api/v1/orders?limit=2&offset=1")

    assert response.status_code == 200
    assert len(response.json()["items"]) == 2
    assert response.json()["count"] == 3


def test_web_order_list_ignores_a_nonsense_page_number(client):
    client.force_login(make_user())

    for page in ["³", "9" * 5000, "99999999999999999999"]:
        assert client.get(reverse("orders:list"), {"page": page}).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/gpus/h100%00/",
        "/orders/KD-%00AAA-BBBB/",
        "/gpus/h100/?units=1%00",
        "/gpus/h100/?un%00its=1",
        "/api/v1/orders/KD-%00AAA",
        "/api/v1/offers?x=%00",
    ],
)
def test_nul_bytes_in_paths_and_queries_are_refused_at_the_edge(api, offer, path):
    api.force_login(api.user)

    response = api.get(path)

    assert response.status_code == 400
    if path.startswith("/api/"):
        assert "NUL" in response.json()["detail"]
    else:
        assert "NUL" in response.content.decode()


def test_nul_bytes_in_forms_are_refused_naming_the_field(client):
    make_user(email="ada@example.org")

    response = client.post(
        reverse("accounts:signin"), {"email": "ada@example.org\x00", "password": PASSWORD}
    )

    assert response.status_code == 400
    assert "email" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "ada\x00@example.org", "password": PASSWORD}, "email"),
        ({"email": "ada@example.org", "password": "x\x00" * 8}, "password"),
        ({"email\x00": "ada@example.org", "password": PASSWORD}, "email"),
    ],
)
def test_nul_bytes_in_json_are_refused_naming_the_field(client, body, field):
    make_user(email="ada@example.org")

    response = client.post("/api/v1/auth/token", body, content_type="application/json")

    assert response.status_code == 422
    assert response.json()["detail"].startswith(field)


def test_nul_in_an_order_body_registers_nothing(api, offer):
    body = {"offer": "h100\x00", "days": 7, "units": 1, "preparation": "python\x00"}

    response = api.post("/api/v1/orders", body, content_type="application/json")

    assert response.status_code == 422
    assert Order.objects.count() == 0


def test_oversized_api_body_is_a_413_with_detail(client, settings):
    body = json.dumps({"email": "a@example.org", "password": "x" * (3 * 1024 * 1024)})

    response = client.post("/api/v1/auth/token", body, content_type="application/json")

    assert response.status_code == 413
    assert "detail" in response.json()


def test_oversized_form_is_a_413_page(client):
    response = client.post(
        reverse("accounts:signin"), {"email": "a@example.org", "password": "x" * (3 * 2**20)}
    )

    assert response.status_code == 413


def test_emails_over_254_characters_are_refused_naming_email(client):
    email = "a" * 64 + "@" + ".".join(["b" * 60] * 4) + ".org"
    assert len(email) > 254
    body = {"first_name": "Ada", "last_name": "L", "email": email, "password": PASSWORD}

    api = client.post("/api/v1/auth/register", body, content_type="application/json")
    web = Client().post(reverse("accounts:register"), body)
    signin = client.post(
        "/api/v1/auth/token",
        {"email": email, "password": PASSWORD},
        content_type="application/json",
    )

    assert api.status_code == 422
    assert api.json()["detail"].startswith("email")
    assert web.status_code in {200, 422}
    assert "email" in web.content.decode().lower()
    # No account can have it: a wrong pair like any other.
    assert signin.status_code == 401
    assert User.objects.count() == 0


def test_a_request_without_a_client_address_is_not_a_500(client):
    """Behind a Unix socket there is no REMOTE_ADDR; the audit trail stores no address."""
    make_user(email="ada@example.org")

    token = client.post(
        "/api/v1/auth/token",
        {"email": "ada@example.org", "password": "wrong password"},
        content_type="application/json",
        REMOTE_ADDR="",
    )
    web = client.post(
        reverse("accounts:signin"),
        {"email": "ada@example.org", "password": PASSWORD},
        REMOTE_ADDR="",
    )

    assert token.status_code == 401
    assert web.status_code == 302
    assert AuditEvent.objects.filter(action="account.signin_failed").get().ip_address is None
