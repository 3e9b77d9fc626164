"""The sizing report in words: one sentence per offer, suggestion, unstated input and
assumption, in the active language, for the page and the API alike.

Apart from the selectors because it reads nothing: it only puts the report's figures (see
`selectors.SizingReport`) into gettext's sentences.
"""

from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.core.money import money_figure
from kernodeck.sizing import estimator
from kernodeck.sizing.selectors import Recommendation, SizingReport, Suggestion


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
        values["total"] = money_figure(s.offer.total_usd)
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
            if values.get("windowed"):
                text += " " + _(
                    "%(windowed)s layers attend to a sliding window and keep at most "
                    "%(window)s tokens each."
                ) % {"windowed": values["windowed"], "window": values["window"]}
            if values.get("latent"):
                text += " " + _(
                    "Latent attention: one compressed latent of %(latent)s values per token "
                    "and layer, as vLLM and SGLang cache it."
                ) % {"latent": values["latent"]}
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
            if values.get("chunked_loss"):
                text += " " + _(
                    "The loss runs in chunks: the fp32 logits and their gradient exist for an "
                    "eighth of the positions at a time."
                )
        elif key == "llama_cpp":
            text = _(
                "llama.cpp allocates the KV cache for its whole context (%(context)s tokens) "
                "when it starts, and a compute buffer for a batch of %(ubatch)s tokens against "
                "that context."
            ) % {
                "context": number_format(values["context"], force_grouping=True),
                "ubatch": values["ubatch"],
            }
            if not values["flash"]:
                text += " " + _(
                    "Without FlashAttention (-fa) that buffer holds the batch's f32 attention "
                    "scores."
                )
        elif key == "sharded":
            kind = values.get("kind")
            if kind == "none":
                text = (
                    _("Data parallel over %(gpus)s GPUs: each GPU holds the whole job.") % values
                )
            elif kind == "zero2":
                text = (
                    _(
                        "ZeRO-2 over %(gpus)s GPUs: gradients and optimizer states are divided "
                        "between them; each GPU keeps all the weights, its activations "
                        "and context."
                    )
                    % values
                )
            else:
                text = (
                    _(
                        "Sharded over %(gpus)s GPUs: weights, gradients, optimizer states and "
                        "KV cache are divided between them; each GPU keeps its own activations "
                        "and context."
                    )
                    % values
                )
                if kind in ("zero3", "fsdp"):
                    text += " " + _(
                        "ZeRO-3 and FSDP also gather two blocks' full weights at a time."
                    )
                if kind == "tensor_parallel":
                    text += " " + _(
                        "Tensor parallelism also splits each layer's inner activations (Q, K, "
                        "V, the attention scores, the MLP and the logits); the blocks' inputs "
                        "stay whole."
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


# Lazy: translated in the reader's language when used, not in the one active at import.
VERDICT_WORDS = {
    estimator.FITS: gettext_lazy("fits"),
    estimator.MEASURE: gettext_lazy("measure it"),
    estimator.DOES_NOT_FIT: gettext_lazy("does not fit"),
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
    if r.framework == "vllm":
        shares = {
            "usable": f"{r.usable_gib:.2f}",
            "budget": f"{max(r.kv_budget_gib or 0.0, 0.0):.2f}",
            "sequences": r.sequences_at_once or 0,
        }
        if r.kv_budget_gib is not None and r.kv_budget_gib > 0:
            text += (
                " "
                + _(
                    "vLLM takes %(usable)s GiB of each card whatever the job; after the weights "
                    "and activations, %(budget)s GiB of it is KV cache: about %(sequences)s "
                    "sequence(s) of this length at once."
                )
                % shares
            )
        else:
            text += (
                " "
                + _(
                    "vLLM takes %(usable)s GiB of each card whatever the job, and the weights and "
                    "activations leave none of it for the KV cache."
                )
                % shares
            )
    if r.gpus_per_unit > 1 and r.units_to_rent:
        text += " " + _("1 unit = %(n)s GPUs.") % {"n": r.gpus_per_unit}
    if r.units_to_rent and r.units_available < r.units_to_rent:
        text += " " + _("Only %(free)s unit(s) free right now.") % {"free": r.units_available}
    for name, alternative, other in r.verdict_if:
        text += " " + _("With %(name)s = %(alternative)s: %(verdict)s.") % {
            "name": name,
            "alternative": alternative,
            "verdict": str(VERDICT_WORDS[other]),
        }
    return text
