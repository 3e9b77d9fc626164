"""POST /api/v1/sizing: the memory estimate and the catalog offers that fit. Public."""

from decimal import Decimal
from typing import Annotated, Literal

from django.template.loader import render_to_string
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from kernodeck.core.schemas import InputSchema
from kernodeck.sizing import estimator
from kernodeck.sizing.charts import build_chart
from kernodeck.sizing.presets import PRESETS
from kernodeck.sizing.selectors import architecture_from_input, sizing_report
from kernodeck.sizing.wording import (
    assumptions_in_words,
    measure_command,
    recommendation_note,
    suggestion_in_words,
    unstated_in_words,
)

router = Router(tags=["sizing"])


def _count(maximum: int):
    # strict: JSON numbers only, so "٣", "³" or "12" as strings are refused, not coerced.
    return Annotated[int, Field(strict=True, ge=1, le=maximum)]


class ArchitectureIn(InputSchema):
    layers: _count(1024)
    hidden_size: _count(131_072)
    intermediate_size: _count(1_048_576)
    attention_heads: _count(1024)
    kv_heads: _count(1024)
    head_dim: _count(4096)
    vocab_size: _count(10_000_000)
    parameters: _count(10**13) | None = None
    experts: _count(1024) | None = None
    experts_per_token: _count(1024) | None = None
    gated_mlp: Annotated[bool, Field(strict=True)] = True
    tied_embeddings: Annotated[bool, Field(strict=True)] = False
    position_embeddings: Annotated[int, Field(strict=True, ge=0, le=10_485_760)] = 0
    sliding_window: Annotated[int, Field(strict=True, ge=0, le=10_485_760)] = 0
    sliding_layers: Annotated[int, Field(strict=True, ge=0, le=1024)] = 0
    kv_lora_rank: Annotated[int, Field(strict=True, ge=0, le=131_072)] = 0
    rope_head_dim: Annotated[int, Field(strict=True, ge=0, le=4096)] = 0
    moe_intermediate_size: Annotated[int, Field(strict=True, ge=0, le=1_048_576)] = 0


class SizingIn(InputSchema):
    # Exactly one of `preset` and `architecture` (the estimator refuses none or both).
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["preset"],
                    "properties": {"preset": {"type": "string"}, "architecture": {"type": "null"}},
                },
                {
                    "required": ["architecture"],
                    "properties": {"architecture": {"type": "object"}, "preset": {"type": "null"}},
                },
            ]
        }
    )
    preset: (
        Annotated[str, Field(max_length=40, json_schema_extra={"enum": list(PRESETS)})] | None
    ) = None
    architecture: ArchitectureIn | None = None
    mode: Literal["inference", "training"] = "inference"
    precision: Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"] = "bf16"
    batch_size: _count(65_536) = 1
    sequence_length: _count(10_485_760) = 2048
    optimizer: Literal["adamw", "adamw8bit", "sgd"] = "adamw"
    finetune: Literal["full", "lora", "qlora"] = "full"
    gradient_checkpointing: Annotated[bool, Field(strict=True)] = False
    gpus: _count(estimator.MAX_GPUS) = 1
    attention: Literal["eager", "sdpa", "flash"] | None = None
    lora_rank: _count(4096) | None = None
    lora_targets: Annotated[str, Field(max_length=200)] | None = None
    lora_dropout: Annotated[bool, Field(strict=True)] | None = None
    master_weights: Annotated[bool, Field(strict=True)] | None = None
    optimizer_states: Literal["fp32", "bf16", "8bit"] | None = None
    head: Literal["lm", "classification"] | None = None
    labels: _count(1_000_000) | None = None
    prompt_length: _count(10_485_760) | None = None
    new_tokens: Annotated[int, Field(strict=True, ge=0, le=10_485_760)] | None = None
    quantization: (
        Literal["nf4", "nf4_dq", "gptq", "awq", "int8", "q4_0", "q4_k_m", "q5_k_m", "q6_k", "q8_0"]
        | None
    ) = None
    kv_cache_dtype: Literal["fp32", "bf16", "fp16", "fp8", "int8"] | None = None
    sharding: Literal["none", "zero2", "zero3", "fsdp", "tensor_parallel"] | None = None
    framework: Literal["transformers", "vllm", "llama.cpp"] | None = None
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = None
    chunked_loss: Annotated[bool, Field(strict=True)] | None = None
    days: Literal[3, 7, 30] = 7


class UnstatedOut(Schema):
    input: str
    assumed: str
    alternative: str
    per_gpu_gib_with_alternative: float
    widens_margin: bool
    note: str


