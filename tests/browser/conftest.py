"""Browser tests: Playwright for Python driving Debian's chromium against live_server."""

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
# still plain synchronous code, so Django's async-safety guard does not apply.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(
        reason="browser tests need Debian's chromium: apt-get install chromium"
    )
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # the retrying assertions' hang guard, as below
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True
        )
        yield chromium
        chromium.close()


@pytest.fixture
def new_context(browser):
    contexts = []

    def make(**options):
        options.setdefault("locale", "es-ES")
        context = browser.new_context(**options)
        # A hang guard, not a speed claim: on a shared machine with both cores busy a
        # click's navigation took more than 10 s (the support journey, load 15).
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()
