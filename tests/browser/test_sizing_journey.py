import os
from pathlib import Path

import pytest

from kernodeck.demo.services import demo_seed_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Set KERNODECK_SCREENSHOTS=/some/folder to keep a picture of each page looked at.
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS")


def _watch_csp(page):
    violations = []
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return violations


def _shot(page, name):
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)
        for part in ("form", "result", "offers"):
            element = page.locator(f"#{part}, #sizing-{part}").first
            if element.count():
                element.screenshot(path=str(Path(SHOTS) / f"{name}-{part}.png"))
        chart = page.locator("#result figure").first
        if chart.count():
            chart.screenshot(path=str(Path(SHOTS) / f"{name}-chart.png"))


def _chart_problems(page):
    """Names and values of the visible chart that leave the svg, and a font too small."""
    return page.evaluate(
        """() => {
        const svg = [...document.querySelectorAll('#result figure svg')]
            .find(s => s.getBoundingClientRect().width > 0);
        const frame = svg.getBoundingClientRect();
        const problems = [...svg.querySelectorAll('text')].filter(t => {
            const r = t.getBoundingClientRect();
            return r.left < frame.left - 0.5 || r.right > frame.right + 0.5 || r.width === 0;
        }).map(t => t.textContent);
        const font = parseFloat(getComputedStyle(svg.querySelector('text')).fontSize)
            * frame.width / svg.viewBox.baseVal.width;
        if (font < 10) problems.push('font ' + font.toFixed(1) + ' px');
        return problems;
    }"""
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_from_the_configurator_estimate_a_job_and_see_the_offers_that_fit(
    live_server, new_context, width
):
    demo_seed_catalog()
    page = new_context(locale="en-GB", viewport={"width": width, "height": 900}).new_page()
    violations = _watch_csp(page)

    page.goto(live_server.url + "/gpus/")
    page.get_by_role("link", name="Not sure which GPU? Estimate it.").click()
    # Inference: the training-only fields are hidden, and come back for training.
    assert not page.get_by_label("Optimizer (training)").is_visible()
    page.get_by_label("Workload").select_option("training")
    assert page.get_by_label("Optimizer (training)").is_visible()
    page.get_by_label("Workload").select_option("inference")
    # The custom architecture takes the modern fields too.
    page.get_by_text("Another model: its architecture").click()
    assert page.get_by_label("Sliding window (tokens)").is_visible()
    assert page.get_by_label("Latent attention: KV latent size (kv_lora_rank)").is_visible()
    assert page.get_by_label("Expert MLP size (moe_intermediate_size)").is_visible()
    page.get_by_label("Model").select_option("llama-3.1-70b")
    page.get_by_label("Sequence length (tokens)").fill("8192")
    page.get_by_label("Batch size (sequences per step)").fill("4")
    page.get_by_role("button", name="Estimate").click()

    page.get_by_role("heading", name="Llama-3.1-70B: 155.55 GiB per GPU").wait_for()
    _shot(page, f"sizing-en-{width}")
    # Four parts and ten offers, in the chart this width shows.
    visible = page.locator("#result figure svg:visible")
    assert visible.count() == 1
    assert visible.locator("rect").count() == 4 + 10
    # Attention left unsaid widens the margin to 25 %: 200 GiB. The 192 GB card holds the
    # estimate but not the margin, and so does the 180 GB one: "measure it", not "fits".
    fits = page.locator("#offers tbody tr", has=page.locator(".fit.yes"))
    assert fits.locator("td a").all_inner_texts() == ["AMD MI325X 256 GB"]
    measure = page.locator("#offers tbody tr", has=page.locator(".fit.measure"))
    assert sorted(measure.locator("td a").all_inner_texts()) == [
        "AMD MI300X 192 GB",
        "B200 180 GB",
    ]
    colours = page.eval_on_selector_all(
        ".legend .swatch", "els => els.map(e => getComputedStyle(e).backgroundColor)"
    )
    assert colours and "rgba(0, 0, 0, 0)" not in colours
    assert _chart_problems(page) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert violations == []


@pytest.mark.parametrize("width", [1280, 390])
def test_the_spanish_page_fits_the_screen_and_its_command_has_a_decimal_point(
    live_server, new_context, width
):
    demo_seed_catalog()
    page = new_context(locale="es-ES", viewport={"width": width, "height": 900}).new_page()
    violations = _watch_csp(page)

    page.goto(live_server.url + "/sizing/")
    page.get_by_label("Trabajo:", exact=True).select_option("training")
    page.get_by_label("Ajuste fino (entrenamiento)").select_option("lora")
    page.get_by_role("button", name="Estimar").click()

    _shot(page, f"sizing-es-{width}")
    command = page.locator("#offers pre.code").inner_text()
    assert command.startswith("kernodeck-envcheck --measure train.py --estimate-gib ")
    float(command.rsplit(" ", 1)[1])  # a decimal point, as argparse takes it
    assert _chart_problems(page) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert violations == []


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
