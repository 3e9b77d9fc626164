import pytest
from django.urls import reverse

from kernodeck.guides.faq import SECTIONS

pytestmark = pytest.mark.django_db


def test_home_explains_the_service_and_links_faq_and_sign_in(client):
    page = client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert "Rent a GPU for 3, 7 or 30 days." in page
    assert reverse("faq") in page
    assert reverse("accounts:signin") in page
    assert "htmx.min.js" in page


def test_language_follows_the_browser(client):
    spanish = client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="es-ES,es;q=0.9").content.decode()

    assert '<html lang="es">' in spanish
    assert "Alquila una GPU" in spanish


def test_faq_lists_every_entry_in_spanish(client):
    page = client.get(reverse("faq"), HTTP_ACCEPT_LANGUAGE="es").content.decode()

    assert "La memoria por tarjeta es un punto de partida." in page
    assert sum(len(section.entries) for section in SECTIONS) >= 30


def test_demo_ribbon_shows_only_in_demo_mode(client, settings):
    assert "Demo mode" not in client.get(reverse("home")).content.decode()
    settings.KERNODECK_DEMO = True
    assert "Demo mode" in client.get(reverse("home")).content.decode()


def test_unknown_page_is_a_friendly_404(client):
    response = client.get("/no/such/page/")

    assert response.status_code == 404
    assert "This page does not exist" in response.content.decode()
