"""The choice is priced (issue 25, item 5): units, units free now, the term's total, cheapest
usable first, a configurator link with the units filled in, suggestions when nothing fits."""

from decimal import Decimal

import pytest

from tests.factories import api_post, make_offer

pytestmark = pytest.mark.django_db

TRAIN_8B = {"preset": "llama-3.1-8b", "mode": "training", "attention": "sdpa"}


def test_offers_that_fit_are_priced_and_the_cheapest_comes_first(client):
    make_offer(slug="pricey", gpu_model="Pricey 192 GB", memory_gib=192, prices={7: "900.00"})
    make_offer(slug="cheap", gpu_model="Cheap 192 GB", memory_gib=192, prices={7: "500.00"})
    make_offer(
        slug="pair",
        gpu_model="B200 180 GB",
        memory_gib=180,
        gpus_per_unit=2,
        prices={7: "700.00"},
        units_total=3,
    )
    make_offer(slug="small", gpu_model="L4 24 GB", memory_gib=24, prices={7: "50.00"})

    body = api_post(client, "/sizing", {**TRAIN_8B, "days": 7}).json()

    order = [r["offer"] for r in body["recommendations"]]
    assert order[:3] == ["cheap", "pair", "pricey"]
    cheap = body["recommendations"][0]
    assert cheap["units_to_rent"] == 1
    assert Decimal(cheap["total_usd"]) == Decimal("500.00")
    assert cheap["units_available"] == 10
    assert cheap["configure_url"] == "/gpus/cheap/?days=7&units=1"
    pair = body["recommendations"][1]
    assert pair["units_available"] == 3
    assert "1 unit = 2 GPUs" in pair["note"]
    small = body["recommendations"][-1]
    assert small["verdict"] == "does_not_fit"
    assert small["units_to_rent"] is None and small["total_usd"] is None
    assert body["suggestions"] == []


def test_a_sharded_fit_is_priced_for_all_its_units(client):
    make_offer(slug="h100", gpu_model="H100 80 GB", memory_gib=80, prices={30: "1000.00"})

    body = api_post(client, "/sizing", {**TRAIN_8B, "days": 30}).json()

    h100 = body["recommendations"][0]
    assert h100["verdict"] == "does_not_fit"
    assert h100["units_to_rent"] == h100["units_needed_if_sharded"] == 3
    assert Decimal(h100["total_usd"]) == Decimal("3000.00")
    assert h100["configure_url"].endswith("?days=30&units=3")


def test_when_nothing_fits_the_answer_suggests_what_would(client):
    make_offer(slug="l40s", gpu_model="L40S 48 GB", memory_gib=48, prices={7: "50.00"})

    body = api_post(client, "/sizing", TRAIN_8B).json()

    # Full training of 8B needs ~140 GiB: the 48 GB card holds it only for a changed job.
    assert body["recommendations"][0]["verdict"] == "does_not_fit"

    changes = {s["change"]: s for s in body["suggestions"]}
    assert {"gradient_checkpointing", "lora", "qlora", "shorter_context"} <= set(changes)
    qlora = changes["qlora"]
    assert qlora["offer"] == "l40s" and qlora["units"] == 1
    assert Decimal(qlora["total_usd"]) == Decimal("50.00")
    assert "QLoRA" in qlora["note"] and "50.00 USD for 7 days" in qlora["note"]
    assert qlora["per_gpu_gib"] < 48
    assert changes["gradient_checkpointing"]["offer"] is None
    assert "Still nothing in the catalog fits." in changes["gradient_checkpointing"]["note"]
    zero3 = [s for s in body["suggestions"] if s["change"].startswith("zero3:")]
    assert zero3 and zero3[0]["gpus"] > 1


def test_a_term_that_is_not_offered_is_refused(client):
    response = api_post(client, "/sizing", {**TRAIN_8B, "days": 5})

    assert response.status_code == 422
    assert "days" in response.json()["detail"]


def test_vllm_takes_its_share_of_each_card_and_the_answer_sizes_the_kv_budget(client):
    """vLLM pre-allocates 90 % of the card: Llama 3.1 8B in bf16 (about 16 GiB with its
    context) fits an 80 GB card, and what the weights and activations leave of the 72 GiB is
    KV cache for so many sequences of the job's length."""
    make_offer(slug="h100", gpu_model="H100 80 GB", memory_gib=80, prices={7: "700.00"})
    make_offer(slug="small", gpu_model="Small 20 GB", memory_gib=20, prices={7: "50.00"})
    job = {"preset": "llama-3.1-8b", "sequence_length": 8192, "attention": "flash"}

    plain = api_post(client, "/sizing", job).json()
    vllm = api_post(client, "/sizing", {**job, "framework": "vllm"}).json()

    by_offer = {r["offer"]: r for r in vllm["recommendations"]}
    h100 = by_offer["h100"]
    assert h100["usable_gib"] == 72.0
    kv_per_sequence = 32 * 8 * 128 * 2 * 2 * 8192 / 2**30  # 1 GiB per 8,192-token sequence
    assert h100["sequences_at_once"] == int(h100["kv_budget_gib"] // kv_per_sequence)
    assert 50 < h100["sequences_at_once"] < 72
    assert "vLLM takes 72.00 GiB of each card" in h100["note"]
    # 20 GB holds the job alone (18.1 GiB), not within vLLM's 90 % of it (18 GiB).
    plain_small = {r["offer"]: r for r in plain["recommendations"]}["small"]
    assert plain_small["verdict"] != "does_not_fit"
    assert by_offer["small"]["verdict"] == "does_not_fit"
    refused = api_post(client, "/sizing", {**job, "mode": "training", "framework": "vllm"})
    assert refused.status_code == 422 and "framework" in str(refused.json())
