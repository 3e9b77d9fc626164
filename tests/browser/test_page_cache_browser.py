"""A page served from the page cache (core/pagecache.py) in a real browser: it renders
with its styles and no CSP violation, the footer's language switch posts (its CSRF token is
the visitor's own) and htmx's live summary still swaps on the configurator."""

import pytest

from kernodeck.core import pagecache
from kernodeck.demo.services import demo_seed_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def page_cache(settings):
    settings.KERNODECK_PAGE_CACHE_SECONDS = 60
    pagecache.clear()
    yield
    pagecache.clear()


def test_a_stored_page_renders_switches_language_and_swaps_the_summary(live_server, new_context):
    demo_seed_catalog()
    violations = []
    for path in ("/faq/", "/gpus/b200-180gb/"):  # a first visitor fills the cache
        new_context(locale="en-GB").new_page().goto(live_server.url + path)
    stored = len(pagecache._pages)
    page = new_context(locale="en-GB").new_page()
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )

    page.goto(live_server.url + "/faq/")
    assert len(pagecache._pages) == stored  # this answer was the stored copy
    assert page.locator("html").get_attribute("lang") == "en"
    # site.css applied: the footer's switch is laid out by it (display: flex).
    assert page.locator("form.lang-switch").evaluate("e => getComputedStyle(e).display") == "flex"
    page.select_option("#language", "es")
    page.click("form.lang-switch button[type=submit]")
    page.wait_for_url(live_server.url + "/faq/")
    assert page.locator("html").get_attribute("lang") == "es"
    assert page.get_by_role("heading", level=1).inner_text() == "Preguntas frecuentes"

    page.goto(live_server.url + "/gpus/b200-180gb/")
    page.get_by_label("Lotes", exact=True).fill("2")
    page.locator("#summary-gpus", has_text="4").wait_for()
    assert violations == []
