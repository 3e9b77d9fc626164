"""The API docs render their operations with every request off this host refused."""

from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_offline(live_server, new_context):
    context = new_context(locale="en-GB")
    ours = urlsplit(live_server.url).netloc
    refused = []

    def only_this_host(route):
        if urlsplit(route.request.url).netloc == ours:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", only_this_host)
    page = context.new_page()

    page.goto(f"{live_server.url}/api/v1/docs")
    page.locator(".opblock").first.wait_for()

    assert page.locator(".opblock").count() > 10
    assert page.get_by_text("/api/v1/offers", exact=True).count() >= 1
    assert refused == []


def test_api_docs_page_names_no_outside_host(client):
    html = client.get("/api/v1/docs").content.decode()

    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert "https://" not in html
