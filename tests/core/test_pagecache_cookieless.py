"""A visitor without cookies is answered from a stored copy right after WhiteNoise
(core/pagecache.py, StoredPageMiddleware): the same body but the token, the very headers
and CSRF cookie the whole stack gives, a token Django's CSRF check accepts, the host and
user-agent checks still made; the offers list is such a copy too and follows the catalog
version, and quotes read a per-process copy of the price sheets that does the same; a
quote's answer is kept for the very same bytes, a refusal or another view's POST never."""

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.middleware.csrf import CSRF_ALLOWED_CHARS, _unmask_cipher_token
from django.test import Client
from django.urls import reverse

from kernodeck.accounts import services as account_services
from kernodeck.catalog import caching
from kernodeck.core import clock, pagecache
from tests.factories import PASSWORD, api_post, make_offer, make_order, make_user

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ANY_TOKEN = re.compile(r"(?<=[\"'])[A-Za-z0-9]{64}(?=[\"'])")
PER_ANSWER = {"X-Request-ID"}


@pytest.fixture(autouse=True)
def page_cache(settings):
    settings.KERNODECK_PAGE_CACHE_SECONDS = 60
    settings.KERNODECK_CATALOG_CACHE_SECONDS = 5
    pagecache.clear()
    caching.clear_here()
    yield
    pagecache.clear()
    caching.clear_here()


@pytest.fixture
def offer():
    return make_offer(units_total=5)


def early(response) -> bool:
    """Whether StoredPageMiddleware answered: the session middleware, after it, never ran."""
    return not hasattr(response.wsgi_request, "session")


def token_of(response) -> str:
    tokens = set(ANY_TOKEN.findall(response.content.decode()))
    assert len(tokens) == 1
    return tokens.pop()


def same_headers(first, second) -> bool:
    def kept(response):
        return {k: v for k, v in response.headers.items() if k not in PER_ANSWER}

    return kept(first) == kept(second)


def test_a_copy_served_early_is_the_uncached_answer_but_the_token(offer):
    urls = [
        reverse("home"),
        reverse("catalog:list"),
        reverse("catalog:list") + "?backend=cuda&sort=-price",
        reverse("catalog:configure", args=[offer.slug]),
        reverse("faq"),
        reverse("sizing:estimate"),
    ]
    for url in urls:
        first = Client().get(url, **EN)  # rendered and stored
        second = Client().get(url, **EN)
        assert first.status_code == second.status_code == 200, url
        assert not early(first) and early(second), url
        assert same_headers(first, second), url
        assert int(second["Content-Length"]) == len(second.content)
        first_token, second_token = token_of(first), token_of(second)
        assert first_token != second_token
        assert first.content.replace(first_token.encode(), b"T") == (
            second.content.replace(second_token.encode(), b"T")
        ), url
        # The same cookie CsrfViewMiddleware sets, but for its value: each visitor's own.
        first_cookie = first.cookies[settings.CSRF_COOKIE_NAME]
        second_cookie = second.cookies[settings.CSRF_COOKIE_NAME]
        assert first_cookie.value != second_cookie.value
        assert {k: v for k, v in first_cookie.items() if k != "expires"} == {
            k: v for k, v in second_cookie.items() if k != "expires"
        }
        assert list(second.cookies) == [settings.CSRF_COOKIE_NAME]
        assert _unmask_cipher_token(second_token) == second_cookie.value


def test_the_token_of_an_early_copy_passes_the_csrf_check_of_its_visitor_only():
    Client().get(reverse("faq"), **EN)
    bob, carol = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    bob_page = bob.get(reverse("faq"), **EN)
    carol.get(reverse("faq"), **EN)
    assert early(bob_page)

    def switch(client, token):
        form = {"language": "es", "next": "/faq/", "csrfmiddlewaretoken": token}
        return client.post(reverse("set_language"), form).status_code

    assert switch(carol, token_of(bob_page)) == 403
    assert switch(bob, token_of(bob_page)) == 302