class RecommendationOut(Schema):
    offer: str
    gpu: str
    backend: str
    memory_gib: int
    gpus_per_unit: int
    fits_one_gpu: bool
    fits_as_requested: bool
    gpus_needed_if_sharded: int | None
    units_needed_if_sharded: int | None
    verdict: Literal["fits", "measure", "does_not_fit"]
    device_gib: float
    context_gib: float
    units_to_rent: int | None
    units_available: int
    days: int
    unit_price_usd: Decimal | None
    total_usd: Decimal | None
    configure_url: str
    usable_gib: float
    kv_budget_gib: float | None
    sequences_at_once: int | None
    note: str


class SuggestionOut(Schema):
    change: str
    per_gpu_gib: float
    gpus: int
    offer: str | None
    units: int | None
    total_usd: Decimal | None
    configure_url: str | None
    note: str


class FigureOut(Schema):
    gib: float
    parts: dict[str, float]


class SizingOut(Schema):
    model: str
    parameters: int
    trainable_parameters: int
    gpus: int
    per_gpu_gib: float
    allocated_gib: float
    reserved_gib: float
    device_gib: float
    figures: dict[str, FigureOut]
    total_gib: float
    breakdown: dict[str, float]
    margin: float
    unstated_inputs: list[UnstatedOut]
    measure_command: str
    assumptions: list[str]
    recommendations: list[RecommendationOut]
    suggestions: list[SuggestionOut]
    svg: str


def report_out(report) -> dict:
    return {
        "model": report.label,
        "parameters": report.estimate.parameters,
        "trainable_parameters": report.estimate.trainable_parameters,
        "gpus": report.workload.gpus,
        "per_gpu_gib": report.per_gpu_gib,
        "allocated_gib": report.figures["allocated"]["gib"],
        "reserved_gib": report.figures["reserved"]["gib"],
        "device_gib": report.figures["device"]["gib"],
        "figures": report.figures,
        "total_gib": report.total_gib,
        "breakdown": report.breakdown,
        "margin": report.margin,
        "unstated_inputs": [
            {
                "input": u.name,
                "assumed": u.assumed,
                "alternative": u.alternative,
                "per_gpu_gib_with_alternative": round(u.per_gpu_bytes / estimator.GIB, 2),
                "widens_margin": u.raises,
                "note": note,
            }
            for u, note in zip(report.unstated, unstated_in_words(report), strict=True)
        ],
        "measure_command": measure_command(report.per_gpu_gib),
        "assumptions": assumptions_in_words(report.estimate),
        "recommendations": [
            {
                "offer": r.slug,
                "gpu": r.gpu,
                "backend": r.backend,
                "memory_gib": r.memory_gib,
                "gpus_per_unit": r.gpus_per_unit,
                "fits_one_gpu": r.fits_one_gpu,
                "fits_as_requested": r.fits_as_requested,
                "gpus_needed_if_sharded": r.gpus_needed_if_sharded,
                "units_needed_if_sharded": r.units_needed_if_sharded,
                "verdict": r.verdict,
                "device_gib": r.device_gib,
                "context_gib": r.context_gib,
                "units_to_rent": r.units_to_rent,
                "units_available": r.units_available,
                "days": r.days,
                "unit_price_usd": r.unit_price_usd,
                "total_usd": r.total_usd,
                "configure_url": r.configure_url,
                "usable_gib": r.usable_gib,
                "kv_budget_gib": r.kv_budget_gib,
                "sequences_at_once": r.sequences_at_once,
                "note": str(recommendation_note(r)),
            }
            for r in report.recommendations
        ],
        "suggestions": [
            {
                "change": g.change,
                "per_gpu_gib": g.per_gpu_gib,
                "gpus": g.gpus,
                "offer": g.offer.slug if g.offer else None,
                "units": g.offer.units_to_rent if g.offer else None,
                "total_usd": g.offer.total_usd if g.offer else None,
                "configure_url": g.offer.configure_url if g.offer else None,
                "note": str(suggestion_in_words(g)),
            }
            for g in report.suggestions
        ],
        "svg": render_to_string("sizing/_chart.svg", {"chart": build_chart(report)}).strip(),
    }


@router.post("/sizing", auth=None, response=SizingOut)
def sizing(request, payload: SizingIn):
    """Estimate a workload's GPU memory and compare it with every active offer (R21)."""
    data = payload.dict()
    architecture = data.pop("architecture")
    days = data.pop("days")
    label, arch = architecture_from_input(preset=data.pop("preset"), architecture=architecture)
    workload = estimator.Workload(arch, **data)
    return report_out(sizing_report(label=label, workload=workload, days=days))
