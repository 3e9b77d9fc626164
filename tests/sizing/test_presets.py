"""Presets of current open models, each built from the config.json values it came from, and
the architecture features they need: sliding windows, experts loaded vs active, latent
attention, and the KV cache's own element type."""

import json
from dataclasses import replace

import pytest

from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import GIB, EstimateError, Workload, estimate
from kernodeck.sizing.presets import CONFIGS, PRESETS, architecture_from_config
from tests.factories import api_post

NEW_FAMILIES = ("llama-3.2-1b", "qwen3-8b", "qwen3-30b-a3b", "gemma-3-27b", "phi-4", "deepseek-v3")


@pytest.mark.parametrize("slug", list(CONFIGS))
def test_every_preset_is_exactly_its_config_json_values(slug):
    label, repo, config, parameters = CONFIGS[slug]
    arch = PRESETS[slug][1]

    assert "/" in repo and PRESETS[slug][0] == label
    assert arch == architecture_from_config(config, parameters)
    assert arch.layers == config.get("num_hidden_layers", config.get("n_layer"))
    assert arch.vocab_size == config["vocab_size"]
    if "num_key_value_heads" in config:
        assert arch.kv_heads == config["num_key_value_heads"]
    estimate(Workload(arch))  # every preset can be sized


@pytest.mark.parametrize(
    ("slug", "card_billions"),
    # The model cards' rounded totals.
    [
        ("llama-3.2-1b", 1.24),
        ("llama-3.2-3b", 3.21),
        ("qwen3-8b", 8.2),
        ("qwen3-32b", 32.8),
        ("qwen3-30b-a3b", 30.5),
        ("phi-4", 14.7),
        ("phi-3-mini", 3.8),
        ("gemma-3-27b", 27.0),
    ],
)
def test_counted_parameters_agree_with_the_model_cards(slug, card_billions):
    counted = PRESETS[slug][1].total_parameters() / 1e9

    assert counted == pytest.approx(card_billions, rel=0.02)


def test_the_current_families_are_offered_by_the_api(client):
    schema = client.get("/api/v1/openapi.json").json()
    presets = schema["components"]["schemas"]["SizingIn"]["properties"]["preset"]

    assert all(f'"{slug}"' in json.dumps(presets) for slug in NEW_FAMILIES)


def test_sliding_window_layers_keep_only_the_window():
    """Gemma 3 27B: 52 of its 62 layers are local (sliding_window_pattern 6) with a 1,024
    token window: at 32,768 tokens the cache is the 10 global layers' plus 52 windows."""
    gemma3 = PRESETS["gemma-3-27b"][1]
    per_layer_token = 2 * 16 * 128 * 2
    size = estimator.kv_cache_bytes(gemma3, batch_size=1, tokens=32768, precision="bf16")

    assert gemma3.windowed_layers() == 52
    assert size == per_layer_token * (10 * 32768 + 52 * 1024)
    full = replace(gemma3, sliding_window=0, sliding_layers=0)
    assert size < estimator.kv_cache_bytes(full, batch_size=1, tokens=32768, precision="bf16") / 4
    short = estimator.kv_cache_bytes(gemma3, batch_size=1, tokens=512, precision="bf16")
    assert short == per_layer_token * 62 * 512


def test_latent_attention_caches_one_compressed_latent():
    """DeepSeek-V3: kv_lora_rank 512 + qk_rope_head_dim 64 values per token and layer, not
    2 x 128 heads x 192."""
    v3 = PRESETS["deepseek-v3"][1]
    size = estimator.kv_cache_bytes(v3, batch_size=1, tokens=1000, precision="bf16")

    assert size == 61 * (512 + 64) * 2 * 1000
    sentences = [
        s for s in estimate(Workload(v3, precision="fp8")).assumptions if s[0] == "kv_cache"
    ]
    assert sentences[0][1]["latent"] == 576


