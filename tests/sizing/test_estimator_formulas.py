"""One test per formula of kernodeck.sizing.estimator, with exact values worked by hand."""

import pytest

from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import GIB, Architecture, EstimateError, Workload
from kernodeck.sizing.presets import PRESETS

LLAMA2 = PRESETS["llama-2-7b"][1]
TINY = Architecture(2, 8, 16, 2, 1, 4, 10)


def test_parameter_count_matches_the_published_llama_2_7b():
    counted = Architecture(32, 4096, 11008, 32, 32, 128, 32000).counted_parameters()

    assert counted == 6_738_415_616


def test_parameter_count_of_a_tiny_model_term_by_term():
    # embeddings 2*10*8=160; attention 2*8*2*4 + 2*8*1*4 = 128+64 = 192; gated MLP 3*8*16=384;
    # two layers: 2*(192+384) = 1152; norms 2*8*2 + 8 = 40.
    assert TINY.counted_parameters() == 160 + 1152 + 40


def test_mixture_of_experts_counts_every_expert_and_the_router():
    mixtral = Architecture(32, 4096, 14336, 32, 8, 128, 32000, experts=8, experts_per_token=2)

    assert mixtral.counted_parameters() == 46_702_792_704


def test_weights_are_parameters_times_bytes():
    assert estimator.weight_bytes(LLAMA2, "bf16") == 6_738_415_616 * 2
    assert estimator.weight_bytes(LLAMA2, "fp32") == 6_738_415_616 * 4


def test_quantized_weights_keep_embeddings_in_16_bits_and_int4_pays_its_scales():
    embeddings = 2 * 32000 * 4096
    rest = 6_738_415_616 - embeddings

    assert estimator.weight_bytes(LLAMA2, "int8") == rest * 1 + embeddings * 2
    assert estimator.weight_bytes(LLAMA2, "fp8") == rest * 1 + embeddings * 2
    assert estimator.weight_bytes(LLAMA2, "int4") == rest * (0.5 + 4 / 64) + embeddings * 2


def test_kv_cache_is_two_layers_kv_heads_head_dim_bytes_per_token():
    llama31 = PRESETS["llama-3.1-8b"][1]

    # 2 x 32 layers x 8 kv heads x 128 x 2 bytes = 131,072 bytes per token.
    size = estimator.kv_cache_bytes(llama31, batch_size=4, tokens=8192, precision="bf16")

    assert size == 131_072 * 8192 * 4
    assert size == 4 * GIB


def test_kv_cache_stays_16_bit_for_quantized_weights_and_32_bit_for_fp32():
    one = {"batch_size": 1, "tokens": 1}

    assert estimator.kv_cache_bytes(TINY, precision="int4", **one) == 2 * 2 * 1 * 4 * 2
    assert estimator.kv_cache_bytes(TINY, precision="fp32", **one) == 2 * 2 * 1 * 4 * 4


def test_layer_activations_follow_korthikanti_adapted():
    gpt_like = Architecture(1, 100, 400, 4, 4, 25, 10, gated_mlp=False)

    # Korthikanti's 34 sbh less dropout masks (2) and score terms, with the MLP's 4h made
    # explicit: norms 4h + attention (2h + 2h + 4h + 2h) + MLP (2h + 4*400) = 32h at h=100.
    assert estimator.layer_activation_bytes_per_token(gpt_like, "bf16") == 32 * 100
    assert estimator.layer_activation_bytes_per_token(gpt_like, "fp32") == 64 * 100


def test_gated_mlp_and_experts_per_token_scale_the_mlp_term():
    dense = Architecture(1, 100, 400, 4, 4, 25, 10)
    moe = Architecture(1, 100, 400, 4, 4, 25, 10, experts=8, experts_per_token=2)

    assert estimator.layer_activation_bytes_per_token(dense, "bf16") == 1600 + 8 * 400
    assert estimator.layer_activation_bytes_per_token(moe, "bf16") == 1600 + 2 * 8 * 400


def test_mixed_precision_adamw_full_fine_tuning_is_16_bytes_per_parameter():
    result = estimator.estimate(Workload(LLAMA2, mode="training", precision="bf16"))
    params = 6_738_415_616

    states = result.total["weights"] + result.total["gradients"] + result.total["optimizer"]
    assert states == 16 * params


def test_fp32_adamw_is_16_and_8bit_adamw_and_sgd_are_smaller():
    params = 6_738_415_616

    def states(**kw):
        r = estimator.estimate(Workload(LLAMA2, mode="training", **kw))
        return (r.total["weights"] + r.total["gradients"] + r.total["optimizer"]) / params

    assert states(precision="fp32") == 16
    assert states(precision="bf16", optimizer="adamw8bit") == 2 + 2 + 4 + 2
    assert states(precision="bf16", optimizer="sgd") == 2 + 2 + 4 + 4