def test_a_visitor_with_a_csrf_cookie_keeps_their_secret_through_the_late_copy():
    browser = Client()
    Client().get(reverse("faq"), **EN)
    browser.get(reverse("faq"), **EN)
    secret = browser.cookies[settings.CSRF_COOKIE_NAME].value
    again = browser.get(reverse("faq"), **EN)
    assert not early(again)  # a cookie: the whole stack, then the stored copy
    assert not again.templates
    assert _unmask_cipher_token(token_of(again)) == secret
    assert again.cookies[settings.CSRF_COOKIE_NAME].value == secret


def test_the_random_characters_are_the_csrf_alphabet_drawn_uniformly():
    drawn = "".join(pagecache._random_chars(62) for _ in range(2000))
    counts = Counter(drawn)
    assert set(counts) == set(CSRF_ALLOWED_CHARS)
    # 2 000 expected per character; a bias of one in 32 (two bytes of 64 kept) would
    # show as ±3 % on some, a standard deviation is about 45.
    assert all(1700 < count < 2300 for count in counts.values()), counts


def test_an_unknown_host_or_a_refused_user_agent_is_refused_before_any_copy(settings):
    Client().get(reverse("faq"), **EN)
    assert early(Client().get(reverse("faq"), **EN))
    assert Client().get(reverse("faq"), HTTP_HOST="evil.example", **EN).status_code == 400
    settings.DISALLOWED_USER_AGENTS = [re.compile(r"^badbot")]
    refused = Client().get(reverse("faq"), HTTP_USER_AGENT="badbot/1.0", **EN)
    assert refused.status_code == 403


def test_a_visitor_with_any_cookie_or_credentials_goes_through_the_whole_stack():
    Client().get(reverse("faq"), **EN)
    with_language = Client()
    with_language.cookies[settings.LANGUAGE_COOKIE_NAME] = "es"
    spanish = with_language.get(reverse("faq"), **EN)
    assert not early(spanish)
    assert spanish["Content-Language"] == "es"
    assert not early(Client().get(reverse("faq"), HTTP_AUTHORIZATION="Bearer x", **EN))


def test_the_offers_list_is_a_copy_that_follows_the_catalog_version(offer):
    clock.freeze(T0)
    first = Client().get("/api/v1/offers")
    second = Client().get("/api/v1/offers")
    assert not early(first) and early(second)
    assert first.content == second.content
    assert same_headers(first, second)
    assert not second.cookies
    assert second.json()[0]["units_available"] == 5

    make_order(offer=offer, units=2)  # bumps the catalog's version
    clock.freeze(T0 + timedelta(seconds=pagecache.VERSION_CHECK_SECONDS))
    assert Client().get("/api/v1/offers").json()[0]["units_available"] == 3


