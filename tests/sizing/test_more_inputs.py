"""Issue 25, item 2, the inputs added last: chunked_loss, framework llama.cpp (GGUF weights
and its context-sized KV cache), activations split under tensor parallelism; and the
custom-architecture form's fields for sliding windows, latent attention and MoE experts."""

from dataclasses import replace

import pytest
from django.urls import reverse

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import GIB, EstimateError, Workload
from kernodeck.sizing.presets import PRESETS
from tests.factories import api_post

LLAMA2_7B = PRESETS["llama-2-7b"][1]
LLAMA31_8B = PRESETS["llama-3.1-8b"][1]
TRAIN = Workload(
    LLAMA31_8B, mode="training", finetune="lora", attention="sdpa", sequence_length=4096
)
LLAMA_CPP = Workload(LLAMA2_7B, framework="llama.cpp", quantization="q4_k_m", sequence_length=4096)


def test_unsaid_chunked_loss_is_todays_estimate():
    assert estimator.estimate(replace(TRAIN, chunked_loss=False)).per_gpu == (
        estimator.estimate(TRAIN).per_gpu
    )


def test_a_chunked_loss_keeps_the_fp32_logits_of_one_eighth_of_the_positions():
    whole = estimator.estimate(TRAIN).per_gpu["activations"]
    chunked = estimator.estimate(replace(TRAIN, chunked_loss=True)).per_gpu["activations"]

    # The fp32 copy and its gradient (8 bytes per logit) of 7/8 of the positions go away.
    saved = 4096 * LLAMA31_8B.vocab_size * 8.0 * 7 / 8
    assert whole - chunked == pytest.approx(saved)


def test_llama_cpp_q4_k_m_weights_match_the_gguf_file_and_its_cache_the_whole_context():
    """TheBloke/Llama-2-7B-GGUF's llama-2-7b.Q4_K_M.gguf is 4.08 GB (3.80 GiB); llama.cpp
    prints 'KV self size = 2048.00 MiB' for a 7B Llama 2 at -c 4096 with the f16 cache,
    allocated at start, whatever the prompt."""
    short_prompt = replace(LLAMA_CPP, prompt_length=100, new_tokens=20)
    parts = estimator.estimate(short_prompt).per_gpu

    assert parts["weights"] / GIB == pytest.approx(3.80, rel=0.02)
    assert parts["kv_cache"] == 2048 * 2**20
    q8 = estimator.estimate(replace(LLAMA_CPP, quantization="q8_0")).per_gpu["weights"]
    assert q8 == pytest.approx(LLAMA2_7B.total_parameters() * 34 / 32)
    q8_cache = replace(LLAMA_CPP, kv_cache_dtype="int8")
    assert estimator.estimate(q8_cache).per_gpu["kv_cache"] == 1024 * 2**20


def test_llama_cpp_reserves_attention_scores_unless_flash_attention_is_on():
    plain = estimator.estimate(LLAMA_CPP).per_gpu["activations"]
    flash = estimator.estimate(replace(LLAMA_CPP, attention="flash")).per_gpu["activations"]

    # One physical batch of 512 tokens against 4,096 cached, 32 heads, f32.
    assert plain - flash == 512 * 4096 * 32 * 4


@pytest.mark.django_db
def test_llama_cpp_says_what_it_allocates(client):
    body = api_post(
        client,
        "/sizing",
        {
            "preset": "llama-2-7b",
            "framework": "llama.cpp",
            "quantization": "q4_k_m",
            "sequence_length": 4096,
        },
    ).json()

    assert body["breakdown"]["kv_cache"] == pytest.approx(2.0, abs=0.01)
    assert any("whole context (4,096 tokens)" in s for s in body["assumptions"])
    assert any("0.613 bytes" in s for s in body["assumptions"])


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"quantization": "q4_k_m"}, "quantization"),  # GGUF without llama.cpp
        ({"framework": "llama.cpp", "mode": "training"}, "framework"),
        ({"chunked_loss": "yes"}, "chunked_loss"),
    ],
)
def test_bad_new_inputs_name_their_field(changes, field):
    with pytest.raises(EstimateError) as error:
        estimator.estimate(replace(TRAIN, **changes))

    assert error.value.field == field


