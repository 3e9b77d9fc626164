"""The estimator against published, measured peaks.

Each case names its source and conditions. The published figures are peaks of
`torch.cuda.max_memory_allocated()`, which counts tensors only, so they are compared with
`Estimate.tensor_bytes` (everything but the context and fragmentation overhead).
Target: within 10 %. One case does not reach it and keeps its real tolerance (see its
docstring).
"""

import pytest

from kernodeck.sizing.estimator import GIB, Architecture, Workload, estimate
from kernodeck.sizing.presets import PRESETS

GB = 10**9
LLAMA2_7B = PRESETS["llama-2-7b"][1]
# meta-llama/Llama-2-13b-hf config.json.
LLAMA2_13B = Architecture(40, 5120, 13824, 40, 40, 128, 32000, parameters=13_015_864_320)
# bigcode/octocoder (GPT-BigCode, StarCoder's architecture): multi-query attention, plain MLP,
# tied embeddings, 8,192 learned positions. The count adds the biases to what the estimator
# counts from these fields (15,515,228,160).
OCTOCODER = Architecture(
    40,
    6144,
    24576,
    48,
    1,
    128,
    49152,
    parameters=15_517_462_528,
    gated_mlp=False,
    tied_embeddings=True,
    position_embeddings=8192,
)
# The Alpaca sample with the most Llama 2 tokens, per the LitGPT table's notes.
ALPACA_LONGEST_LLAMA2 = 1304


def relative_error(workload, measured_bytes):
    predicted = estimate(workload).tensor_bytes
    return (predicted - measured_bytes) / measured_bytes


def test_litgpt_llama2_7b_inference_bf16():
    """LitGPT tutorials/resource-tables.md (updated 2023-10-20, commit 8641822), "Single-GPU
    Inference": Llama 2 7B, no quantization, 1 x A100-SXM4-40GB, bf16-true, PyTorch 2.1.0:
    13.52 GB (10**9 bytes; LitGPT prints max_memory_allocated / 1e9). Short prompt, 50 new
    tokens by default."""
    error = relative_error(Workload(LLAMA2_7B, sequence_length=64), 13.52 * GB)
    assert abs(error) <= 0.10, error


def test_litgpt_llama2_13b_inference_bf16():
    """Same LitGPT table: Llama 2 13B, no quantization, 1 x A100: 26.21 GB."""
    error = relative_error(Workload(LLAMA2_13B, sequence_length=64), 26.21 * GB)
    assert abs(error) <= 0.10, error


def test_litgpt_llama2_7b_inference_nf4():
    """Same LitGPT table: Llama 2 7B, bnb.nf4 (bitsandbytes 0.41.1), 1 x A100: 4.57 GB."""
    error = relative_error(Workload(LLAMA2_7B, precision="int4", sequence_length=64), 4.57 * GB)
    assert abs(error) <= 0.10, error


def test_litgpt_llama2_13b_inference_nf4():
    """Same LitGPT table: Llama 2 13B, bnb.nf4, 1 x A100: 8.32 GB."""
    error = relative_error(Workload(LLAMA2_13B, precision="int4", sequence_length=64), 8.32 * GB)
    assert abs(error) <= 0.10, error


@pytest.mark.parametrize(("microbatch", "measured_gb"), [(1, 21.30), (2, 29.07)])
def test_litgpt_llama2_7b_lora(microbatch, measured_gb):
    """Same LitGPT file, "Finetuning with LoRA on 1 GPU": finetune/lora.py on 1 x A100,
    bf16-true, Alpaca (longest sample 1,304 Llama 2 tokens), no quantization, 4,194,304
    trainable parameters (rank 8 on q and v; our estimate assumes rank 16 on every linear
    layer, a few hundred MB more of adapter state): micro-batch 1: 21.30 GB, 2: 29.07 GB."""
    workload = Workload(
        LLAMA2_7B,
        mode="training",
        finetune="lora",
        batch_size=microbatch,
        sequence_length=ALPACA_LONGEST_LLAMA2,
    )
    error = relative_error(workload, measured_gb * GB)
    assert abs(error) <= 0.10, error


def test_litgpt_llama2_13b_lora():
    """Same LitGPT table: Llama 2 13B, LoRA, micro-batch 1, no quantization: 38.12 GB."""
    workload = Workload(
        LLAMA2_13B, mode="training", finetune="lora", sequence_length=ALPACA_LONGEST_LLAMA2
    )
    error = relative_error(workload, 38.12 * GB)
    assert abs(error) <= 0.10, error