def test_lora_trains_only_the_adapters():
    result = estimator.estimate(Workload(LLAMA2, mode="training", finetune="lora"))
    # Rank 16 on q, k, v, o (4096 -> 4096) and gate, up, down (4096 <-> 11008), 32 layers.
    adapters = 32 * (4 * 16 * (4096 + 4096) + 3 * 16 * (4096 + 11008))

    assert result.trainable_parameters == adapters
    assert result.total["gradients"] == adapters * 4
    assert result.total["optimizer"] == adapters * 8
    assert result.total["weights"] == 6_738_415_616 * 2 + adapters * 4


def test_gradient_checkpointing_keeps_layer_inputs_plus_one_layer():
    w = Workload(TINY, mode="training", batch_size=2, sequence_length=3)
    layer = estimator.layer_activation_bytes_per_token(TINY, "bf16")
    logits = 6 * 10 * (2 + 8)

    plain = estimator.training_activation_bytes(TINY, w)
    checkpointed = estimator.training_activation_bytes(
        TINY,
        Workload(
            TINY, mode="training", batch_size=2, sequence_length=3, gradient_checkpointing=True
        ),
    )

    assert plain == 6 * 2 * layer + logits
    assert checkpointed == 6 * (2 * 2 * 8 + layer) + logits


def test_overhead_is_the_context_plus_five_percent_of_the_tensors():
    result = estimator.estimate(Workload(TINY, sequence_length=4))
    tensors = result.tensor_bytes

    assert result.per_gpu["overhead"] == 0.5 * GIB + 0.05 * tensors


def test_sharding_divides_the_sharded_parts_only():
    one = estimator.estimate(Workload(LLAMA2, mode="training"))
    four = estimator.estimate(Workload(LLAMA2, mode="training", gpus=4))

    for part in ("weights", "gradients", "optimizer", "kv_cache"):
        assert four.per_gpu[part] == one.per_gpu[part] / 4
    assert four.per_gpu["activations"] == one.per_gpu["activations"]
    assert four.total["weights"] == one.total["weights"]


def test_gpus_needed_and_fit_use_the_workloads_margin():
    w = Workload(LLAMA2, mode="training", attention="sdpa")
    one = estimator.estimate(w).per_gpu_bytes
    margin = estimator.margin_for(w)

    assert margin == estimator.MARGINS["training"]
    assert estimator.fits(one, memory_gib=one * 1.25 / GIB, margin=margin)
    assert not estimator.fits(one, memory_gib=one * 1.24 / GIB, margin=margin)
    needed = estimator.gpus_needed(w, memory_gib=80)
    assert needed == 2
    assert estimator.estimate(estimator.with_gpus(w, 2)).per_gpu_bytes * 1.25 <= 80 * GIB
    assert estimator.estimate(w).per_gpu_bytes * 1.25 > 80 * GIB


def test_a_job_whose_activations_alone_exceed_the_card_never_fits():
    w = Workload(LLAMA2, mode="training", batch_size=64, sequence_length=8192)

    assert estimator.gpus_needed(w, memory_gib=24) is None


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"mode": "serving"}, "mode"),
        ({"precision": "fp64"}, "precision"),
        ({"batch_size": 0}, "batch_size"),
        ({"sequence_length": 0}, "sequence_length"),
        ({"gpus": 65}, "gpus"),
        ({"mode": "training", "optimizer": "adam9"}, "optimizer"),
        ({"mode": "training", "finetune": "half"}, "finetune"),
        ({"mode": "training", "precision": "int8"}, "precision"),
        ({"mode": "training", "finetune": "qlora", "precision": "bf16"}, "precision"),
    ],
)
def test_inputs_that_cannot_be_sized_name_their_field(changes, field):
    with pytest.raises(EstimateError) as error:
        estimator.estimate(Workload(TINY, **changes))

    assert error.value.field == field


def test_kv_heads_must_divide_attention_heads():
    with pytest.raises(EstimateError) as error:
        estimator.estimate(Workload(Architecture(2, 8, 16, 4, 3, 2, 10)))

    assert error.value.field == "kv_heads"


def test_learned_position_tables_count_as_16_bit_embeddings():
    gpt2 = Architecture(
        12,
        768,
        3072,
        12,
        12,
        64,
        50257,
        gated_mlp=False,
        tied_embeddings=True,
        position_embeddings=1024,
    )

    # The published 124,439,808 also counts the biases (102,144), which the estimator omits.
    assert gpt2.counted_parameters() == 124_337_664
    assert gpt2.embedding_parameters() == (50257 + 1024) * 768
    rest = gpt2.counted_parameters() - gpt2.embedding_parameters()
    assert estimator.weight_bytes(gpt2, "int8") == rest + (50257 + 1024) * 768 * 2