def test_tensor_parallel_splits_the_inner_activations_not_the_block_inputs():
    full = replace(TRAIN, finetune="full")
    one = estimator.estimate(full).per_gpu["activations"]
    zero3 = estimator.estimate(replace(full, gpus=4, sharding="zero3")).per_gpu["activations"]
    tp = estimator.estimate(replace(full, gpus=4, sharding="tensor_parallel")).per_gpu[
        "activations"
    ]

    assert zero3 == one  # ZeRO-3 divides states, each GPU runs its whole batch
    assert one / 4 < tp < one / 2  # the norms' and blocks' inputs stay whole
    inference = replace(TRAIN, mode="inference", gpus=4, sharding="tensor_parallel")
    assert (
        estimator.estimate(inference).per_gpu["activations"]
        < (estimator.estimate(replace(inference, sharding="zero3")).per_gpu["activations"])
    )


@pytest.mark.django_db
def test_the_api_and_page_take_chunked_loss(client):
    payload = {"preset": "llama-3.1-8b", "mode": "training", "finetune": "lora"}
    plain = api_post(client, "/sizing", payload).json()
    chunked = api_post(client, "/sizing", {**payload, "chunked_loss": True}).json()
    assert chunked["breakdown"]["activations"] < plain["breakdown"]["activations"]
    assert api_post(client, "/sizing", {**payload, "chunked_loss": "yes"}).status_code == 422

    page = client.get(
        reverse("sizing:estimate"),
        {
            "preset": "llama-3.1-8b",
            "mode": "training",
            "finetune": "lora",
            "precision": "bf16",
            "batch_size": "1",
            "sequence_length": "2048",
            "optimizer": "adamw",
            "gpus": "1",
            "chunked_loss": "yes",
        },
        HTTP_ACCEPT_LANGUAGE="es",
    ).content.decode()
    assert "errorlist" not in page
    assert "La pérdida se calcula por trozos" in page
    assert 'name="chunked_loss"' in page


ARCH = {
    "preset": "custom",
    "mode": "inference",
    "precision": "bf16",
    "batch_size": "1",
    "sequence_length": "32768",
    "optimizer": "adamw",
    "finetune": "full",
    "gpus": "1",
    "layers": "32",
    "hidden_size": "4096",
    "intermediate_size": "14336",
    "attention_heads": "32",
    "kv_heads": "8",
    "head_dim": "128",
    "vocab_size": "32000",
}


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "es"])
def test_the_custom_architecture_form_shows_the_modern_fields(client, language):
    page = client.get(reverse("sizing:estimate"), HTTP_ACCEPT_LANGUAGE=language).content
    page = page.decode()

    for name in (
        "sliding_window",
        "sliding_layers",
        "kv_lora_rank",
        "rope_head_dim",
        "experts_per_token",
        "moe_intermediate_size",
    ):
        assert f'name="{name}"' in page
    assert ("Ventana deslizante" in page) == (language == "es")


@pytest.mark.django_db
def test_a_sliding_window_given_on_the_page_shrinks_the_cache(client):
    url = reverse("sizing:estimate")
    plain = client.get(url, ARCH, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    windowed = client.get(
        url, {**ARCH, "sliding_window": "4096"}, HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()

    assert "errorlist" not in windowed
    assert "32 layers attend to a sliding window and keep at most 4096 tokens" in windowed
    assert "sliding window" not in plain
    latent = client.get(
        url,
        {**ARCH, "kv_lora_rank": "512", "rope_head_dim": "64"},
        HTTP_ACCEPT_LANGUAGE="en",
    ).content.decode()
    assert "one compressed latent of 576 values" in latent
    moe = client.get(
        url,
        {**ARCH, "experts": "8", "experts_per_token": "2", "moe_intermediate_size": "2048"},
        HTTP_ACCEPT_LANGUAGE="en",
    ).content.decode()
    assert "errorlist" not in moe
    experts = estimator.Architecture(
        layers=32,
        hidden_size=4096,
        intermediate_size=14336,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        vocab_size=32000,
        experts=8,
        experts_per_token=2,
        moe_intermediate_size=2048,
    ).counted_parameters()
    assert f"{experts:,} parameters at 2 bytes each" in moe


@pytest.mark.django_db
def test_the_offer_notes_say_their_verdicts_in_the_pages_language(client):
    """'With attention = eager: measure it.' was English on the Spanish page: the verdict
    words were translated once, when the module was imported."""
    demo_seed_catalog()
    page = client.get(
        reverse("sizing:estimate"),
        {
            "preset": "llama-3.1-8b",
            "mode": "training",
            "finetune": "lora",
            "precision": "bf16",
            "batch_size": "1",
            "sequence_length": "2048",
            "optimizer": "adamw",
            "gpus": "1",
        },
        HTTP_ACCEPT_LANGUAGE="es",
    ).content.decode()

    assert "Con attention = eager: " in page
    assert "measure it" not in page and "does not fit" not in page
