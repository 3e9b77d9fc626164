"""Site-wide pages: the guides' index in the navigation, the 405 page and the favicon."""

import pytest
from django.urls import reverse
from django.utils import translation

from kernodeck.sizing.guides import GUIDES

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _back_to_the_default_language():
    """A request's language stays active in the thread: later tests expect the default."""
    yield
    translation.deactivate()


@pytest.mark.parametrize(
    ("language", "heading", "nav"),
    [("en", "<h1>Guides</h1>", ">Guides</a>"), ("es", "<h1>Guías</h1>", ">Guías</a>")],
)
def test_the_guides_index_lists_every_guide_and_the_nav_links_it(client, language, heading, nav):
    response = client.get("/guides/", HTTP_ACCEPT_LANGUAGE=language)
    page = response.content.decode()

    assert response.status_code == 200
    assert heading in page
    for slug in GUIDES:
        assert f'href="/guides/{slug}/"' in page
    home = client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert f'<a href="/guides/">{nav.removeprefix(">")}' in home


def test_a_guide_links_back_to_the_index(client):
    page = client.get("/guides/sizing/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert 'href="/guides/">← All guides</a>' in page


@pytest.mark.parametrize(
    ("language", "heading"),
    [
        ("en", "This address is for a button, not a visit"),
        ("es", "Esta dirección es para un botón, no para visitarla"),
    ],
)
def test_a_get_on_a_post_only_address_is_a_styled_405(client, language, heading):
    response = client.get(reverse("set_language"), HTTP_ACCEPT_LANGUAGE=language)
    page = response.content.decode()

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert heading in page
    assert "site.css" in page
    assert 'href="/"' in page


def test_favicon_ico_answers_with_an_icon(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # the ICO header: reserved 0, type 1
    assert client.post("/favicon.ico").status_code == 405


def test_every_page_names_its_icon(client):
    page = client.get(reverse("home")).content.decode()

    assert '<link rel="icon" href="/static/kernodeck/favicon.svg" type="image/svg+xml">' in page
    assert '<link rel="icon" href="/favicon.ico" sizes="32x32">' in page
