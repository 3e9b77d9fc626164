"""The inputs that move the peak (issue 25, item 2): optional, today's behaviour by default."""

from dataclasses import replace

import pytest
from django.urls import reverse

from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import EstimateError, Workload
from kernodeck.sizing.presets import PRESETS
from tests.factories import api_post

LLAMA2_7B = PRESETS["llama-2-7b"][1]
LLAMA31_8B = PRESETS["llama-3.1-8b"][1]
TRAIN = Workload(LLAMA31_8B, mode="training", attention="sdpa")


def test_lora_on_q_and_v_at_rank_8_gives_litgpts_published_count():
    """LitGPT's resource table (tutorials/resource-tables.md): Llama 2 7B, LoRA r=8 on the
    query and value projections: 4,194,304 trainable parameters."""
    w = Workload(
        LLAMA2_7B, mode="training", finetune="lora", lora_rank=8, lora_targets="q_proj,v_proj"
    )

    assert estimator.estimate(w).trainable_parameters == 4_194_304


def test_lora_rank_and_targets_scale_the_adapters():
    lora = replace(TRAIN, finetune="lora")
    default = estimator.estimate(lora).trainable_parameters

    assert estimator.estimate(replace(lora, lora_rank=64)).trainable_parameters == 4 * default
    attention = estimator.estimate(replace(lora, lora_targets="attention")).trainable_parameters
    assert 0 < attention < default
    assert estimator.estimate(replace(lora, lora_targets="all_linear")).trainable_parameters == (
        default
    )


def test_no_master_copy_and_bf16_moments_shrink_the_optimizer_states():
    params = LLAMA31_8B.total_parameters()
    base = estimator.estimate(TRAIN).per_gpu["optimizer"]
    pure = estimator.estimate(replace(TRAIN, master_weights=False)).per_gpu["optimizer"]
    bf16 = estimator.estimate(
        replace(TRAIN, master_weights=False, optimizer_states="bf16")
    ).per_gpu["optimizer"]

    assert base == params * 12  # fp32 master + two fp32 moments (ZeRO)
    assert pure == params * 8
    assert bf16 == params * 4  # torchtune-style: two bf16 moments, no master copy


def test_lora_dropout_keeps_each_adapted_modules_input_and_mask():
    """LitGPT's default lora_dropout 0.05: q and v each keep their dropped-out hidden-size
    input (2 bytes in bf16) and its 1-byte mask, per token of every layer."""
    lora = replace(TRAIN, finetune="lora", lora_rank=8, lora_targets="q_proj,v_proj")
    without = estimator.estimate(replace(lora, lora_dropout=False)).per_gpu["activations"]
    with_dropout = estimator.estimate(replace(lora, lora_dropout=True)).per_gpu["activations"]

    tokens = lora.batch_size * lora.sequence_length
    assert with_dropout - without == tokens * LLAMA31_8B.layers * 2 * 4096 * 3
    found = {u.name: u for u in estimator.unstated_inputs(replace(lora, lora_dropout=None))}
    assert found["lora_dropout"].raises
    assert "lora_dropout" not in {u.name for u in estimator.unstated_inputs(TRAIN)}


def test_unsaid_optimizer_precision_is_named_without_widening_the_margin():
    found = {u.name: u for u in estimator.unstated_inputs(TRAIN)}

    assert set(found) == {"master_weights", "optimizer_states"}
    assert not any(u.raises for u in found.values())
    assert estimator.margin_for(TRAIN) == estimator.MARGINS["training"]


def test_a_classification_head_has_no_vocabulary_logits():
    lm = estimator.estimate(TRAIN)
    head = estimator.estimate(replace(TRAIN, head="classification", labels=3))

    vocab_head = LLAMA31_8B.vocab_size * LLAMA31_8B.hidden_size
    assert lm.parameters - head.parameters == vocab_head - 3 * LLAMA31_8B.hidden_size
    tokens = 2048
    logits = tokens * LLAMA31_8B.vocab_size * (2 + 8)
    assert lm.per_gpu["activations"] - head.per_gpu["activations"] == pytest.approx(
        logits - 3 * (2 + 8)
    )


def test_prefill_runs_over_the_prompt_and_the_cache_holds_prompt_and_answer():
    whole = estimator.estimate(Workload(LLAMA31_8B, sequence_length=4096, attention="sdpa"))
    split = estimator.estimate(
        Workload(LLAMA31_8B, prompt_length=1024, new_tokens=3072, attention="sdpa")
    )

    assert split.per_gpu["kv_cache"] == whole.per_gpu["kv_cache"]
    assert split.per_gpu["activations"] < whole.per_gpu["activations"] / 3


def test_gptq_and_awq_carry_smaller_scales_than_nf4():
    nf4 = estimator.estimate(replace(TRAIN, mode="inference", precision="int4"))
    gptq = estimator.estimate(
        replace(TRAIN, mode="inference", precision="int4", quantization="gptq")
    )
    named_nf4 = estimator.estimate(
        replace(TRAIN, mode="inference", precision="int4", quantization="nf4")
    )

    assert named_nf4.per_gpu["weights"] == nf4.per_gpu["weights"]
    assert gptq.per_gpu["weights"] < nf4.per_gpu["weights"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"quantization": "gptq"}, "quantization"),  # bf16 weights are not GPTQ
        ({"quantization": "fp4"}, "quantization"),
        ({"lora_targets": "mlp_everything"}, "lora_targets"),
        ({"lora_rank": 0}, "lora_rank"),
        ({"optimizer_states": "fp16"}, "optimizer_states"),
        ({"head": "regression"}, "head"),
        ({"new_tokens": 10}, "prompt_length"),
    ],
)
def test_bad_optional_inputs_name_their_field(changes, field):
    with pytest.raises(EstimateError) as error:
        estimator.estimate(replace(TRAIN, mode="inference", **changes))

    assert error.value.field == field


@pytest.mark.django_db
def test_the_api_takes_the_inputs(client):
    payload = {
        "preset": "llama-2-7b",
        "mode": "training",
        "finetune": "lora",
        "lora_rank": 8,
        "lora_targets": "q_proj,v_proj",
        "lora_dropout": True,
        "attention": "eager",
    }

    body = api_post(client, "/sizing", payload).json()

    assert body["trainable_parameters"] == 4_194_304
    assert "lora_dropout" not in {u["input"] for u in body["unstated_inputs"]}
    assert any("q_proj,v_proj" in sentence for sentence in body["assumptions"])
    assert any("eager attention" in sentence for sentence in body["assumptions"])
    refused = api_post(client, "/sizing", {"preset": "gpt2", "master_weights": "no"})
    assert refused.status_code == 422 and "master_weights" in refused.json()["detail"]


@pytest.mark.django_db
def test_the_page_takes_the_inputs(client):
    page = client.get(
        reverse("sizing:estimate"),
        {
            "preset": "llama-2-7b",
            "mode": "inference",
            "precision": "int4",
            "quantization": "awq",
            "batch_size": "1",
            "sequence_length": "2048",
            "prompt_length": "512",
            "new_tokens": "128",
            "optimizer": "adamw",
            "finetune": "full",
            "gpus": "1",
        },
        HTTP_ACCEPT_LANGUAGE="en",
    ).content.decode()

    assert "errorlist" not in page
    assert "KV cache for 1 sequence(s) of 640 tokens" in page
    assert 'class="field inference-only"' in page
