"""The configurator on a 390 px phone, in Spanish and English: the total sits just above
"Continue", and a refused choice is highlighted on its field as the live summary says."""

import pytest

from kernodeck.demo.services import demo_seed_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
WORDS = {
    "es-ES": {
        "units": "Lotes",
        "continue": "Continuar",
        "total": "4\u00a0236,96 USD",
        "fix": "Corrige la opción resaltada para ver el precio.",
        "error": "Elige entre 1 y 10 lotes.",
    },
    "en-GB": {
        "units": "Units",
        "continue": "Continue",
        "total": "4,236.96 USD",
        "fix": "Fix the highlighted choice to see the price.",
        "error": "Choose between 1 and 10 units.",
    },
}


def _box(locator):
    box = locator.bounding_box()
    assert box is not None, "not rendered"
    return box


@pytest.mark.parametrize("locale", list(WORDS))
def test_the_phone_configurator_keeps_the_total_by_continue_and_marks_the_field(
    live_server, new_context, locale
):
    words = WORDS[locale]
    demo_seed_catalog()
    page = new_context(locale=locale, viewport=PHONE).new_page()
    page.goto(live_server.url + "/gpus/b200-180gb/")

    units = page.get_by_label(words["units"], exact=True)
    units.fill("2")
    total = page.locator("#action-total")
    total.locator("strong").filter(has_text=words["total"]).wait_for()

    # Beside the button: above "Continue" with nothing but the other button in between, and
    # both on the screen at once when the button is.
    button = page.get_by_role("button", name=words["continue"], exact=True)
    button.evaluate("e => e.scrollIntoView({block: 'center'})")
    total_box, button_box = _box(total), _box(button)
    assert total.is_visible()
    assert total_box["y"] + total_box["height"] <= button_box["y"]
    assert button_box["y"] - (total_box["y"] + total_box["height"]) < 120
    assert total_box["y"] >= 0 and button_box["y"] + button_box["height"] <= PHONE["height"]
    # The summary card, with the same total, is below the form on a phone.
    assert _box(page.locator("#summary"))["y"] > button_box["y"]

    units.fill("12")
    field = page.locator('.field[data-field="units"]')
    page.locator('.field.has-error[data-field="units"]').wait_for()
    assert units.get_attribute("aria-invalid") == "true"
    error = field.locator("#id_units_error")
    assert error.inner_text() == words["error"]
    assert "id_units_error" in units.get_attribute("aria-describedby").split()
    assert total.inner_text() == words["fix"]
    assert page.locator("#summary").get_by_text(words["fix"]).is_visible()
    # Red, not the normal grey border.
    assert units.evaluate("e => getComputedStyle(e).borderTopColor") == "rgb(180, 35, 24)"

    units.fill("3")
    page.locator('.field[data-field="units"]:not(.has-error)').wait_for()
    assert units.get_attribute("aria-invalid") is None
    assert field.locator("#id_units_error").count() == 0
    assert "id_units_error" not in (units.get_attribute("aria-describedby") or "")
    total.locator("strong").wait_for()
