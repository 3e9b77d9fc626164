import pytest

from kernodeck.demo.services import demo_seed_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1280, 390])
def test_from_the_configurator_estimate_a_job_and_see_the_offers_that_fit(
    live_server, new_context, width
):
    demo_seed_catalog()
    page = new_context(locale="en-GB", viewport={"width": width, "height": 900}).new_page()

    page.goto(live_server.url + "/gpus/")
    page.get_by_role("link", name="Not sure which GPU? Estimate it.").click()
    page.get_by_label("Model").select_option("llama-3.1-70b")
    page.get_by_label("Sequence length (tokens)").fill("8192")
    page.get_by_label("Batch size (sequences per step)").fill("4")
    page.get_by_role("button", name="Estimate").click()

    page.get_by_role("heading", name="Llama-3.1-70B: 159.62 GiB per GPU").wait_for()
    assert page.locator("#result svg rect").count() == 4 + 10  # four parts, ten offers
    fits = page.locator("#offers tbody tr", has=page.locator(".fit.yes"))
    assert sorted(fits.locator("td a").all_inner_texts()) == [
        "AMD MI300X 192 GB",
        "AMD MI325X 256 GB",
    ]
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_the_spanish_guide_offers_the_environment_check(live_server, new_context):
    page = new_context(locale="es-ES").new_page()

    page.goto(live_server.url + "/faq/")
    page.get_by_text("¿Cómo compruebo que mi entorno usa realmente la GPU?").click()
    page.get_by_role(
        "link", name="Lee la guía: Comprueba que tu entorno usa de verdad la GPU →"
    ).click()
    page.get_by_role("heading", name="Comprueba que tu entorno usa de verdad la GPU").wait_for()
    with page.expect_download() as download:
        page.get_by_role("link", name="Descargar kernodeck-envcheck.py").click()
    assert download.value.suggested_filename == "kernodeck-envcheck.py"
