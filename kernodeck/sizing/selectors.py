"""Reads for the sizing page and API: a workload from the customer's input, its estimate, and
how it compares with the active catalog offers (read through the catalog's selectors: the
offer listings give memory, GPUs per unit, prices and the units free right now).

The report's sentences in the reader's language are in `wording`, apart from these reads.
"""

from dataclasses import dataclass, replace
from decimal import Decimal
from math import ceil
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.translation import gettext as _

from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.catalog.models import MAX_UNITS
from kernodeck.core.errors import InvalidInput
from kernodeck.sizing import estimator
from kernodeck.sizing.presets import PRESETS

ARCHITECTURE_FIELDS = (
    "layers",
    "hidden_size",
    "intermediate_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "vocab_size",
)


@dataclass(frozen=True)
class Recommendation:
    slug: str
    gpu: str
    backend: str
    memory_gib: int
    gpus_per_unit: int
    fits_one_gpu: bool
    fits_as_requested: bool
    gpus_needed_if_sharded: int | None
    units_needed_if_sharded: int | None
    within_order_limit: bool
    # fits | measure | does_not_fit, for the job as requested (estimator.verdict).
    verdict: str = estimator.FITS
    margin: float = estimator.MARGIN
    estimate_gib: float = 0.0
    # (input, its alternative value, the verdict with it) for each unstated input that
    # changes this offer's verdict.
    verdict_if: tuple[tuple[str, str, str], ...] = ()
    # The device figure on this card (reserved + this card's context) and that context.
    device_gib: float = 0.0
    context_gib: float = 0.5
    # The price of the choice: units to rent (1 when one GPU holds the job, else what the
    # sharded job needs), units free now, the term and its total.
    units_to_rent: int | None = None
    units_available: int = 0
    days: int | None = None
    unit_price_usd: Decimal | None = None
    total_usd: Decimal | None = None
    configure_url: str = ""
    # vLLM: the share of the card it takes, what of it is left for the KV cache after the
    # weights and activations, and how many sequences of the job's length that holds.
    framework: str | None = None
    usable_gib: float = 0.0
    kv_budget_gib: float | None = None
    sequences_at_once: int | None = None

    @property
    def usable(self) -> bool:
        """Holds the job (one unit, or sharded within one order's limit)."""
        return self.units_to_rent is not None and (
            self.verdict == estimator.FITS or (self.within_order_limit and not self.fits_one_gpu)
        )


@dataclass(frozen=True)
class Suggestion:
    """A change that makes the job fit, its estimate and the cheapest offer it fits."""

    change: str
    per_gpu_gib: float
    gpus: int
    offer: Recommendation | None


@dataclass(frozen=True)
class SizingReport:
    workload: estimator.Workload
    label: str
    estimate: estimator.Estimate
    single_gpu: estimator.Estimate
    recommendations: list[Recommendation]
    margin: float = estimator.MARGIN
    unstated: tuple[estimator.Unstated, ...] = ()
    days: int = 7
    suggestions: tuple[Suggestion, ...] = ()

    @property
    def margin_percent(self) -> int:
        return round(self.margin * 100)

    @property
    def estimate_arg(self) -> str:
        """The per-GPU figure as `--estimate-gib` takes it: digits and a dot, any language."""
        return f"{self.per_gpu_gib:.2f}"

    @property
    def per_gpu_gib(self) -> float:
        return round(self.estimate.per_gpu_bytes / estimator.GIB, 2)

    @property
    def total_gib(self) -> float:
        return round(self.estimate.total_bytes / estimator.GIB, 2)

    @property
    def breakdown(self) -> dict[str, float]:
        return {part: round(v, 2) for part, v in self.estimate.as_gib().items()}

    @property
    def figures(self) -> dict[str, dict]:
        """allocated, reserved and device per GPU (default context), each with its parts."""
        return {
            name: {
                "gib": round(figure["gib"], 2),
                "parts": {part: round(v, 2) for part, v in figure["parts"].items()},
            }
            for name, figure in self.estimate.figures_gib().items()
        }


