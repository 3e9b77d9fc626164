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
    sharding = forms.ChoiceField(
        label=_("How the GPUs share the job"),
        choices=[
            ("", _("Not said (an even split)")),
            ("zero3", "ZeRO-3"),
            ("fsdp", "FSDP"),
            ("zero2", "ZeRO-2"),
            ("tensor_parallel", _("Tensor parallel")),
            ("none", _("Data parallel (each GPU holds everything)")),
        ],
        required=False,
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
    prompt_length = _count(
        _("Prompt length (tokens, inference)"),
        10_485_760,
        required=False,
        help_text=_(
            "Optional: the prefill peak is over the prompt; the cache also holds the "
            "generated tokens."
        ),
    )
    new_tokens = AsciiIntegerField(
        label=_("New tokens (inference)"), min_value=0, max_value=10_485_760, required=False
    )
    quantization = forms.ChoiceField(
        label=_("Quantization format"),
        choices=[
            ("", _("Not said")),
            ("nf4", "NF4 (bitsandbytes)"),
            ("nf4_dq", _("NF4, double quantization")),
            ("gptq", "GPTQ"),
            ("awq", "AWQ"),
            ("int8", "LLM.int8"),
            ("q4_0", "GGUF Q4_0 (llama.cpp)"),
            ("q4_k_m", "GGUF Q4_K_M (llama.cpp)"),
            ("q5_k_m", "GGUF Q5_K_M (llama.cpp)"),
            ("q6_k", "GGUF Q6_K (llama.cpp)"),
            ("q8_0", "GGUF Q8_0 (llama.cpp)"),
        ],
        required=False,
    )
    framework = forms.ChoiceField(
        label=_("Serving framework (inference)"),
        choices=[
            ("", _("Not said (PyTorch / Transformers)")),
            ("vllm", _("vLLM (takes 90% of each card)")),
            ("llama.cpp", _("llama.cpp (GGUF; the cache for the whole context)")),
        ],
        required=False,
    )
    kv_cache_dtype = forms.ChoiceField(
        label=_("KV cache type (inference)"),
        choices=[
            ("", _("Not said (the compute precision)")),
            ("fp16", "fp16"),
            ("bf16", "bf16"),
            ("fp8", "fp8"),
            ("int8", "int8"),
            ("fp32", "fp32"),
        ],
        required=False,
    )
    head = forms.ChoiceField(
        label=_("Head"),
        choices=[("", _("Language model (vocabulary)")), ("classification", _("Classification"))],
        required=False,
    )
    labels = _count(_("Labels (classification)"), 1_000_000, required=False)
    lora_rank = _count(_("LoRA rank (training)"), 4096, required=False)
    lora_targets = forms.ChoiceField(
        label=_("LoRA targets (training)"),
        choices=[
            ("", _("Not said (all linear layers)")),
            ("attention", _("Attention projections")),
            ("all_linear", _("All linear layers")),
        ],
        required=False,
    )
    lora_dropout = forms.ChoiceField(
        label=_("LoRA dropout (training)"),
        choices=[
            ("", _("Not said (no dropout)")),
            ("yes", _("Yes")),
            ("no", _("No")),
        ],
        required=False,
    )
    master_weights = forms.ChoiceField(
        label=_("fp32 master weights (training)"),
        choices=[
            ("", _("Not said (yes, with mixed precision)")),
            ("yes", _("Yes")),
            ("no", _("No: pure bf16")),
        ],
        required=False,
    )
    chunked_loss = forms.ChoiceField(
        label=_("Chunked loss (training)"),
        choices=[
            ("", _("Not said (no: all the logits in fp32)")),
            ("yes", _("Yes (torchtune, Liger)")),
            ("no", _("No")),
        ],
        required=False,
    )
    optimizer_states = forms.ChoiceField(
        label=_("Optimizer state precision (training)"),
        choices=[
            ("", _("Not said (fp32)")),
            ("fp32", "fp32"),
            ("bf16", "bf16"),
            ("8bit", "8-bit"),
        ],
        required=False,
    )
    days = forms.TypedChoiceField(
        label=_("Rental term"),
        choices=[(3, _("3 days")), (7, _("7 days")), (30, _("30 days"))],
        coerce=int,
        initial=7,
        required=False,
        empty_value=7,
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
    experts_per_token = _count(
        _("Experts per token (mixture of experts)"),
        1024,
        required=False,
        help_text=_("Active experts per token (num_experts_per_tok); 2 unless given."),
    )
    moe_intermediate_size = _count(
        _("Expert MLP size (moe_intermediate_size)"),
        1_048_576,
        required=False,
        help_text=_("When the experts are narrower than the dense MLP (DeepSeek, Qwen3 MoE)."),
    )
    sliding_window = _count(
        _("Sliding window (tokens)"),
        10_485_760,
        required=False,
        help_text=_("Windowed layers keep only this many tokens in the KV cache."),
    )
    sliding_layers = _count(
        _("Windowed layers"),
        1024,
        required=False,
        help_text=_("How many layers use the window; empty: all of them (Gemma 3: 5 of 6)."),
    )
    kv_lora_rank = _count(
        _("Latent attention: KV latent size (kv_lora_rank)"),
        131_072,
        required=False,
        help_text=_("Multi-head latent attention (DeepSeek-V2/V3) caches one latent per token."),
    )
    rope_head_dim = _count(
        _("Latent attention: rotary key size (qk_rope_head_dim)"), 4096, required=False
    )

    # Shown only when the workload is training (CSS :has() on the mode select; no script).
    TRAINING = (
        "optimizer",
        "finetune",
        "gradient_checkpointing",
        "lora_rank",
        "lora_targets",
        "lora_dropout",
        "master_weights",
        "optimizer_states",
        "chunked_loss",
    )
    INFERENCE = ("prompt_length", "new_tokens", "kv_cache_dtype", "framework")

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
        "experts_per_token",
        "moe_intermediate_size",
        "sliding_window",
        "sliding_layers",
        "kv_lora_rank",
        "rope_head_dim",
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
        for name in (
            "quantization",
            "head",
            "lora_targets",
            "optimizer_states",
            "kv_cache_dtype",
            "sharding",
            "framework",
        ):
            values[name] = self.cleaned_data.get(name) or None
        for name in ("lora_rank", "labels", "prompt_length", "new_tokens"):
            values[name] = self.cleaned_data.get(name)
        master = self.cleaned_data.get("master_weights")
        values["master_weights"] = {"yes": True, "no": False}.get(master)
        dropout = self.cleaned_data.get("lora_dropout")
        values["lora_dropout"] = {"yes": True, "no": False}.get(dropout)
        chunked = self.cleaned_data.get("chunked_loss")
        values["chunked_loss"] = {"yes": True, "no": False}.get(chunked)
        if values["mode"] == "training":
            values["prompt_length"] = values["new_tokens"] = values["kv_cache_dtype"] = None
            values["framework"] = None
        else:
            values["chunked_loss"] = None
        return values