def test_offers_asked_with_a_token_or_a_stray_parameter_are_never_the_copy(offer):
    _, token = account_services.api_token_create(user=make_user(), name="t")
    Client().get("/api/v1/offers")
    with_token = Client().get("/api/v1/offers", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert not early(with_token)
    assert with_token["Cache-Control"] == "no-store"
    for _ in range(2):
        assert not early(Client().get("/api/v1/offers?units=2"))


def test_quotes_follow_a_catalog_change_within_a_second(client, offer):
    clock.freeze(T0)
    body = {"offer": offer.slug, "days": 7, "units": 4, "preparation": "pytorch"}
    assert api_post(client, "/quotes", body).status_code == 200

    make_order(offer=offer, units=2)  # 3 units left: a quote for 4 is refused
    clock.freeze(T0 + timedelta(seconds=pagecache.VERSION_CHECK_SECONDS))
    refused = api_post(client, "/quotes", body)
    assert refused.status_code == 409


def test_a_warm_quote_asks_neither_the_cache_nor_the_database(
    client, offer, monkeypatch, django_assert_num_queries
):
    from django.core.cache import caches

    clock.freeze(T0)
    body = {"offer": offer.slug, "days": 7, "units": 2, "preparation": "pytorch"}
    expected = api_post(client, "/quotes", body)
    backend = caches["default"]
    calls = []

    def counted(name, method):
        def call(*args, **kwargs):
            calls.append(name)
            return method(*args, **kwargs)

        return call

    for name in ("get", "get_many", "set", "add", "incr"):
        monkeypatch.setattr(backend, name, counted(name, getattr(backend, name)))
    with django_assert_num_queries(0):
        answer = api_post(client, "/quotes", body)
    assert answer.content == expected.content
    assert calls == []
    # Past the version check: one read of the version, still no query.
    clock.freeze(T0 + timedelta(seconds=pagecache.VERSION_CHECK_SECONDS))
    with django_assert_num_queries(0):
        assert api_post(client, "/quotes", body).content == expected.content
    assert calls == ["get"]


def test_the_early_cookie_has_the_production_attributes_the_csrf_middleware_sets(settings):
    settings.CSRF_COOKIE_SECURE = True
    settings.CSRF_COOKIE_HTTPONLY = True
    settings.CSRF_COOKIE_SAMESITE = "Strict"
    settings.CSRF_COOKIE_DOMAIN = "testserver"
    settings.CSRF_COOKIE_AGE = 3600
    first = Client().get(reverse("faq"), **EN)
    second = Client().get(reverse("faq"), **EN)
    assert early(second)
    first_cookie = first.cookies[settings.CSRF_COOKIE_NAME]
    second_cookie = second.cookies[settings.CSRF_COOKIE_NAME]
    assert second_cookie["secure"] and second_cookie["httponly"]
    assert second_cookie["samesite"] == "Strict" and second_cookie["max-age"] == 3600
    assert {k: v for k, v in first_cookie.items() if k != "expires"} == {
        k: v for k, v in second_cookie.items() if k != "expires"
    }


def test_the_early_and_the_late_copy_carry_the_same_headers(offer):
    Client().get(reverse("catalog:list"), **EN)
    first_visit = Client().get(reverse("catalog:list"), **EN)
    browser = Client()
    browser.cookies[settings.CSRF_COOKIE_NAME] = "a" * 32
    returning = browser.get(reverse("catalog:list"), **EN)
    assert early(first_visit) and not early(returning) and not returning.templates
    assert same_headers(first_visit, returning)


def post_json(raw: bytes, *, content_type="application/json", path="/api/v1/quotes", **extra):
    """POST these very bytes, without cookies (a script's call)."""
    return Client().generic("POST", path, raw, content_type=content_type, **{**EN, **extra})


def quote_bytes(offer, **fields) -> bytes:
    body = {"offer": offer.slug, "days": 7, "units": 2, "preparation": "pytorch", **fields}
    return json.dumps(body).encode()


def test_a_quote_asked_again_in_the_same_bytes_is_the_copy_of_the_first_answer(offer):
    raw = quote_bytes(offer)
    first, second = post_json(raw), post_json(raw)
    assert first.status_code == second.status_code == 200
    assert not early(first) and early(second)
    assert first.content == second.content
    assert same_headers(first, second)
    assert not second.cookies
    assert second.wsgi_request.resolver_match.route == "api/v1/quotes"

    # Other bytes are another key: other units priced anew, the same fields spaced
    # otherwise answered by the view again (with the same figures).
    three = post_json(quote_bytes(offer, units=3))
    assert not early(three) and three.json()["units"] == 3
    spaced = post_json(raw.replace(b", ", b",  "))
    assert not early(spaced) and spaced.content == first.content
    spanish = post_json(raw, HTTP_ACCEPT_LANGUAGE="es")
    assert not early(spanish) and spanish["Content-Language"] == "es"


def test_only_a_priced_quote_is_kept_never_a_refusal(offer):
    refused = [
        (422, quote_bytes(offer, units=11)),  # over the limit
        (409, quote_bytes(offer, units=5 + 1)),  # more than the 5 free
        (422, quote_bytes(offer, preparation="py\x00torch")),  # an escaped NUL: the schema
        (400, quote_bytes(offer).replace(b"pytorch", b"py\x00torch")),  # a NUL: the guard
    ]
    for status, raw in refused:
        answers = [post_json(raw) for _ in range(3)]
        assert [answer.status_code for answer in answers] == [status] * 3, raw
        assert not any(early(answer) for answer in answers), raw
    assert not pagecache._answers


def test_a_quote_with_a_token_a_cookie_or_a_query_goes_through_the_stack(offer):
    raw = quote_bytes(offer)
    post_json(raw), post_json(raw)  # stored, and its headers kept
    _, token = account_services.api_token_create(user=make_user(), name="t")
    with_token = post_json(raw, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert not early(with_token) and with_token["Cache-Control"] == "no-store"
    assert not early(post_json(raw, HTTP_COOKIE=f"{settings.LANGUAGE_COOKIE_NAME}=en"))
    for _ in range(2):
        stray = Client().generic(
            "POST", "/api/v1/quotes?units=3", raw, content_type="application/json", **EN
        )
        assert stray.status_code == 422 and not early(stray)


def test_a_large_or_non_json_body_is_never_a_key(offer):
    raw = quote_bytes(offer)
    padded = raw[:-1] + b" " * (pagecache.POST_BODY_LIMIT + 1 - len(raw)) + b"}"
    assert len(padded) > pagecache.POST_BODY_LIMIT
    for body, content_type in ((padded, "application/json"), (raw, "text/plain")):
        answers = [post_json(body, content_type=content_type) for _ in range(3)]
        assert all(answer.status_code == 200 for answer in answers), content_type
        assert not any(early(answer) for answer in answers), content_type


def test_a_post_is_kept_only_where_its_view_says_so_never_a_token(offer):
    user = make_user()
    raw = json.dumps({"email": user.email, "password": PASSWORD}).encode()
    answers = [post_json(raw, path="/api/v1/auth/token") for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200] * 3
    assert not any(early(answer) for answer in answers)
    assert len({answer.json()["token"] for answer in answers}) == 3
    assert not pagecache._answers


@pytest.mark.urls("tests.core.pagecache_urls")
def test_a_shared_page_keeps_its_answer_to_a_post_only_when_it_says_so():
    body = b'{"n": 1}'
    posted = [post_json(body, path="/test/posted/").json()["calls"] for _ in range(3)]
    priced = [post_json(body, path="/test/priced/").json()["calls"] for _ in range(3)]
    assert posted == [1, 2, 3]  # every POST reached the view
    assert priced == [1, 1, 1]  # the first answer, kept
    # A GET of the same page is its own key; a form post is never kept.
    assert Client().get("/test/priced/").json() == {"method": "GET", "calls": 2}
    form = [Client().post("/test/priced/", {"n": "1"}).json()["calls"] for _ in range(2)]
    assert form == [3, 4]


def test_new_bodies_churn_only_the_answers_never_the_pages(offer, monkeypatch):
    monkeypatch.setattr(pagecache, "ENTRIES", 4)
    Client().get(reverse("faq"), **EN)
    assert early(Client().get(reverse("faq"), **EN))
    raw = quote_bytes(offer)
    for spaces in range(12):  # the same fields, twelve keys
        padded = raw[:-1] + b" " * spaces + b"}"
        assert post_json(padded).status_code == 200
    assert len(pagecache._answers) == 4
    # StoredPageMiddleware knows the bodies of the kept answers only.
    assert pagecache._early_bodies == {(key[0], key[4]) for key in pagecache._answers}
    assert early(Client().get(reverse("faq"), **EN))  # the page is still kept
    assert early(post_json(raw[:-1] + b" " * 11 + b"}"))  # the last body, kept