def architecture_from_input(*, preset: str | None, architecture: dict | None):
    """The preset's published architecture, or the one given; exactly one of the two."""
    if preset and architecture:
        raise InvalidInput(_("give either a preset or an architecture, not both."), field="preset")
    if preset:
        if preset not in PRESETS:
            raise InvalidInput(
                _("unknown preset; choose one of: %(names)s.") % {"names": ", ".join(PRESETS)},
                field="preset",
            )
        return PRESETS[preset]
    if not architecture:
        raise InvalidInput(_("give a preset or an architecture."), field="preset")
    missing = [name for name in ARCHITECTURE_FIELDS if architecture.get(name) is None]
    if missing:
        raise InvalidInput(_("this field is required."), field=f"architecture.{missing[0]}")
    values = {name: architecture[name] for name in ARCHITECTURE_FIELDS}
    experts = architecture.get("experts") or 1
    values.update(
        parameters=architecture.get("parameters") or None,
        experts=experts,
        experts_per_token=architecture.get("experts_per_token") or min(2, experts),
        gated_mlp=architecture.get("gated_mlp", True),
        tied_embeddings=architecture.get("tied_embeddings", False),
        position_embeddings=architecture.get("position_embeddings") or 0,
        sliding_window=architecture.get("sliding_window") or 0,
        sliding_layers=architecture.get("sliding_layers") or 0,
        kv_lora_rank=architecture.get("kv_lora_rank") or 0,
        rope_head_dim=architecture.get("rope_head_dim") or 0,
        moe_intermediate_size=architecture.get("moe_intermediate_size") or 0,
    )
    return _("Custom architecture"), estimator.Architecture(**values)


def _checked(workload: estimator.Workload) -> estimator.Estimate:
    try:
        return estimator.estimate(workload)
    except estimator.EstimateError as error:
        raise InvalidInput(_(error.message), field=error.field) from None


TERMS = (3, 7, 30)


