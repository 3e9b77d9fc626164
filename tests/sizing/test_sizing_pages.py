"""The /sizing/ page, the guides, the downloads and the links to them."""

import re
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from kernodeck.sizing.estimator import Workload, estimate
from kernodeck.sizing.guides import GUIDES
from kernodeck.sizing.presets import PRESETS
from kernodeck.sizing.standalone import envcheck
from tests.factories import make_offer

pytestmark = pytest.mark.django_db

TRAIN_8B = {
    "preset": "llama-3.1-8b",
    "mode": "training",
    "precision": "bf16",
    "batch_size": "1",
    "sequence_length": "2048",
    "optimizer": "adamw",
    "finetune": "full",
    "gpus": "1",
}


def test_the_empty_page_shows_the_form_and_the_guide(client):
    page = client.get(reverse("sizing:estimate"), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert "Estimate GPU memory" in page
    assert 'name="preset"' in page
    assert "Llama-3.1-70B" in page and "BERT-base" in page
    assert reverse("sizing:guide", args=["sizing"]) in page
    assert "<svg" not in page


def test_an_estimate_draws_the_stacked_bar_and_lists_the_offers(client):
    make_offer(slug="h100", gpu_model="H100 80 GB", memory_gib=80)
    make_offer(slug="b200", gpu_model="B200 180 GB", memory_gib=180, gpus_per_unit=2)

    response = client.get(reverse("sizing:estimate"), TRAIN_8B, HTTP_ACCEPT_LANGUAGE="en")

    page = response.content.decode()
    assert response.status_code == 200
    expected = estimate(Workload(PRESETS["llama-3.1-8b"][1], mode="training")).per_gpu_gib()
    assert f"Llama-3.1-8B: {expected:.2f} GiB per GPU" in page
    # Five parts (no KV cache in training) plus one bar per offer, in the wide chart and in
    # the phone one.
    assert page.count("<rect") == 2 * (5 + 2)
    wide = page[page.index('class="chart-wide"') : page.index('class="chart-narrow"')]
    assert wide.count("<rect") == 5 + 2
    assert "H100 80 GB" in page and "B200 180 GB" in page
    assert "Needs 3 x H100 80 GB" in page
    assert "do not pool their memory" in page
    assert "Korthikanti" in page
    assert "kernodeck-envcheck --measure train.py --estimate-gib" in page


def test_the_page_speaks_spanish(client):
    make_offer(slug="h100", gpu_model="H100 80 GB", memory_gib=80)

    page = client.get(reverse("sizing:estimate"), TRAIN_8B, HTTP_ACCEPT_LANGUAGE="es").content
    page = page.decode()

    assert "Estima la memoria de GPU" in page
    assert "no suman su memoria" in page
    assert "Supuestos" in page


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("batch_size", "٣"),
        ("batch_size", "0"),
        ("sequence_length", "³"),
        ("gpus", "65"),
        ("precision", "fp64"),
        ("preset", "nope"),
        ("batch_size", "1\x00"),
    ],
)
def test_bad_values_show_an_error_not_a_crash(client, field, value):
    response = client.get(reverse("sizing:estimate"), {**TRAIN_8B, field: value})

    # A NUL byte is refused at the edge (core.middleware.InputGuardMiddleware) with 400.
    assert response.status_code == (400 if "\x00" in value else 200)
    assert "errorlist" in response.content.decode()
    assert "<svg" not in response.content.decode()


def test_a_refused_combination_is_explained_on_the_page(client):
    response = client.get(
        reverse("sizing:estimate"), {**TRAIN_8B, "finetune": "qlora"}, HTTP_ACCEPT_LANGUAGE="en"
    )

    assert "QLoRA keeps the base weights in 4 bits" in response.content.decode()


def test_a_custom_architecture_needs_its_fields(client):
    response = client.get(
        reverse("sizing:estimate"), {**TRAIN_8B, "preset": "custom"}, HTTP_ACCEPT_LANGUAGE="en"
    )

    assert "this field is required." in response.content.decode().lower()


@pytest.mark.parametrize("slug", list(GUIDES))
@pytest.mark.parametrize(("language", "marker"), [("en", 'lang="en"'), ("es", 'lang="es"')])
def test_every_guide_renders_in_both_languages(client, slug, language, marker):
    response = client.get(reverse("sizing:guide", args=[slug]), HTTP_ACCEPT_LANGUAGE=language)

    assert response.status_code == 200
    page = response.content.decode()
    assert marker in page
    with translation.override("en"):
        english_title = str(GUIDES[slug].title)
    assert (english_title in page) == (language == "en")


