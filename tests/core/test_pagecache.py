"""Whole public pages for anonymous visitors (core/pagecache.py): the stored copy is the
rendered page but for each visitor's own CSRF token, forms on it still post, signed-in
visitors never see or fill it, catalog changes show within the stated bound, refused
input is never stored, and each language has its own copy."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from kernodeck.core import clock, pagecache
from tests.factories import make_offer, make_order, make_user
from tests.observability.helpers import TOKEN, scrape, value

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}
FORM_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]{64})"')
HTMX_TOKEN = re.compile(r'"X-CSRFToken": "([A-Za-z0-9]{64})"')
ANY_TOKEN = re.compile(r"(?<=[\"'])[A-Za-z0-9]{64}(?=[\"'])")
# Headers that differ between any two answers of the same page.
PER_ANSWER = {"X-Request-ID"}


@pytest.fixture(autouse=True)
def page_cache(settings):
    settings.KERNODECK_PAGE_CACHE_SECONDS = 60
    settings.KERNODECK_CATALOG_CACHE_SECONDS = 5
    pagecache.clear()
    yield
    pagecache.clear()


@pytest.fixture
def offer():
    return make_offer(units_total=5)


def visitor(**kwargs) -> Client:
    """A new anonymous browser (no cookies yet)."""
    return Client(**kwargs)


def rendered(response) -> bool:
    """Whether the view rendered the answer (a stored copy renders no template)."""
    return bool(response.templates)


def pages(offer) -> list[str]:
    return [
        reverse("home"),
        reverse("catalog:list"),
        reverse("catalog:list") + "?backend=cuda&sort=-price",
        reverse("catalog:configure", args=[offer.slug]),
        reverse("catalog:configure", args=[offer.slug]) + "?days=30&units=2",
        reverse("faq"),
        reverse("sizing:guides"),
        reverse("sizing:guide", args=["sizing"]),
        reverse("sizing:estimate"),
    ]


def test_a_stored_page_is_the_rendered_page_but_the_token(offer):
    for url in pages(offer):
        first = visitor().get(url, **EN)
        second = visitor().get(url, **EN)

        assert first.status_code == second.status_code == 200, url
        assert rendered(first) and not rendered(second), url
        assert pagecache.PLACEHOLDER.encode() not in first.content + second.content
        first_tokens = ANY_TOKEN.findall(first.content.decode())
        second_tokens = ANY_TOKEN.findall(second.content.decode())
        assert len(set(first_tokens)) == len(set(second_tokens)) == 1, url
        assert first_tokens[0] != second_tokens[0]
        assert first.content.replace(first_tokens[0].encode(), b"TOKEN") == (
            second.content.replace(second_tokens[0].encode(), b"TOKEN")
        ), url
        same = {k: v for k, v in first.headers.items() if k not in PER_ANSWER}
        assert same == {k: v for k, v in second.headers.items() if k not in PER_ANSWER}, url
        for name in ("Content-Security-Policy", "X-Frame-Options", "Content-Language"):
            assert name in second.headers, (url, name)
        assert "Cookie" in second["Vary"] and "Accept-Language" in second["Vary"]
        # Each answer issues the visitor's CSRF cookie, as a rendered page does.
        assert second.cookies[settings.CSRF_COOKIE_NAME].value


def test_two_visitors_get_different_tokens_that_each_work_for_them_only():
    alice, bob = visitor(enforce_csrf_checks=True), visitor(enforce_csrf_checks=True)
    alice_page = alice.get(reverse("faq"), **EN)
    bob_page = bob.get(reverse("faq"), **EN)
    assert rendered(alice_page) and not rendered(bob_page)
    alice_token = FORM_TOKEN.search(alice_page.content.decode()).group(1)
    bob_token = FORM_TOKEN.search(bob_page.content.decode()).group(1)
    assert alice_token != bob_token
    assert HTMX_TOKEN.search(bob_page.content.decode()).group(1) == bob_token

    def switch(client, token):
        form = {"language": "es", "next": "/faq/", "csrfmiddlewaretoken": token}
        return client.post(reverse("set_language"), form).status_code

    assert switch(bob, bob_token) == 302
    assert switch(alice, alice_token) == 302
    # Each token is a masked form of its visitor's own secret, not of a shared one.
    assert alice.cookies[settings.CSRF_COOKIE_NAME].value != (
        bob.cookies[settings.CSRF_COOKIE_NAME].value
    )
    carol = visitor(enforce_csrf_checks=True)
    carol.get(reverse("home"), **EN)
    assert switch(carol, bob_token) == 403


def test_the_language_form_of_a_stored_page_posts_and_the_other_language_follows():
    browser = visitor(enforce_csrf_checks=True)
    visitor().get(reverse("faq"), **EN)  # stored by someone else
    page = browser.get(reverse("faq"), **EN)
    assert not rendered(page)
    token = FORM_TOKEN.search(page.content.decode()).group(1)

    switched = browser.post(
        reverse("set_language"), {"language": "es", "next": "/faq/", "csrfmiddlewaretoken": token}
    )

    assert switched.status_code == 302
    assert switched["Location"] == "/faq/"
    spanish = browser.get("/faq/", **EN)  # the language cookie wins over the browser's
    assert spanish["Content-Language"] == "es"
    assert '<html lang="es">' in spanish.content.decode()
    english = visitor().get("/faq/", **EN)
    assert '<html lang="en">' in english.content.decode()
    assert not rendered(english)


def test_the_htmx_header_token_of_a_stored_page_passes_csrf(offer):
    browser = visitor(enforce_csrf_checks=True)
    url = reverse("catalog:configure", args=[offer.slug])
    visitor().get(url, **EN)
    page = browser.get(url, **EN)
    assert not rendered(page)
    token = HTMX_TOKEN.search(page.content.decode()).group(1)

    answer = browser.post(
        reverse("set_language"), {"language": "es", "next": url}, HTTP_X_CSRFTOKEN=token
    )

    assert answer.status_code == 302


def test_a_signed_in_visitor_neither_gets_nor_fills_the_stored_page():
    user = make_user()
    member = visitor()
    member.force_login(user)

    own = member.get(reverse("home"), **EN)  # first: must not fill the cache
    assert rendered(own)
    assert "Sign out" in own.content.decode()
    anonymous = visitor().get(reverse("home"), **EN)
    assert rendered(anonymous)
    assert "Sign out" not in anonymous.content.decode()
    assert not rendered(visitor().get(reverse("home"), **EN))

    again = member.get(reverse("home"), **EN)  # now that a copy exists
    assert rendered(again)
    assert "Sign out" in again.content.decode()
    assert "My orders" in again.content.decode()


def test_a_request_with_credentials_or_messages_is_not_served_a_copy():
    visitor().get(reverse("faq"), **EN)
    assert not rendered(visitor().get(reverse("faq"), **EN))

    with_messages = visitor()
    with_messages.cookies["messages"] = "anything"
    assert rendered(with_messages.get(reverse("faq"), **EN))
    with_session = visitor()
    with_session.cookies[settings.SESSION_COOKIE_NAME] = "not-a-session"
    assert rendered(with_session.get(reverse("faq"), **EN))
    assert rendered(visitor().get(reverse("faq"), HTTP_AUTHORIZATION="Bearer x", **EN))


def test_a_catalog_change_shows_within_a_second(offer):
    clock.freeze(T0)
    url = reverse("catalog:list")
    assert "5 units" in visitor().get(url, **EN).content.decode()
    assert not rendered(visitor().get(url, **EN))

    make_order(offer=offer, units=2)  # bumps the catalog's version

    clock.freeze(T0 + timedelta(seconds=pagecache.VERSION_CHECK_SECONDS))
    page = visitor().get(url, **EN)
    assert rendered(page)
    assert "3 units" in page.content.decode()
    configurator = visitor().get(reverse("catalog:configure", args=[offer.slug]), **EN)
    assert "3 units free now" in configurator.content.decode()


def test_a_catalog_copy_is_used_for_at_most_the_catalog_cache_time(offer):
    clock.freeze(T0)
    url = reverse("catalog:configure", args=[offer.slug])
    visitor().get(url, **EN)
    clock.freeze(T0 + timedelta(seconds=4.9))
    assert not rendered(visitor().get(url, **EN))
    clock.freeze(T0 + timedelta(seconds=5))
    assert rendered(visitor().get(url, **EN))
    # A page without catalog figures is kept for KERNODECK_PAGE_CACHE_SECONDS.
    visitor().get(reverse("faq"), **EN)
    clock.freeze(T0 + timedelta(seconds=64))
    assert not rendered(visitor().get(reverse("faq"), **EN))
    clock.freeze(T0 + timedelta(seconds=65))
    assert rendered(visitor().get(reverse("faq"), **EN))


def test_no_catalog_cache_means_no_catalog_copy(settings, offer):
    settings.KERNODECK_CATALOG_CACHE_SECONDS = 0
    url = reverse("catalog:list")
    visitor().get(url, **EN)
    assert rendered(visitor().get(url, **EN))


@pytest.mark.parametrize(
    "query",
    [
        "?min_memory=abc",  # refused filter: the page echoes it
        "?backend=cuda&colour=red",  # a parameter the page does not take
        "?backend=cuda&backend=rocm",
        "?backend=cuda&&",
    ],
)
def test_refused_or_stray_input_is_never_stored(query):
    url = reverse("catalog:list") + query
    for _ in range(2):
        assert rendered(visitor().get(url, **EN))


def test_refused_configurations_and_submitted_forms_are_never_stored(offer):
    configurator = reverse("catalog:configure", args=[offer.slug])
    for url in (
        configurator + "?units=99",
        configurator + "?days=5",
        reverse("sizing:estimate") + "?mode=preset&preset=llama-3-8b",
        reverse("faq") + "?utm_source=mail",
    ):
        for _ in range(2):
            assert rendered(visitor().get(url, **EN)), url


def test_each_language_has_its_own_copy():
    visitor().get(reverse("home"), **EN)
    spanish = visitor().get(reverse("home"), **ES)
    assert rendered(spanish)
    assert spanish["Content-Language"] == "es"
    assert "Alquila" in spanish.content.decode()
    english = visitor().get(reverse("home"), **EN)
    assert not rendered(english)
    assert english["Content-Language"] == "en"


def test_head_is_answered_from_the_copy_with_the_same_headers():
    visitor().get(reverse("sizing:guides"), **EN)
    head = visitor().head(reverse("sizing:guides"), **EN)
    get = visitor().get(reverse("sizing:guides"), **EN)
    assert head.status_code == 200
    assert head.content == b""
    assert not rendered(head) and not rendered(get)
    assert {k: v for k, v in head.headers.items() if k not in PER_ANSWER} == {
        k: v for k, v in get.headers.items() if k not in PER_ANSWER
    }


def test_a_stored_page_is_counted_under_its_route(settings):
    settings.KERNODECK_METRICS_TOKEN = TOKEN
    settings.KERNODECK_METRICS_ALLOW_NETWORKS = ()
    visitor().get(reverse("faq"), **EN)
    before = scrape(visitor())
    assert not rendered(visitor().get(reverse("faq"), **EN))
    after = scrape(visitor())
    faq = {"route": "faq/", "method": "GET", "status": "200"}
    assert value(after, "kernodeck_http_requests_total", **faq) == (
        value(before, "kernodeck_http_requests_total", **faq) + 1
    )


def test_zero_seconds_turns_the_page_cache_off(settings):
    settings.KERNODECK_PAGE_CACHE_SECONDS = 0
    visitor().get(reverse("faq"), **EN)
    page = visitor().get(reverse("faq"), **EN)
    assert rendered(page)
    assert pagecache.PLACEHOLDER.encode() not in page.content


@pytest.mark.urls("tests.core.pagecache_urls")
@pytest.mark.parametrize("url", ["/test/cookie/", "/test/session/", "/test/message/"])
def test_an_answer_that_sets_cookies_or_touches_the_session_is_not_stored(url):
    for _ in range(2):
        page = visitor().get(url, **EN)
        assert rendered(page)
        assert pagecache.PLACEHOLDER.encode() not in page.content
        assert FORM_TOKEN.search(page.content.decode())


@pytest.mark.urls("tests.core.pagecache_urls")
def test_only_a_200_is_stored_and_an_error_page_still_has_a_real_token():
    for _ in range(2):
        page = visitor().get("/test/missing/", **EN)
        assert page.status_code == 404 and rendered(page)
        assert pagecache.PLACEHOLDER.encode() not in page.content
    missing_guide = visitor().get(reverse("sizing:guide", args=["no-such-guide"]), **EN)
    assert missing_guide.status_code == 404
    assert pagecache.PLACEHOLDER.encode() not in missing_guide.content
    assert FORM_TOKEN.search(missing_guide.content.decode())


def test_the_number_of_copies_is_bounded(monkeypatch, offer):
    monkeypatch.setattr(pagecache, "ENTRIES", 3)
    for days in ("3", "7", "30"):
        for units in ("1", "2"):
            url = reverse("catalog:configure", args=[offer.slug]) + f"?days={days}&units={units}"
            visitor().get(url, **EN)
    assert len(pagecache._pages) == 3
