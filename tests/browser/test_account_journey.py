import pytest

from kernodeck.accounts.models import User

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "un paseo largo por la sierra 2026"


def test_register_sign_out_and_sign_in_from_another_browser(live_server, new_context):
    first = new_context().new_page()
    first.goto(live_server.url + "/")
    first.get_by_role("link", name="Crear cuenta").first.click()
    first.get_by_label("Nombre", exact=True).fill("Ada")
    first.get_by_label("Apellidos").fill("Lovelace")
    first.get_by_label("Correo electrónico").fill("Ada@Example.org")
    first.get_by_label("Contraseña").fill(PASSWORD)
    first.get_by_role("button", name="Crear cuenta").click()

    # Registering signs nobody in: the new account signs in with the password just chosen.
    first.wait_for_url("**/account/sign-in/")
    first.get_by_label("Correo electrónico").fill("ada@example.org")
    first.get_by_label("Contraseña").fill(PASSWORD)
    first.get_by_role("button", name="Iniciar sesión").click()
    first.wait_for_url("**/account/")
    assert "ada@example.org" in first.content()
    first.get_by_role("button", name="Cerrar sesión").click()
    first.wait_for_url(live_server.url + "/")
    assert first.get_by_role("link", name="Iniciar sesión").first.is_visible()

    second = new_context().new_page()
    second.goto(live_server.url + "/account/sign-in/")
    second.get_by_label("Correo electrónico").fill("ada@example.org")
    second.get_by_label("Contraseña").fill(PASSWORD)
    second.get_by_role("button", name="Iniciar sesión").click()
    second.wait_for_url("**/account/")

    assert "ada@example.org" in second.content()
    assert User.objects.filter(email="ada@example.org").count() == 1


def test_language_switch_to_english_and_back(live_server, new_context):
    page = new_context().new_page()
    page.goto(live_server.url + "/")
    assert page.locator("html").get_attribute("lang") == "es"

    page.get_by_label("Idioma").select_option("en")
    page.get_by_role("button", name="Cambiar").click()
    page.wait_for_load_state()
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.get_by_role("heading", name="Rent a GPU for 3, 7 or 30 days.").is_visible()

    page.get_by_label("Language").select_option("es")
    page.get_by_role("button", name="Change").click()
    page.wait_for_load_state()
    assert page.locator("html").get_attribute("lang") == "es"