def _recommend(workload, estimate, single, listing, *, margin, unstated, days) -> Recommendation:
    offer = listing.offer
    # What the job may use of each card: all of it, or vLLM's pre-allocated share.
    memory = offer.memory_gib * workload.usable_fraction()
    context = estimator.context_bytes_for(offer.gpu_model)
    # Device figures on this card: the estimate's default context replaced by the card's.
    extra = context - estimator.CONTEXT_BYTES
    device = estimate.device_bytes(context)
    needed = estimator.gpus_needed(
        workload, memory_gib=memory, margin=margin, context_bytes=context
    )
    units = ceil(needed / offer.gpus_per_unit) if needed else None
    verdict = estimator.verdict(device, memory_gib=memory, margin=margin)
    verdict_if = []
    for u in unstated:
        other = estimator.verdict(u.per_gpu_bytes + extra, memory_gib=memory, margin=margin)
        if other != verdict:
            verdict_if.append((u.name, u.alternative, other))
    fits_one = estimator.fits(single.device_bytes(context), memory_gib=memory, margin=margin)
    within = units is not None and units <= MAX_UNITS
    if verdict == estimator.FITS:
        to_rent = ceil(workload.gpus / offer.gpus_per_unit)
    elif needed and within and not fits_one:
        to_rent = units
    else:
        to_rent = None
    unit_price = listing.prices.get(days)
    total = unit_price * to_rent if unit_price is not None and to_rent else None
    query = {"days": days, "units": min(to_rent or 1, MAX_UNITS)}
    kv_budget = sequences = None
    if workload.framework == "vllm":
        budget = memory * estimator.GIB - (device - estimate.per_gpu["kv_cache"])
        kv_budget = round(budget / estimator.GIB, 2)
        per_sequence = estimate.per_gpu["kv_cache"] / workload.batch_size
        sequences = max(0, int(budget // per_sequence)) if per_sequence else None
    return Recommendation(
        slug=offer.slug,
        gpu=offer.gpu_model,
        backend=offer.get_backend_display(),
        memory_gib=offer.memory_gib,
        gpus_per_unit=offer.gpus_per_unit,
        fits_one_gpu=fits_one,
        fits_as_requested=verdict == estimator.FITS,
        gpus_needed_if_sharded=needed,
        units_needed_if_sharded=units,
        within_order_limit=within,
        verdict=verdict,
        margin=margin,
        estimate_gib=round(device / estimator.GIB, 2),
        verdict_if=tuple(verdict_if),
        device_gib=round(device / estimator.GIB, 2),
        context_gib=round(context / estimator.GIB, 2),
        units_to_rent=to_rent,
        units_available=listing.units_available,
        days=days,
        unit_price_usd=unit_price,
        total_usd=total,
        configure_url=reverse("catalog:configure", args=[offer.slug]) + "?" + urlencode(query),
        framework=workload.framework,
        usable_gib=round(memory, 2),
        kv_budget_gib=kv_budget,
        sequences_at_once=sequences,
    )


def _price_order(r: Recommendation):
    # Fits as requested, then fits when sharded, then "measure it", then the rest.
    if r.verdict == estimator.FITS:
        group = 0
    elif r.usable:
        group = 1
    elif r.verdict == estimator.MEASURE:
        group = 2
    else:
        group = 3
    return (
        group,
        r.total_usd is None,
        r.total_usd or 0,
        r.units_available == 0,
        r.memory_gib,
    )


def _options(workload: estimator.Workload, listings, days: int):
    """The changes that could make a job fit that does not: each with its workload."""
    options = []
    if workload.mode == "training":
        if not workload.gradient_checkpointing:
            options.append(
                ("gradient_checkpointing", replace(workload, gradient_checkpointing=True))
            )
        if workload.finetune == "full":
            options.append(("lora", replace(workload, finetune="lora")))
            options.append(
                ("qlora", replace(workload, finetune="qlora", precision="int4", quantization=None))
            )
    elif workload.precision not in ("int4",):
        options.append(("int4", replace(workload, precision="int4", quantization=None)))
    if workload.sequence_length >= 2:
        options.append(
            (
                "shorter_context",
                replace(
                    workload,
                    sequence_length=workload.sequence_length // 2,
                    prompt_length=None,
                    new_tokens=None,
                ),
            )
        )
    if workload.gpus == 1 and listings:
        biggest = max(listings, key=lambda item: item.offer.memory_gib).offer
        n = estimator.gpus_needed(workload, memory_gib=biggest.memory_gib)
        if n and n > 1:
            options.append((f"zero3:{n}", estimator.with_gpus(workload, n)))
    return options


def _suggestions(workload, listings, days) -> tuple[Suggestion, ...]:
    found = []
    for change, changed in _options(workload, listings, days):
        try:
            estimate = estimator.estimate(changed)
        except estimator.EstimateError:
            continue
        margin = estimator.margin_for(changed)
        single = (
            estimate if changed.gpus == 1 else estimator.estimate(estimator.with_gpus(changed, 1))
        )
        unstated = estimator.unstated_inputs(changed)
        best = [
            r
            for r in (
                _recommend(
                    changed, estimate, single, item, margin=margin, unstated=unstated, days=days
                )
                for item in listings
            )
            if r.verdict == estimator.FITS
        ]
        best.sort(key=_price_order)
        found.append(
            Suggestion(
                change=change,
                per_gpu_gib=round(estimate.per_gpu_bytes / estimator.GIB, 2),
                gpus=changed.gpus,
                offer=best[0] if best else None,
            )
        )
    return tuple(found)


def sizing_report(*, label: str, workload: estimator.Workload, days: int = 7) -> SizingReport:
    """The estimate for the workload and, for every active offer, whether and how it fits,
    what renting it costs for `days`, cheapest usable first."""
    if days not in TERMS:
        raise InvalidInput(_("Choose a duration of 3, 7 or 30 days."), field="days")
    estimate = _checked(workload)
    single = estimate if workload.gpus == 1 else _checked(estimator.with_gpus(workload, 1))
    unstated = estimator.unstated_inputs(workload)
    margin = estimator.margin_for(workload, unstated)
    listings = catalog_selectors.offer_listings()
    recommendations = [
        _recommend(workload, estimate, single, item, margin=margin, unstated=unstated, days=days)
        for item in listings
    ]
    recommendations.sort(key=_price_order)
    suggestions = ()
    if listings and not any(r.verdict == estimator.FITS for r in recommendations):
        suggestions = _suggestions(workload, listings, days)
    return SizingReport(
        workload=workload,
        label=label,
        estimate=estimate,
        single_gpu=single,
        recommendations=recommendations,
        margin=margin,
        unstated=unstated,
        days=days,
        suggestions=suggestions,
    )
