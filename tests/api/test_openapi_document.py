"""The OpenAPI document says what the API really answers: errors, limits, enums."""

import pytest

from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(client):
    return client.get("/api/v1/openapi.json").json()


def _responses(document, path, method):
    return set(document["paths"][f"/api/v1{path}"][method]["responses"])


def test_error_answers_are_listed_where_they_can_happen(document):
    assert {"401", "403", "404", "409", "422", "429"} <= _responses(
        document, "/orders/{reference}/cancel", "post"
    )
    assert {"401", "403", "409", "413", "422", "429"} <= _responses(document, "/orders", "post")
    assert {"409", "422", "429"} <= _responses(document, "/auth/register", "post")
    assert {"401", "404"} <= _responses(document, "/payments/{intent_id}", "get")
    assert "401" not in _responses(document, "/offers", "get")
    assert "401" not in _responses(document, "/auth/register", "post")
    token = document["paths"]["/api/v1/auth/token"]["post"]["responses"]
    assert token["401"]["description"] == "The email or the password is not correct."
    assert document["components"]["schemas"]["Error"]["required"] == ["detail"]


def test_limits_are_in_the_document(document):
    schemas = document["components"]["schemas"]
    quote = schemas["QuoteIn"]["properties"]
    assert quote["days"]["enum"] == [3, 7, 30]
    assert (quote["units"]["minimum"], quote["units"]["maximum"]) == (1, 10)
    assert quote["preparation"]["enum"] == ["python", "pytorch", "notebook", "inference"]
    assert schemas["TopUpIn"]["properties"]["amount_usd"]["enum"] == [
        "100",
        "500",
        "2000",
        "10000",
    ]
    assert "usdt-tron" in schemas["PayIn"]["properties"]["method"]["enum"]
    assert schemas["RegisterIn"]["properties"]["email"]["maxLength"] == 254


def test_a_wrong_method_answers_json_405(client):
    response = client.delete("/api/v1/offers")

    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"] == "Method DELETE is not allowed here; use GET."
    assert response["Allow"] == "GET"


@pytest.mark.parametrize("field", ["first_name", "last_name"])
def test_an_over_long_name_is_reported_under_its_own_field(client, field):
    body = {"first_name": "Ada", "last_name": "L", "email": "ada@example.org"}
    body["password"] = PASSWORD
    body[field] = "x" * 151

    api = client.post("/api/v1/auth/register", body, content_type="application/json")

    assert api.status_code == 422
    assert api.json()["detail"].startswith(f"{field}:")


@pytest.mark.parametrize("field", ["first_name", "last_name"])
def test_the_profile_service_names_the_long_field_too(field):
    from kernodeck.accounts import services
    from kernodeck.core.errors import InvalidInput
    from tests.factories import make_user

    user = make_user()
    names = {"first_name": "Ada", "last_name": "L", field: "y" * 151}

    with pytest.raises(InvalidInput) as refused:
        services.profile_update(user=user, **names)

    assert refused.value.field == field


def test_the_balance_refusal_promises_amounts_only_when_it_has_them(document):
    refusal = document["components"]["schemas"]["InsufficientOut"]
    assert refusal["required"] == ["detail"]
    assert {"available_usd", "needed_usd"} <= set(refusal["properties"])


@pytest.mark.parametrize("spelling", ["1e2", "100.000", "100.0", " 100", "\uff11\uff10\uff10"])
def test_a_top_up_amount_is_taken_only_as_the_document_spells_it(api, spelling):
    answer = api.post(
        "/api/v1/topups",
        {"amount_usd": spelling, "method": "btc"},
        content_type="application/json",
    )

    assert answer.status_code == 422, answer.content
    assert "amount_usd" in answer.content.decode()