def test_litgpt_llama2_7b_qlora_nf4_is_within_20_percent_only():
    """Same LitGPT table: Llama 2 7B, LoRA with bnb.nf4 base weights, micro-batch 1:
    14.14 GB. The estimator says about 11.6 GB (-18 %): the measured run holds about 2 GB
    more than the 4-bit weights, adapters and activations explain (dequantized weight copies
    and bitsandbytes buffers during the backward pass, which the estimator does not model).
    Kept at its real tolerance, 20 %, and reported as not calibrated to 10 %."""
    workload = Workload(
        LLAMA2_7B,
        mode="training",
        finetune="qlora",
        precision="int4",
        sequence_length=ALPACA_LONGEST_LLAMA2,
    )
    error = relative_error(workload, 14.14 * GB)
    assert abs(error) <= 0.20, error
    assert error < -0.10  # still short of 10 %: tighten this case when the model improves


@pytest.mark.parametrize(
    ("precision", "measured_gib"),
    [("bf16", 29.0260648727417), ("int8", 15.219234466552734), ("int4", 9.543574333190918)],
)
def test_hugging_face_octocoder_generation(precision, measured_gib):
    """Hugging Face, "Optimizing LLMs for speed and memory" (P. von Platen, 2023; blog post
    optimize-llm.md and the Transformers guide llm_tutorial_optimization): bigcode/octocoder
    (15.5B) loaded with torch_dtype=bfloat16, then load_in_8bit=True, then load_in_4bit=True
    (bitsandbytes), generating 60 new tokens for a one-line prompt;
    bytes_to_giga_bytes(torch.cuda.max_memory_allocated()) with bytes / 1024**3:
    29.0260648727417, 15.219234466552734 and 9.543574333190918 GiB."""
    workload = Workload(OCTOCODER, precision=precision, sequence_length=90)
    error = relative_error(workload, measured_gib * GIB)
    assert abs(error) <= 0.10, error


# Every case above: (workload, measured bytes). The verdict's margin must cover each one: a
# card the estimator calls a fit is never below a measured peak of these tables.
MEASURED = [
    (Workload(LLAMA2_7B, sequence_length=64), 13.52 * GB),
    (Workload(LLAMA2_13B, sequence_length=64), 26.21 * GB),
    (Workload(LLAMA2_7B, precision="int4", sequence_length=64), 4.57 * GB),
    (Workload(LLAMA2_13B, precision="int4", sequence_length=64), 8.32 * GB),
    *[
        (
            Workload(
                LLAMA2_7B,
                mode="training",
                finetune="lora",
                batch_size=b,
                sequence_length=ALPACA_LONGEST_LLAMA2,
            ),
            gb * GB,
        )
        for b, gb in ((1, 21.30), (2, 29.07))
    ],
    (
        Workload(
            LLAMA2_13B, mode="training", finetune="lora", sequence_length=ALPACA_LONGEST_LLAMA2
        ),
        38.12 * GB,
    ),
    (
        Workload(
            LLAMA2_7B,
            mode="training",
            finetune="qlora",
            precision="int4",
            sequence_length=ALPACA_LONGEST_LLAMA2,
        ),
        14.14 * GB,
    ),
    *[
        (Workload(OCTOCODER, precision=p, sequence_length=90), gib * GIB)
        for p, gib in (
            ("bf16", 29.0260648727417),
            ("int8", 15.219234466552734),
            ("int4", 9.543574333190918),
        )
    ],
]


@pytest.mark.parametrize(("workload", "measured_bytes"), MEASURED)
def test_a_card_called_a_fit_is_never_below_the_measured_peak(workload, measured_bytes):
    """The smallest card the verdict calls a fit holds the estimate plus the margin; it must
    hold the measured peak too (measured tensors plus the context the estimate assumes)."""
    from kernodeck.sizing import estimator

    result = estimate(workload)
    smallest_fit = result.per_gpu_bytes * (1 + estimator.margin_for(workload))
    measured_on_device = measured_bytes + result.per_gpu["overhead"]
    assert smallest_fit >= measured_on_device
    assert (
        estimator.verdict(
            result.per_gpu_bytes,
            memory_gib=measured_bytes / GIB,
            margin=estimator.margin_for(workload),
        )
        != estimator.FITS
    )