def test_guides_in_spanish_use_the_faqs_words(client):
    page = client.get(
        reverse("sizing:guide", args=["exports"]), HTTP_ACCEPT_LANGUAGE="es"
    ).content.decode()

    assert "Exporta tus resultados antes de que termine el alquiler" in page


def test_an_unknown_guide_is_a_404(client):
    assert client.get("/guides/nope/").status_code == 404
    assert client.get("/guides/examples/envcheck.py").status_code == 404
    assert client.get("/guides/examples/..%2Fviews.py").status_code == 404


def test_the_environment_check_downloads_as_one_python_file(client):
    response = client.get("/guides/kernodeck-envcheck.py")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/x-python")
    assert 'filename="kernodeck-envcheck.py"' in response["Content-Disposition"]
    source = response.content.decode()
    assert source == Path(envcheck.__file__).read_text(encoding="utf-8")
    imports = set(re.findall(r"^(?:import|from) (\w+)", source, flags=re.M))
    assert imports <= {
        "__future__",
        "argparse",
        "contextlib",
        "datetime",
        "hashlib",
        "json",
        "os",
        "platform",
        "runpy",
        "shutil",
        "subprocess",
        "sys",
        "traceback",
        "torch",
        "importlib",
        "resource",
    }
    assert "kernodeck" not in imports


def test_the_checkpoint_guide_shows_and_serves_its_example(client):
    page = client.get(reverse("sizing:guide", args=["checkpoints"])).content.decode()
    download = client.get("/guides/examples/checkpoint_example.py")

    assert "def save(" in page
    assert download.status_code == 200
    assert b"torch.save" in download.content


@pytest.mark.parametrize(
    ("entry", "guide"),
    [
        ("which-gpu", "sizing"),
        ("memory-per-card", "sizing"),
        ("several-gpus", "sizing"),
        ("environment-check", "environment-check"),
        ("cuda-or-rocm", "environment-check"),
        ("out-of-memory", "out-of-memory"),
        ("checkpoints", "checkpoints"),
        ("reproducibility", "reproducibility"),
        ("export-results", "exports"),
    ],
)
def test_the_faq_answers_link_to_their_guide(client, entry, guide):
    page = client.get(reverse("faq"), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    block = page[page.index(f'<details id="{entry}">') :]
    block = block[: block.index("</details>")]
    assert reverse("sizing:guide", args=[guide]) in block


def test_the_configurator_and_catalog_offer_the_estimator(client):
    offer = make_offer(slug="h100")

    for url in (reverse("catalog:configure", args=[offer.slug]), reverse("catalog:list")):
        page = client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
        assert "Not sure which GPU? Estimate it." in page
        assert reverse("sizing:estimate") in page


def test_the_page_needs_no_inline_style_and_colours_by_class(client):
    """The CSP (style-src 'self') blocks style attributes: the legend must not rely on them."""
    make_offer(slug="h100", gpu_model="H100 80 GB", memory_gib=80)

    page = client.get(reverse("sizing:estimate"), TRAIN_8B, HTTP_ACCEPT_LANGUAGE="en")
    html = page.content.decode()

    assert "style-src 'self'" in page["Content-Security-Policy"]
    assert "style=" not in html
    assert '<span class="swatch part-weights">' in html
    assert '<span class="swatch offer-short">' in html
    css = Path(envcheck.__file__).parents[1].joinpath("static/sizing/sizing.css").read_text()
    for part in ("weights", "activations", "gradients", "optimizer", "overhead", "kv_cache"):
        assert f".part-{part} {{ background:" in css


def test_training_only_fields_are_marked_to_hide_for_inference(client):
    html = client.get(reverse("sizing:estimate"), HTTP_ACCEPT_LANGUAGE="en").content.decode()

    for name in ("optimizer", "finetune", "gradient_checkpointing"):
        start = html.index(f'name="{name}"')
        wrapper = html.rfind('<div class="field', 0, start)
        assert "training-only" in html[wrapper : wrapper + 40], name
    start = html.index('name="batch_size"')
    assert "training-only" not in html[html.rfind('<div class="field', 0, start) :][:40]
