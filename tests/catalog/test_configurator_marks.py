"""Issue 23, item 10: the configurator's total sits by its buttons, a refused choice is
marked on its field (live too), and the confirmation names the preparation."""

import pytest
from django.urls import reverse
from django.utils import translation

from tests.factories import make_offer, make_user

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}


@pytest.fixture(autouse=True)
def _back_to_the_default_language():
    """A request's language stays active in the thread: later tests expect the default."""
    yield
    translation.deactivate()


def _offer():
    return make_offer(
        slug="b200", gpus_per_unit=2, prices={3: "936.00", 7: "2118.48", 30: "7956.00"}
    )


def test_the_total_is_written_above_the_buttons(client):
    offer = _offer()

    page = client.get(
        reverse("catalog:configure", args=[offer.slug]), {"units": "2"}, **EN
    ).content.decode()

    total = page.index('<p class="action-total" id="action-total">')
    assert total < page.index('<div class="actions">') < page.index("</form>")
    assert "<strong>4,236.96 USD</strong>" in page[total : page.index('<div class="actions">')]


@pytest.mark.parametrize(
    ("language", "total", "days"),
    [(EN, "23,868.00 USD", "for 30 days"), (ES, "23\u00a0868,00 USD", "por 30 días")],
)
def test_the_live_summary_also_updates_the_total_by_the_buttons(client, language, total, days):
    offer = _offer()

    fragment = client.get(
        reverse("catalog:summary", args=[offer.slug]),
        {"days": "30", "units": "3", "preparation": "python"},
        **language,
    ).content.decode()

    oob = fragment[fragment.index('<p class="action-total" id="action-total"') :]
    assert oob.startswith('<p class="action-total" id="action-total" hx-swap-oob="true">')
    assert f"<strong>{total}</strong>" in oob
    assert days in oob


def test_a_refused_choice_is_highlighted_on_the_full_page(client):
    offer = _offer()

    response = client.get(reverse("catalog:configure", args=[offer.slug]), {"units": "11"}, **EN)
    page = response.content.decode()

    assert response.status_code == 422
    assert '<div class="field has-error" data-field="units">' in page
    assert 'aria-invalid="true"' in page
    assert page.count('aria-invalid="true"') == 1  # only the units input
    assert "Fix the highlighted choice to see the price." in page


@pytest.mark.parametrize(
    ("language", "label", "message"),
    [(EN, "Units", "Choose between 1 and 10 units."), (ES, "Lotes", "Elige entre 1 y 10 lotes.")],
)
def test_the_live_summary_names_the_field_to_highlight(client, language, label, message):
    offer = _offer()

    response = client.get(
        reverse("catalog:summary", args=[offer.slug]),
        {"days": "7", "units": "0", "preparation": "python"},
        **language,
    )
    fragment = response.content.decode()

    assert response.status_code == 422
    assert (
        f'<p class="errorlist" data-field="units"><a href="#id_units">{label}</a>: '
        f'<span class="field-error">{message}</span></p>'
    ) in fragment
    assert 'hx-swap-oob="true"' in fragment
    assert "<strong>" not in fragment[fragment.index('id="action-total"') :]


def test_the_configurator_page_loads_its_marking_script(client):
    page = client.get(reverse("catalog:configure", args=[_offer().slug])).content.decode()

    assert '<script src="/static/kernodeck/configurator.js" defer></script>' in page


@pytest.mark.parametrize(("language", "name"), [(EN, "Notebook"), (ES, "Notebook")])
def test_the_confirmation_names_the_preparation_not_its_code(client, language, name):
    make_offer(slug="h100")
    client.force_login(make_user())

    page = client.get(
        reverse("orders:new") + "?offer=h100&days=7&units=1&preparation=notebook", **language
    ).content.decode()

    assert f"<dd>{name}</dd>" in page
    assert "<dd>notebook</dd>" not in page
    assert '<input type="hidden" name="preparation" value="notebook">' in page


def test_the_confirmation_translates_the_preparation(client):
    make_offer(slug="h100")
    client.force_login(make_user())

    page = client.get(
        reverse("orders:new") + "?offer=h100&days=7&units=1&preparation=inference", **ES
    ).content.decode()

    assert "<dd>Inferencia</dd>" in page