def test_experts_are_all_loaded_but_only_the_active_ones_hold_activations():
    moe = PRESETS["qwen3-30b-a3b"][1]
    dense_like = replace(moe, experts_per_token=1)
    train = Workload(moe, mode="training", finetune="lora", sequence_length=1024)

    assert moe.total_parameters() > 30e9  # every expert's weights are in memory
    assert (
        estimate(train).per_gpu["weights"]
        == estimate(replace(train, architecture=dense_like)).per_gpu["weights"]
    )
    assert (
        estimate(train).per_gpu["activations"]
        > estimate(replace(train, architecture=dense_like)).per_gpu["activations"]
    )


def test_kv_cache_dtype_sets_the_caches_element_size():
    w = Workload(PRESETS["llama-3.1-8b"][1], sequence_length=32768)
    bf16 = estimate(w).per_gpu["kv_cache"]

    assert estimate(replace(w, kv_cache_dtype="fp8")).per_gpu["kv_cache"] == bf16 / 2
    assert estimate(replace(w, kv_cache_dtype="fp32")).per_gpu["kv_cache"] == bf16 * 2
    with pytest.raises(EstimateError) as refused:
        estimate(replace(w, kv_cache_dtype="int3"))
    assert refused.value.field == "kv_cache_dtype"


@pytest.mark.django_db
def test_the_api_takes_the_new_architecture_fields_and_kv_cache_dtype(client):
    architecture = {
        "layers": 62,
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "attention_heads": 32,
        "kv_heads": 16,
        "head_dim": 128,
        "vocab_size": 262208,
        "tied_embeddings": True,
        "sliding_window": 1024,
        "sliding_layers": 52,
    }
    payload = {"architecture": architecture, "sequence_length": 32768, "kv_cache_dtype": "fp8"}

    body = api_post(client, "/sizing", payload).json()
    preset = api_post(
        client,
        "/sizing",
        {"preset": "gemma-3-27b", "sequence_length": 32768, "kv_cache_dtype": "fp8"},
    ).json()

    assert body["breakdown"]["kv_cache"] == preset["breakdown"]["kv_cache"]
    assert body["breakdown"]["kv_cache"] == round(
        2 * 16 * 128 * 1 * (10 * 32768 + 52 * 1024) / GIB, 2
    )
    assert any("sliding window" in s for s in body["assumptions"])
    refused = api_post(client, "/sizing", {"architecture": {**architecture, "sliding_layers": 63}})
    assert refused.status_code == 422 and "sliding_layers" in str(refused.json())


def test_sharding_kinds_divide_what_they_divide():
    """Llama 3.1 8B full fine-tune over 4 GPUs: ZeRO-2 keeps every weight on each GPU,
    ZeRO-3/FSDP divide the weights but gather two blocks at a time, data parallel divides
    nothing; unsaid, the even split of before (and the margin widens for it)."""
    base = Workload(PRESETS["llama-3.1-8b"][1], mode="training", gpus=4, attention="sdpa")
    parts = {
        kind: estimate(replace(base, sharding=kind)).per_gpu
        for kind in (None, "none", "zero2", "zero3", "fsdp", "tensor_parallel")
    }
    weights = estimate(replace(base, gpus=1)).per_gpu["weights"]
    block = 2 * PRESETS["llama-3.1-8b"][1].layer_linear_parameters() * 2

    assert parts["none"]["weights"] == parts["zero2"]["weights"] == weights
    assert parts["zero2"]["optimizer"] == parts[None]["optimizer"]
    assert parts["none"]["optimizer"] == 4 * parts[None]["optimizer"]
    assert parts["zero3"]["weights"] == parts["fsdp"]["weights"] == weights / 4 + block
    assert parts["tensor_parallel"]["weights"] == parts[None]["weights"] == weights / 4
    unstated = {u.name: u for u in estimator.unstated_inputs(base)}
    assert unstated["sharding"].raises and unstated["sharding"].alternative == "zero2"
    with pytest.raises(EstimateError) as refused:
        estimate(replace(base, sharding="zero4"))
    assert refused.value.field == "sharding"
