"""The sizing page's form (GET: the result is a link one can share)."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from kernodeck.sizing import estimator
from kernodeck.sizing.presets import preset_choices

CUSTOM = "custom"


class AsciiIntegerField(forms.IntegerField):
    """Django's IntegerField takes int("٣") == 3; a size typed with other digits is refused."""

    def to_python(self, value):
        if isinstance(value, str) and value.strip() and not value.strip().isascii():
            raise ValidationError(_("Enter a whole number using the digits 0-9."), code="invalid")
        return super().to_python(value)


def _count(label, maximum, *, required=True, initial=None, help_text=""):
    return AsciiIntegerField(
        label=label,
        min_value=1,
        max_value=maximum,
        required=required,
        initial=initial,
        help_text=help_text,
    )


class SizingForm(forms.Form):
    preset = forms.ChoiceField(
        label=_("Model"),
        choices=[*preset_choices(), (CUSTOM, _("Other: give its architecture below"))],
        initial="llama-3.1-8b",
    )
    mode = forms.ChoiceField(
        label=_("Workload"), choices=[("inference", _("Inference")), ("training", _("Training"))]
    )
    precision = forms.ChoiceField(
        label=_("Precision"),
        choices=[(p, p) for p in estimator.PRECISION_BYTES],
        initial="bf16",
    )
    batch_size = _count(_("Batch size (sequences per step)"), 65_536, initial=1)
    sequence_length = _count(
        _("Sequence length (tokens)"),
        10_485_760,
        initial=2048,
        help_text=_("For inference: prompt plus generated tokens."),
    )
    optimizer = forms.ChoiceField(
        label=_("Optimizer (training)"),
        choices=[("adamw", "AdamW"), ("adamw8bit", "AdamW 8-bit"), ("sgd", _("SGD (momentum)"))],
    )
    finetune = forms.ChoiceField(
        label=_("Fine-tuning (training)"),
        choices=[("full", _("Full")), ("lora", "LoRA"), ("qlora", "QLoRA")],
    )
    gradient_checkpointing = forms.BooleanField(
        label=_("Gradient checkpointing (training)"), required=False
    )
    gpus = _count(
        _("GPUs the program shards over"),
        estimator.MAX_GPUS,
        initial=1,
        help_text=_(
            "Leave 1 unless your program splits the model (FSDP, ZeRO-3, tensor parallel)."
        ),
    )
    attention = forms.ChoiceField(
        label=_("Attention implementation"),
        choices=[
            ("", _("Not sure (assume SDPA or flash)")),
            ("sdpa", "SDPA"),
            ("flash", "FlashAttention"),
            ("eager", _("Eager")),
        ],
        required=False,
        help_text=_("Eager attention keeps every attention score in memory."),
    )
    layers = _count(_("Layers"), 1024, required=False)
    hidden_size = _count(_("Hidden size"), 131_072, required=False)
    intermediate_size = _count(_("Intermediate (MLP) size"), 1_048_576, required=False)
    attention_heads = _count(_("Attention heads"), 1024, required=False)
    kv_heads = _count(_("Key/value heads"), 1024, required=False)
    head_dim = _count(_("Head dimension"), 4096, required=False)
    vocab_size = _count(_("Vocabulary size"), 10_000_000, required=False)
    parameters = _count(_("Parameters (optional)"), 10**13, required=False)
    experts = _count(_("Experts (optional, mixture of experts)"), 1024, required=False)

    # Shown only when the workload is training (CSS :has() on the mode select; no script).
    TRAINING = ("optimizer", "finetune", "gradient_checkpointing")

    ARCHITECTURE = (
        "layers",
        "hidden_size",
        "intermediate_size",
        "attention_heads",
        "kv_heads",
        "head_dim",
        "vocab_size",
        "parameters",
        "experts",
    )

    def chosen_architecture(self) -> dict | None:
        if self.cleaned_data["preset"] != CUSTOM:
            return None
        return {name: self.cleaned_data.get(name) for name in self.ARCHITECTURE}

    def chosen_preset(self) -> str | None:
        preset = self.cleaned_data["preset"]
        return None if preset == CUSTOM else preset

    def workload_values(self) -> dict:
        names = ("mode", "precision", "batch_size", "sequence_length", "optimizer", "finetune")
        values = {name: self.cleaned_data[name] for name in names}
        values["gradient_checkpointing"] = self.cleaned_data["gradient_checkpointing"]
        values["gpus"] = self.cleaned_data["gpus"]
        values["attention"] = self.cleaned_data.get("attention") or None
        return values
