import pytest
from django.urls import reverse

from tests.factories import make_offer, make_order

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def test_catalog_lists_active_offers_with_free_units(client):
    offer = make_offer(gpu_model="H100 80 GB", units_total=5)
    make_offer(gpu_model="Retired GPU", is_active=False)
    make_order(offer=offer, units=2)

    page = client.get(reverse("catalog:list"), **EN).content.decode()

    assert "H100 80 GB" in page
    assert "Retired GPU" not in page
    assert "3 units" in page


def test_catalog_filters_by_backend_and_memory(client):
    make_offer(gpu_model="Small CUDA", memory_gib=24)
    make_offer(gpu_model="Big CUDA", memory_gib=141)
    make_offer(gpu_model="Big ROCm", memory_gib=192, backend="rocm")

    rocm = client.get(reverse("catalog:list"), {"backend": "rocm"}, **EN).content.decode()
    big = client.get(reverse("catalog:list"), {"min_memory": "141"}, **EN).content.decode()

    assert "Big ROCm" in rocm and "Big CUDA" not in rocm
    assert "what ROCm" not in rocm  # the note is specific, not a generic heading
    assert "torch.cuda" in rocm
    assert "Big CUDA" in big and "Big ROCm" in big and "Small CUDA" not in big


def test_catalog_sorts_by_price(client):
    make_offer(gpu_model="Pricey", prices={3: "900.00", 7: "2000.00", 30: "8000.00"})
    make_offer(gpu_model="Cheap", prices={3: "30.00", 7: "70.00", 30: "250.00"})

    ascending = client.get(reverse("catalog:list"), {"sort": "price"}).content.decode()
    descending = client.get(reverse("catalog:list"), {"sort": "-price"}).content.decode()

    assert ascending.index("Cheap") < ascending.index("Pricey")
    assert descending.index("Pricey") < descending.index("Cheap")


def test_empty_catalog_and_empty_filter_say_so(client):
    assert (
        "The catalog is empty for now."
        in client.get(reverse("catalog:list"), **EN).content.decode()
    )
    make_offer(backend="cuda")
    filtered = client.get(reverse("catalog:list"), {"backend": "rocm"}, **EN).content.decode()
    assert "No GPU matches these filters" in filtered


def test_configurator_summary_shows_units_gpus_and_total_from_the_quote(client):
    offer = make_offer(
        slug="b200", gpus_per_unit=2, prices={3: "936.00", 7: "2118.48", 30: "7956.00"}
    )

    page = client.get(
        reverse("catalog:configure", args=[offer.slug]),
        {"days": "7", "units": "2", "preparation": "pytorch"},
        **EN,
    ).content.decode()

    assert '<dd id="summary-units">2</dd>' in page
    assert '<dd id="summary-gpus">4</dd>' in page
    assert '<dd id="summary-total">4,236.96 USD</dd>' in page
    assert "do not pool their memory" in page


def test_live_summary_fragment_uses_the_same_quote(client):
    offer = make_offer(
        slug="b200", gpus_per_unit=2, prices={3: "936.00", 7: "2118.48", 30: "7956.00"}
    )

    fragment = client.get(
        reverse("catalog:summary", args=[offer.slug]),
        {"days": "30", "units": "3", "preparation": "python"},
        **EN,
    ).content.decode()

    assert "<html" not in fragment
    assert '<dd id="summary-gpus">6</dd>' in fragment
    assert '<dd id="summary-total">23,868.00 USD</dd>' in fragment


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"days": "5"}, "Choose a duration of 3, 7 or 30 days."),
        ({"units": "0"}, "Choose between 1 and 10 units."),
        ({"units": "11"}, "Choose between 1 and 10 units."),
        ({"preparation": "notebook"}, "This GPU offers these preparations: python, pytorch."),
        ({"units": "4"}, "Only 3 GPU-X units are free right now."),
    ],
)
def test_configurator_explains_invalid_choices_next_to_the_field(client, params, message):
    offer = make_offer(gpu_model="GPU-X", units_total=3, preparations=("python", "pytorch"))
    query = {"days": "7", "units": "1", "preparation": "python", **params}

    page = client.get(reverse("catalog:configure", args=[offer.slug]), query, **EN)

    assert message in page.content.decode()
    assert 'id="summary-total"' not in page.content.decode()


def test_unknown_offer_is_a_404(client):
    assert client.get(reverse("catalog:configure", args=["no-such-gpu"])).status_code == 404


def test_configurator_continues_to_the_confirmation_step_with_the_configuration(client):
    offer = make_offer(slug="h100")

    page = client.get(reverse("catalog:configure", args=[offer.slug])).content.decode()

    assert f'action="{reverse("orders:new")}"' in page
    assert 'name="offer" value="h100"' in page


def test_demo_gpu_descriptions_and_prices_speak_the_page_language(client):
    from kernodeck.demo.services import demo_seed_catalog

    demo_seed_catalog()
    make_offer(gpu_model="Own GPU", description="Written by the operator.")

    es = client.get(reverse("catalog:list"), HTTP_ACCEPT_LANGUAGE="es").content.decode()
    en = client.get(reverse("catalog:list"), **EN).content.decode()

    assert "Tarjeta Ada de consumo: ajuste fino de modelos pequeños" in es
    assert "Blackwell: cada lote incluye dos GPU B200." in es
    assert "Consumer Ada card" not in es
    assert "Consumer Ada card: fine-tuning small models, image generation, inference." in en
    # An operator's own description is not a message id: it shows as written.
    assert "Written by the operator." in es
    # One money format per language: the 30-day B200 unit (7 956 USD) in each.
    assert "7\u00a0956,00 USD" in es and "7,956.00 USD" in en
