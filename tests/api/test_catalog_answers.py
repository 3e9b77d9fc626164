"""The catalog's answers, built as bytes by the views (catalog/api.py), are what django-ninja
would have rendered: the schema's shape, its JSON, its headers; and the API's URLs are
resolved first without shadowing any page."""

import json

import pytest
from django.test import Client
from django.urls import Resolver404, URLResolver, resolve
from ninja.responses import NinjaJSONEncoder

from config import urls as site_urls
from kernodeck.accounts import services as account_services
from kernodeck.catalog.api import OfferOut, QuoteOut
from tests.factories import api_post, make_offer, make_user

pytestmark = pytest.mark.django_db

QUOTE = {"offer": "b200", "days": 7, "units": 2, "preparation": "pytorch"}


def test_a_quote_is_the_schemas_shape_in_ninjas_json(client):
    make_offer(slug="b200", gpus_per_unit=2, prices={3: "936.00", 7: "2118.48", 30: "7956.00"})

    response = api_post(client, "/quotes", QUOTE)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    validated = QuoteOut.model_validate(response.json())
    assert response.content == json.dumps(validated.model_dump(), cls=NinjaJSONEncoder).encode()


def test_the_offers_are_the_schemas_shape(client):
    make_offer(slug="b200", gpus_per_unit=2)

    response = client.get("/api/v1/offers")

    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert [OfferOut.model_validate(item).slug for item in response.json()] == ["b200"]


def test_answers_to_a_request_with_a_token_are_not_kept_even_when_built_as_bytes():
    make_offer(slug="b200", gpus_per_unit=2)
    _token, raw = account_services.api_token_create(user=make_user(), name="t")
    bearer = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")

    assert api_post(bearer, "/quotes", QUOTE)["Cache-Control"] == "no-store"
    assert bearer.get("/api/v1/offers")["Cache-Control"] == "no-store"
    assert "no-store" not in api_post(Client(), "/quotes", QUOTE).get("Cache-Control", "")


def test_the_api_is_resolved_first_and_no_other_pattern_takes_its_paths():
    first = site_urls.urlpatterns[0]
    assert isinstance(first, URLResolver) and str(first.pattern) == "api/v1/"
    assert resolve("/api/v1/offers").route == "api/v1/offers"
    for pattern in site_urls.urlpatterns[1:]:
        for path in ("api/v1/offers", "api/v1/quotes", "api/v1/orders/ABC/payments"):
            try:
                matched = pattern.resolve(path)
            except Resolver404:
                matched = None
            assert matched is None, (str(pattern.pattern), path)


@pytest.mark.parametrize(
    "send",
    [
        lambda client: client.get("/api/v1/offers"),
        lambda client: api_post(client, "/quotes", QUOTE),
    ],
    ids=["offers", "quotes"],
)
def test_a_warm_catalog_answer_is_one_cache_read_and_no_query(
    client, send, monkeypatch, django_assert_num_queries
):
    """One round trip to the cache (the version and the entry together), no write, no
    throttle counter, no query: the budget of a public catalog answer."""
    from django.core.cache import caches

    make_offer(slug="b200", gpus_per_unit=2)
    assert send(client).status_code == 200  # builds the entries
    backend = caches["default"]
    calls, depth = [], []

    def counted(name, method):
        def call(*args, **kwargs):
            if not depth:  # not the calls one makes inside another (locmem's get_many)
                calls.append(name)
            depth.append(name)
            try:
                return method(*args, **kwargs)
            finally:
                depth.pop()

        return call

    for name in ("get", "get_many", "set", "set_many", "add", "incr", "delete", "touch"):
        monkeypatch.setattr(backend, name, counted(name, getattr(backend, name)))
    with django_assert_num_queries(0):
        assert send(client).status_code == 200
    assert calls == ["get_many"]
