"""Reads for the sizing page and API: a workload from the customer's input, its estimate, and
how it compares with the active catalog offers (read through the catalog's selectors: the
offer listings give memory, GPUs per unit, prices and the units free right now).
"""

from dataclasses import dataclass, replace
from decimal import Decimal
from math import ceil
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.formats import number_format
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
    memory = offer.memory_gib
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
    return Recommendation(
        slug=offer.slug,
        gpu=offer.gpu_model,
        backend=offer.get_backend_display(),
        memory_gib=memory,
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


def suggestion_in_words(s: Suggestion) -> str:
    """One sentence per suggestion: the change, its estimate and the cheapest fit."""
    change = s.change
    if change.startswith("zero3:"):
        what = _("Shard with ZeRO-3 or FSDP over %(n)s GPUs") % {"n": s.gpus}
    else:
        what = {
            "gradient_checkpointing": _("Turn on gradient checkpointing"),
            "lora": _("Train LoRA adapters instead of every weight"),
            "qlora": _("Use QLoRA (4-bit base weights)"),
            "int4": _("Serve 4-bit quantized weights"),
            "shorter_context": _("Halve the sequence length"),
        }[change]
    text = _("%(what)s: %(gib)s GiB per GPU.") % {"what": what, "gib": f"{s.per_gpu_gib:.2f}"}
    if s.offer is None:
        return text + " " + _("Still nothing in the catalog fits.")
    values = {"gpu": s.offer.gpu, "units": s.offer.units_to_rent, "days": s.offer.days}
    if s.offer.total_usd is not None:
        values["total"] = number_format(s.offer.total_usd, 2, force_grouping=True)
        return (
            text
            + " "
            + _("Fits %(units)s unit(s) of %(gpu)s: %(total)s USD for %(days)s days.") % values
        )
    return text + " " + _("Fits %(units)s unit(s) of %(gpu)s.") % values


def unstated_in_words(report: SizingReport) -> list[str]:
    """For each input that matters and was left at its default: which, and what it changes."""
    sentences = []
    for u in report.unstated:
        values = {
            "name": u.name,
            "assumed": u.assumed,
            "alternative": u.alternative,
            "gib": f"{u.per_gpu_bytes / estimator.GIB:.2f}",
        }
        if u.raises:
            text = _(
                "%(name)s was left at its default (%(assumed)s). With %(name)s = "
                "%(alternative)s the estimate is %(gib)s GiB per GPU; the margin is wider "
                "because of it. Say which one your program uses."
            )
        else:
            text = _(
                "%(name)s was left at its default (%(assumed)s). With %(name)s = "
                "%(alternative)s the estimate is %(gib)s GiB per GPU."
            )
        sentences.append(text % values)
    return sentences


def assumptions_in_words(estimate: estimator.Estimate) -> list[str]:
    """The estimator's assumptions as sentences in the active language."""
    sentences = []
    for key, values in estimate.assumptions:
        if key == "weights":
            text = _("%(parameters)s parameters at %(bytes)s bytes each.") % {
                "parameters": number_format(values["parameters"], force_grouping=True),
                "bytes": f"{values['bytes']:g}",
            }
            if values["quantized"]:
                text += " " + _(
                    "Quantized formats keep the embeddings and the output head in 16 bits."
                )
        elif key == "kv_cache":
            text = (
                _(
                    "KV cache for %(batch)s sequence(s) of %(tokens)s tokens (prompt plus "
                    "generated tokens), %(bits)s-bit values, %(kv_heads)s key/value heads."
                )
                % values
            )
        elif key == "full":
            text = _("Full fine-tuning: every weight has a gradient and optimizer state.")
            if values["mixed"]:
                text += " " + _("Mixed precision adds an fp32 master copy of the weights.")
        elif key == "adapters":
            if values.get("targets", "all_linear") == "all_linear":
                template = _(
                    "%(method)s: the base weights are frozen; rank-%(rank)s adapters on every "
                    "linear layer train %(trainable)s parameters."
                )
            else:
                template = _(
                    "%(method)s: the base weights are frozen; rank-%(rank)s adapters on "
                    "%(targets)s train %(trainable)s parameters."
                )
            text = template % {
                "targets": values.get("targets"),
                "method": values["method"]
                .upper()
                .replace("QLORA", "QLoRA")
                .replace("LORA", "LoRA"),
                "rank": values["rank"],
                "trainable": number_format(values["trainable"], force_grouping=True),
            }
        elif key == "activations":
            if values.get("attention") == "eager":
                text = _(
                    "Activations kept for the backward pass after Korthikanti et al. (2022), "
                    "with eager attention: every layer keeps its attention scores and softmax."
                )
            else:
                text = _(
                    "Activations kept for the backward pass after Korthikanti et al. (2022), "
                    "with memory-efficient attention."
                )
            if values["checkpointing"]:
                text += " " + _("Gradient checkpointing keeps only each layer's input.")
        elif key == "sharded":
            text = (
                _(
                    "Sharded over %(gpus)s GPUs: weights, gradients, optimizer states and KV "
                    "cache are divided between them; each GPU keeps its own activations and "
                    "context."
                )
                % values
            )
        else:
            text = _(
                "Three figures per GPU: allocated (live tensors, what max_memory_allocated "
                "reports), reserved (plus 5 percent the caching allocator holds, "
                "max_memory_reserved) and device (plus the CUDA/ROCm context, what nvidia-smi "
                "shows: 0.5 GiB unless a card's context was measured, e.g. 1.3 GiB on a V100). "
                "The verdicts use the device figure."
            )
        sentences.append(text)
    return sentences


VERDICT_WORDS = {
    estimator.FITS: _("fits"),
    estimator.MEASURE: _("measure it"),
    estimator.DOES_NOT_FIT: _("does not fit"),
}


def measure_command(estimate_gib: float) -> str:
    """The envcheck command for a trial, with the figure in the form argparse accepts."""
    return f"kernodeck-envcheck --measure train.py --estimate-gib {estimate_gib:.2f}"


def recommendation_note(r: Recommendation) -> str:
    """One sentence per offer: fits, measure it, fits only when sharded, or does not fit."""
    values = {
        "gpu": r.gpu,
        "n": r.gpus_needed_if_sharded,
        "units": r.units_needed_if_sharded,
        "margin": round(r.margin * 100),
        "memory": r.memory_gib,
        "estimate": f"{r.estimate_gib:.2f}",
        "command": measure_command(r.estimate_gib),
    }
    if r.fits_one_gpu and r.verdict == estimator.FITS:
        text = _("Fits on one %(gpu)s with the %(margin)s%% margin.") % values
    elif r.verdict == estimator.MEASURE:
        text = (
            _(
                "The estimate (%(estimate)s GiB) fits one %(gpu)s (%(memory)s GiB) but not with "
                "the %(margin)s%% margin: measure a short trial before you choose it: "
                "%(command)s"
            )
            % values
        )
    elif r.gpus_needed_if_sharded is None:
        text = (
            _(
                "Does not fit %(gpu)s even when sharded: the activations and context alone exceed "
                "one card. Reduce the batch or sequence length, or use gradient checkpointing."
            )
            % values
        )
    else:
        text = (
            _(
                "Needs %(n)s x %(gpu)s (%(units)s unit(s)) and a program that shards the model "
                "across them; GPUs do not pool their memory otherwise."
            )
            % values
        )
        if not r.within_order_limit:
            text += " " + _("That is more units than one order allows (10).")
    if r.gpus_per_unit > 1 and r.units_to_rent:
        text += " " + _("1 unit = %(n)s GPUs.") % {"n": r.gpus_per_unit}
    if r.units_to_rent and r.units_available < r.units_to_rent:
        text += " " + _("Only %(free)s unit(s) free right now.") % {"free": r.units_available}
    for name, alternative, other in r.verdict_if:
        text += " " + _("With %(name)s = %(alternative)s: %(verdict)s.") % {
            "name": name,
            "alternative": alternative,
            "verdict": VERDICT_WORDS[other],
        }
    return text