# --- Held-out half ------------------------------------------------------------------------
# Measured peaks the formulas were never written or tuned against: the other rows of the same
# LitGPT table (tutorials/resource-tables.md, "Last updated: 10/20/2023", LitGPT commit
# 8641822, 1 x A100-SXM4-40GB, driver 525.125.06, PyTorch 2.1.0+cu121, bitsandbytes 0.41.1,
# --precision bf16-true, "Max GPU RAM" in GB of 10**9 bytes). Inference: generate with the
# default short prompt and 50 new tokens; LoRA: finetune/lora.py with LitGPT's defaults (r=8
# on the query and value projections; the table's trainable counts 4,194,304 and 6,553,600
# are what the estimator counts for them), Alpaca, micro-batch 1.
# Architectures: meta-llama/Llama-2-70b-hf and codellama/CodeLlama-34b-hf config.json.
#
# Result on this held-out half (8 cases): median absolute error 7.1 %, worst 22.3 %; every one
# is an under-estimate. The five inference cases are within 9 % (worst -8.2 %, Llama 2 7B
# nf4-dq); the three QLoRA cases are -21 % to -22 %: bitsandbytes' dequantisation buffers and
# the 4-bit backward's extra copies are not modelled, which is why QLoRA's margin is the widest
# (30 %, and 40 % while lora_rank is unsaid). The target, no case over 25 %, holds;
# under 10 % does not for QLoRA.
LLAMA2_70B = Architecture(80, 8192, 28672, 64, 8, 128, 32000)
CODELLAMA_34B = Architecture(48, 8192, 22016, 64, 8, 128, 32000)


def _inference_4bit(arch, quantization):
    return Workload(arch, precision="int4", quantization=quantization, sequence_length=64)


def _qlora(arch, quantization):
    return Workload(
        arch,
        mode="training",
        finetune="qlora",
        precision="int4",
        quantization=quantization,
        sequence_length=ALPACA_LONGEST_LLAMA2,
        lora_rank=8,
        lora_targets="q_proj,v_proj",
    )


HELD_OUT = {
    "llama2-7b-inference-nf4-dq": (_inference_4bit(LLAMA2_7B, "nf4_dq"), 4.26, 0.10),
    "llama2-13b-inference-nf4-dq": (_inference_4bit(LLAMA2_13B, "nf4_dq"), 7.72, 0.10),
    "llama2-70b-inference-nf4-dq": (_inference_4bit(LLAMA2_70B, "nf4_dq"), 37.21, 0.10),
    "codellama-34b-inference-nf4": (_inference_4bit(CODELLAMA_34B, "nf4"), 20.52, 0.10),
    "codellama-34b-inference-nf4-dq": (_inference_4bit(CODELLAMA_34B, "nf4_dq"), 18.95, 0.10),
    "llama2-7b-qlora-nf4-dq": (_qlora(LLAMA2_7B, "nf4_dq"), 13.84, 0.25),
    "llama2-13b-qlora-nf4": (_qlora(LLAMA2_13B, "nf4"), 23.14, 0.25),
    "llama2-13b-qlora-nf4-dq": (_qlora(LLAMA2_13B, "nf4_dq"), 22.55, 0.25),
}


@pytest.mark.parametrize("case", list(HELD_OUT))
def test_held_out_case_within_its_tolerance(case):
    workload, measured_gb, tolerance = HELD_OUT[case]

    error = relative_error(workload, measured_gb * GB)

    assert abs(error) <= tolerance, error


def test_held_out_median_error_is_under_10_percent():
    from statistics import median

    errors = [abs(relative_error(w, gb * GB)) for w, gb, _t in HELD_OUT.values()]

    assert median(errors) < 0.10, sorted(errors)


@pytest.mark.parametrize("case", list(HELD_OUT))
def test_held_out_no_card_called_a_fit_is_below_the_measured_peak(case):
    from kernodeck.sizing import estimator

    workload, measured_gb, _tolerance = HELD_OUT[case]
    result = estimate(workload)
    margin = estimator.margin_for(workload)

    assert result.per_gpu_bytes * (1 + margin) >= measured_gb * GB + result.per_gpu["overhead"]


def test_litgpts_trainable_counts_are_what_the_estimator_counts():
    assert estimate(_qlora(LLAMA2_7B, "nf4")).trainable_parameters == 4_194_304
    assert estimate(_qlora(LLAMA2_13B, "nf4")).trainable_parameters == 6_553_600
