"""The FAQ and the guides render their content once per language (core/fragments.py): a
second visitor in the same language gets the same content without rendering it again, a
visitor in another language gets their own."""

import pytest
from django.urls import reverse

from kernodeck.core import fragments


@pytest.fixture(autouse=True)
def empty_fragments():
    fragments._rendered.clear()
    yield
    fragments._rendered.clear()


def _content_rendered(response, template) -> bool:
    return template in [t.name for t in response.templates]


@pytest.mark.parametrize(
    ("url", "template", "english", "spanish"),
    [
        (reverse("faq"), "guides/_faq_content.html", "FAQ sections", "Secciones"),
        (
            reverse("sizing:guide", args=["sizing"]),
            "sizing/_guide_content.html",
            "All guides",
            "Todas las guías",
        ),
    ],
    ids=["faq", "guide"],
)
@pytest.mark.django_db
def test_the_content_is_rendered_once_per_language(client, url, template, english, spanish):
    first = client.get(url, HTTP_ACCEPT_LANGUAGE="en")
    second = client.get(url, HTTP_ACCEPT_LANGUAGE="en")
    other = client.get(url, HTTP_ACCEPT_LANGUAGE="es")

    assert _content_rendered(first, template)
    assert not _content_rendered(second, template)
    assert _content_rendered(other, template)
    # The same content (the layout around it carries per-request nonces).
    assert first.context["content"] == second.context["content"]
    assert english in second.content.decode()
    assert spanish in other.content.decode()
    assert english not in other.content.decode()


@pytest.mark.django_db
def test_another_guide_is_its_own_entry(client):
    sizing = client.get(reverse("sizing:guide", args=["sizing"]), HTTP_ACCEPT_LANGUAGE="en")
    other = client.get(
        reverse("sizing:guide", args=["reproducibility"]), HTTP_ACCEPT_LANGUAGE="en"
    )
    assert _content_rendered(other, "sizing/_guide_content.html")
    assert sizing.context["content"] != other.context["content"]


@pytest.mark.django_db
def test_the_empty_sizing_form_is_rendered_once_per_language_and_a_filled_one_each_time(
    client,
):
    url = reverse("sizing:estimate")
    first = client.get(url, HTTP_ACCEPT_LANGUAGE="en")
    second = client.get(url, HTTP_ACCEPT_LANGUAGE="en")
    other = client.get(url, HTTP_ACCEPT_LANGUAGE="es")
    filled = client.get(url, {"mode": "inference"}, HTTP_ACCEPT_LANGUAGE="en")

    assert _content_rendered(first, "sizing/_form.html")
    assert not _content_rendered(second, "sizing/_form.html")
    assert _content_rendered(other, "sizing/_form.html")
    assert _content_rendered(filled, "sizing/_form.html")
    assert first.context["form_html"] == second.context["form_html"]
    assert 'id="sizing-form"' in second.content.decode()
    assert "Estimate" in second.content.decode()
    assert "Estimar" in other.content.decode()
