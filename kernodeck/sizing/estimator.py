"""GPU memory estimator: how much memory a transformer workload needs, part by part.

A pure module (no Django, no I/O) so the web page, the API, the calibration tests and the
environment check's `--measure` helper all compute the same numbers. Sizes are in bytes inside
and in GiB (2**30 bytes) in the result.

This module is the one door callers use: it validates a workload (every refusal names its
field), adds the parts up per GPU and for the whole job, names the optional inputs whose
default matters, and turns an estimate into a verdict for a card. What is sized and its
choices live in `workloads`; the cited formulas of each part, and the three figures per GPU,
in `formulas`; both are re-exported here, so `estimator.X` keeps working for every caller.

Sharding over n GPUs (tensor parallelism, FSDP or ZeRO-3) divides the weights, gradients,
optimizer states and KV cache by n; each GPU still holds the activations of the batch it
processes and its own context. Without sharding, GPUs do not pool memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kernodeck.sizing.formulas import (
    CONTEXT_BYTES,
    CONTEXT_GIB_BY_CARD,
    FP32_MASTER_BYTES,
    FRAGMENTATION,
    GIB,
    PARTS,
    SHARDED_PARTS,
    Estimate,
    compute_bytes,
    context_bytes_for,
    head_parameters_change,
    inference_activation_bytes,
    kv_cache_bytes,
    layer_activation_bytes_per_token,
    optimizer_state_bytes,
    training_activation_bytes,
    weight_bytes,
)
from kernodeck.sizing.workloads import (
    ALTERNATIVES,
    APPLIES,
    ASSUMED,
    ATTENTIONS,
    FINETUNES,
    FRAMEWORKS,
    FULL_TRAINING_PRECISIONS,
    GGUF_BITS,
    HEADS,
    KV_CACHE_DTYPES,
    LLAMA_CPP_UBATCH,
    LORA_MODULES,
    LORA_RANK,
    MAX_GPUS,
    MODES,
    OPTIMIZER_STATE_PRECISIONS,
    OPTIMIZERS,
    PRECISION_BYTES,
    QUANTIZATIONS,
    QUANTIZED,
    SHARDINGS,
    Architecture,
    EstimateError,
    Workload,
)

__all__ = [
    "CONTEXT_BYTES",
    "CONTEXT_GIB_BY_CARD",
    "DOES_NOT_FIT",
    "FINETUNES",
    "FITS",
    "FRAGMENTATION",
    "FULL_TRAINING_PRECISIONS",
    "GIB",
    "LORA_RANK",
    "MARGIN",
    "MARGINS",
    "MARGIN_FLOOR_BYTES",
    "MAX_GPUS",
    "MEASURE",
    "MODES",
    "OPTIMIZERS",
    "PARTS",
    "PRECISION_BYTES",
    "SHARDED_PARTS",
    "Architecture",
    "Estimate",
    "EstimateError",
    "Unstated",
    "Workload",
    "context_bytes_for",
    "estimate",
    "fits",
    "gpus_needed",
    "kv_cache_bytes",
    "layer_activation_bytes_per_token",
    "margin_for",
    "training_activation_bytes",
    "unstated_inputs",
    "validate",
    "verdict",
    "weight_bytes",
    "with_gpus",
    "with_margin",
]

# The margin a verdict adds to the estimate is the estimator's own spread against measured
# peaks for that kind of workload (tests/sizing/measured_peaks.py, fit half): inference is
# within about 10 % there (the worst under-estimates are small AWQ models with a one-token
# prompt, which the floor below covers), LoRA within 10 %, QLoRA 18 % short. Training spreads
# wider than inference (optimizer and activation terms vary with the stack), QLoRA widest.
# Each input that matters and was left at its default widens the margin further.
MARGINS = {"inference": 0.15, "training": 0.25, "qlora": 0.30}
UNSTATED_MARGIN = 0.10
# An unstated input "matters" when its other plausible value moves the estimate by this much.
MATTERS = 0.05
# Kept for clients of the module: the inference margin.
MARGIN = MARGINS["inference"]
# The margin is never less than this many bytes: on small jobs a relative margin is a few
# hundred MiB, less than the estimator's absolute spread there (its largest under-estimate on
# the fit half of tests/sizing/measured_peaks.py is 0.51 GiB, Qwen2.5-3B AWQ with a one-token
# prompt, where the peak is reached while the checkpoint loads).
MARGIN_FLOOR_BYTES = 0.75 * GIB


def validate(w: Workload) -> None:
    """Refuse what cannot be sized, naming the field and saying why."""
    a = w.architecture
    positive = {
        "layers": a.layers,
        "hidden_size": a.hidden_size,
        "intermediate_size": a.intermediate_size,
        "attention_heads": a.attention_heads,
        "kv_heads": a.kv_heads,
        "head_dim": a.head_dim,
        "vocab_size": a.vocab_size,
        "experts": a.experts,
        "experts_per_token": a.experts_per_token,
    }
    for name in ("sliding_window", "sliding_layers", "kv_lora_rank", "rope_head_dim"):
        if getattr(a, name) < 0:
            raise EstimateError("must be 0 or more.", field=name)
    if a.moe_intermediate_size < 0:
        raise EstimateError("must be 0 or more.", field="moe_intermediate_size")
    if a.sliding_layers > a.layers:
        raise EstimateError("cannot exceed layers.", field="sliding_layers")
    if a.sliding_layers and not a.sliding_window:
        raise EstimateError("give sliding_window with sliding_layers.", field="sliding_window")
    if a.position_embeddings < 0:
        raise EstimateError("must be 0 or more.", field="position_embeddings")
    for name, value in positive.items():
        if value < 1:
            raise EstimateError("must be a whole number of at least 1.", field=name)
    if a.kv_heads > a.attention_heads:
        raise EstimateError("cannot exceed attention_heads.", field="kv_heads")
    if a.attention_heads % a.kv_heads:
        raise EstimateError("must divide attention_heads evenly.", field="kv_heads")
    if a.experts_per_token > a.experts:
        raise EstimateError("cannot exceed experts.", field="experts_per_token")
    if a.parameters is not None and a.parameters < 1:
        raise EstimateError("must be a whole number of at least 1.", field="parameters")
    if w.mode not in MODES:
        raise EstimateError("must be inference or training.", field="mode")
    if w.precision not in PRECISION_BYTES:
        raise EstimateError("must be one of fp32, bf16, fp16, fp8, int8, int4.", field="precision")
    if w.batch_size < 1:
        raise EstimateError("must be at least 1.", field="batch_size")
    if w.sequence_length < 1:
        raise EstimateError("must be at least 1.", field="sequence_length")
    if not 1 <= w.gpus <= MAX_GPUS:
        raise EstimateError(f"must be between 1 and {MAX_GPUS}.", field="gpus")
    if w.attention is not None and w.attention not in ATTENTIONS:
        raise EstimateError("must be eager, sdpa or flash.", field="attention")
    if w.lora_rank is not None and not 1 <= w.lora_rank <= 4096:
        raise EstimateError("must be between 1 and 4096.", field="lora_rank")
    if w.lora_targets is not None:
        modules = w.lora_modules()
        if not modules or any(name not in LORA_MODULES for name in modules):
            raise EstimateError(
                "must be attention, all_linear or module names among q_proj, k_proj, v_proj, "
                "o_proj, gate_proj, up_proj, down_proj.",
                field="lora_targets",
            )
    if w.optimizer_states is not None and w.optimizer_states not in OPTIMIZER_STATE_PRECISIONS:
        raise EstimateError("must be fp32, bf16 or 8bit.", field="optimizer_states")
    if w.head is not None and w.head not in HEADS:
        raise EstimateError("must be lm or classification.", field="head")
    if w.labels is not None and not 1 <= w.labels <= 1_000_000:
        raise EstimateError("must be between 1 and 1000000.", field="labels")
    if w.prompt_length is not None and w.prompt_length < 1:
        raise EstimateError("must be at least 1.", field="prompt_length")
    if w.new_tokens is not None and w.new_tokens < 0:
        raise EstimateError("must be 0 or more.", field="new_tokens")
    if w.new_tokens is not None and w.prompt_length is None:
        raise EstimateError("give prompt_length with new_tokens.", field="prompt_length")
    if w.framework is not None and w.framework not in FRAMEWORKS:
        raise EstimateError("must be transformers, vllm or llama.cpp.", field="framework")
    if w.framework == "vllm" and w.mode != "inference":
        raise EstimateError("vLLM serves models: choose inference.", field="framework")
    if w.framework == "llama.cpp" and w.mode != "inference":
        raise EstimateError("llama.cpp runs models: choose inference.", field="framework")
    if w.chunked_loss is not None and not isinstance(w.chunked_loss, bool):
        raise EstimateError("must be true or false.", field="chunked_loss")
    if w.gpu_memory_utilization is not None:
        if w.framework != "vllm":
            raise EstimateError("give framework vllm with it.", field="gpu_memory_utilization")
        if not 0 < w.gpu_memory_utilization <= 1:
            raise EstimateError("must be above 0 and at most 1.", field="gpu_memory_utilization")
    if w.sharding is not None and w.sharding not in SHARDINGS:
        raise EstimateError(
            "must be none, zero2, zero3, fsdp or tensor_parallel.", field="sharding"
        )
    if w.kv_cache_dtype is not None and w.kv_cache_dtype not in KV_CACHE_DTYPES:
        raise EstimateError("must be fp32, bf16, fp16, fp8 or int8.", field="kv_cache_dtype")
    if w.quantization is not None:
        if w.quantization not in QUANTIZATIONS:
            raise EstimateError(
                "must be nf4, nf4_dq, gptq, awq, int8, or a GGUF type (q4_0, q4_k_m, q5_k_m, "
                "q6_k, q8_0).",
                field="quantization",
            )
        if QUANTIZATIONS[w.quantization] == "gguf":
            if w.framework != "llama.cpp":
                raise EstimateError(
                    "GGUF types are llama.cpp's: give framework llama.cpp.", field="quantization"
                )
        elif QUANTIZATIONS[w.quantization] != w.precision:
            raise EstimateError(
                "nf4, gptq and awq store int4 weights and int8 stores int8: choose the "
                "matching precision.",
                field="quantization",
            )
    if w.mode == "training":
        if w.optimizer not in OPTIMIZERS:
            raise EstimateError("must be adamw, adamw8bit or sgd.", field="optimizer")
        if w.finetune not in FINETUNES:
            raise EstimateError("must be full, lora or qlora.", field="finetune")
        if w.finetune == "full" and w.precision not in FULL_TRAINING_PRECISIONS:
            raise EstimateError(
                "full fine-tuning trains every weight: choose fp32, bf16 or fp16 "
                "(or LoRA/QLoRA for quantized weights).",
                field="precision",
            )
        if w.finetune == "qlora" and w.precision != "int4":
            raise EstimateError(
                "QLoRA keeps the base weights in 4 bits: choose int4 (or LoRA).",
                field="precision",
            )


def estimate(w: Workload) -> Estimate:
    """Every part in bytes, for the whole job and per GPU, after `validate`."""
    validate(w)
    arch = w.architecture
    params = arch.total_parameters() + head_parameters_change(arch, w)
    unit = compute_bytes(w.precision)
    total = dict.fromkeys(PARTS, 0.0)
    total["weights"] = weight_bytes(arch, w.precision, params=params, quantization=w.quantization)
    trainable = 0
    notes: list[tuple[str, dict]] = [
        (
            "weights",
            {
                "parameters": params,
                "bytes": round(GGUF_BITS[w.quantization] / 8, 3)
                if w.quantization in GGUF_BITS
                else PRECISION_BYTES[w.precision],
                "quantized": w.precision in QUANTIZED and w.quantization not in GGUF_BITS,
            },
        )
    ]
    if w.mode == "inference":
        total["kv_cache"] = kv_cache_bytes(
            arch,
            batch_size=w.batch_size,
            tokens=w.cached_tokens(),
            precision=w.precision,
            kv_cache_dtype=w.kv_cache_dtype,
        )
        total["activations"] = inference_activation_bytes(arch, w)
        notes.append(
            (
                "kv_cache",
                {
                    "batch": w.batch_size,
                    "tokens": w.cached_tokens(),
                    "bits": int(
                        8 * (PRECISION_BYTES[w.kv_cache_dtype] if w.kv_cache_dtype else unit)
                    ),
                    "kv_heads": arch.kv_heads,
                    "windowed": arch.windowed_layers(),
                    "window": arch.sliding_window,
                    "latent": arch.kv_lora_rank + arch.rope_head_dim if arch.kv_lora_rank else 0,
                },
            )
        )
        if w.framework == "llama.cpp":
            notes.append(
                (
                    "llama_cpp",
                    {
                        "context": w.batch_size * w.cached_tokens(),
                        "ubatch": min(LLAMA_CPP_UBATCH, w.batch_size * w.cached_tokens()),
                        "flash": w.resolved("attention") == "flash",
                    },
                )
            )
    else:
        if w.finetune == "full":
            trainable = params
            mixed = w.precision != "fp32"
            total["gradients"] = trainable * PRECISION_BYTES[w.precision]
            master = FP32_MASTER_BYTES if mixed and w.resolved("master_weights") else 0.0
            total["optimizer"] = trainable * (optimizer_state_bytes(w) + master)
            notes.append(("full", {"mixed": mixed and bool(master), "optimizer": w.optimizer}))
        else:
            rank = w.resolved("lora_rank")
            trainable = arch.lora_parameters(rank, w.lora_modules())
            # Adapters train in fp32: their weights, gradients and optimizer states.
            total["weights"] += trainable * 4.0
            total["gradients"] = trainable * 4.0
            total["optimizer"] = trainable * optimizer_state_bytes(w)
            notes.append(
                (
                    "adapters",
                    {
                        "method": w.finetune,
                        "rank": rank,
                        "trainable": trainable,
                        "targets": w.resolved("lora_targets"),
                    },
                )
            )
        total["activations"] = training_activation_bytes(arch, w)
        notes.append(
            (
                "activations",
                {
                    "checkpointing": w.gradient_checkpointing,
                    "attention": w.resolved("attention"),
                    "chunked_loss": bool(w.resolved("chunked_loss")),
                },
            )
        )
    n = w.gpus
    divided = SHARDED_PARTS if w.sharding is None else SHARDINGS[w.sharding]
    per_gpu = {part: total[part] / n if part in divided else total[part] for part in PARTS}
    if n > 1 and w.sharding in ("zero3", "fsdp"):
        # ZeRO-3 and FSDP gather each block's full weights before using it and prefetch the
        # next: two blocks' unsharded weights at a time (Rajbhandari et al. 2020, section 5).
        gathered = 2 * arch.layer_linear_parameters() * PRECISION_BYTES[w.precision]
        per_gpu["weights"] += gathered
    per_gpu_tensors = sum(per_gpu.values())
    per_gpu["overhead"] = CONTEXT_BYTES + FRAGMENTATION * per_gpu_tensors
    total["activations"] = per_gpu["activations"] * n
    total["overhead"] = per_gpu["overhead"] * n
    if n > 1:
        notes.append(("sharded", {"gpus": n, "kind": w.sharding}))
    notes.append(("overhead", {}))
    return Estimate(
        per_gpu=per_gpu,
        total=total,
        parameters=params,
        trainable_parameters=trainable,
        assumptions=tuple(notes),
    )


@dataclass(frozen=True)
class Unstated:
    """An optional input left unsaid whose other value moves the estimate noticeably."""

    name: str
    assumed: str
    alternative: str
    per_gpu_bytes: float  # the estimate with the alternative
    raises: bool  # the alternative needs more memory than what was assumed


def unstated_inputs(w: Workload) -> tuple[Unstated, ...]:
    """The optional inputs left at their default that would move the estimate by MATTERS."""
    base = estimate(w).per_gpu_bytes
    found = []
    for name, alternative in ALTERNATIVES.items():
        if getattr(w, name) is not None or not APPLIES.get(name, lambda _w: True)(w):
            continue
        other = estimate(replace(w, **{name: alternative})).per_gpu_bytes
        if abs(other - base) > MATTERS * base:
            found.append(Unstated(name, str(ASSUMED[name]), str(alternative), other, other > base))
    return tuple(found)


def margin_for(w: Workload, unstated: tuple[Unstated, ...] | None = None) -> float:
    """The measured spread of the estimator for this kind of workload, widened by each input
    that matters and was left at a default that may under-count."""
    if unstated is None:
        unstated = unstated_inputs(w)
    kind = "inference" if w.mode == "inference" else w.finetune
    base = MARGINS.get(kind, MARGINS["training"])
    return round(base + UNSTATED_MARGIN * sum(1 for u in unstated if u.raises), 4)


FITS, MEASURE, DOES_NOT_FIT = "fits", "measure", "does_not_fit"


def with_margin(per_gpu_bytes: float, margin: float) -> float:
    """The memory a card needs for a fit: the estimate plus its margin, at least the floor."""
    return per_gpu_bytes + max(per_gpu_bytes * margin, MARGIN_FLOOR_BYTES)


def verdict(per_gpu_bytes: float, *, memory_gib: float, margin: float) -> str:
    """fits: the estimate plus the margin fits the card; measure: the estimate fits but not
    the margin, so only a trial can tell; does_not_fit: the card is below the estimate."""
    memory = memory_gib * GIB
    if with_margin(per_gpu_bytes, margin) <= memory:
        return FITS
    if per_gpu_bytes <= memory:
        return MEASURE
    return DOES_NOT_FIT


def gpus_needed(
    w: Workload,
    *,
    memory_gib: float,
    margin: float | None = None,
    context_bytes: float = CONTEXT_BYTES,
) -> int | None:
    """The fewest GPUs of `memory_gib` whose device figure plus the margin holds the job."""
    if margin is None:
        margin = margin_for(w)
    for n in range(1, MAX_GPUS + 1):
        per_gpu = estimate(with_gpus(w, n)).device_bytes(context_bytes)
        if with_margin(per_gpu, margin) <= memory_gib * GIB:
            return n
    return None


def fits(per_gpu_bytes: float, *, memory_gib: float, margin: float = MARGIN) -> bool:
    return verdict(per_gpu_bytes, memory_gib=memory_gib, margin=margin) == FITS


def with_gpus(w: Workload, n: int) -> Workload:
    return replace(w, gpus=n)
