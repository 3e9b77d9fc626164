"""What the estimator sizes: the architecture, the workload, and the values each input takes.

The choices every input may take (precisions, modes, optimizers, LoRA targets), the
architecture's parameter count (the count the published model cards give), and the
defaults assumed for the optional inputs with the alternative that would change the picture
most. Pure like the estimator (no Django, no I/O); kept apart from the formulas so the forms,
the API and the estimator read one list of choices.

Optional inputs (None keeps the default behaviour; each is named when left unsaid and it
matters, see `estimator.unstated_inputs`):
- `attention`: eager attention keeps each layer's attention scores and softmax
  (Korthikanti et al.'s 5*a*s/h term, without dropout); SDPA and flash do not.
- `lora_rank` and `lora_targets` (attention: q, k, v, o; all_linear; or module names): the
  adapters are r x (in + out) per targeted matrix (Hu et al. 2021).
- `lora_dropout`: True when the adapters use dropout (LitGPT's default 0.05; PEFT's
  default is none): each adapted module keeps its dropped-out input and its mask for
  backward, one copy per module (PEFT applies the dropout inside every LoRA layer).
- `master_weights`: False for stacks that train in pure bf16 without an fp32 master copy
  (torchtune's default full fine-tune recipes); `optimizer_states` fp32 | bf16 | 8bit: the
  bytes of each AdamW moment (4, 2 or 1; 8-bit after Dettmers et al. 2021).
- `head`: classification (with `labels`) replaces the vocabulary head and its logits by a
  labels-wide head on the last position (sequence classification).
- `prompt_length` and `new_tokens` (inference): the prefill peak is over the prompt; the KV
  cache holds prompt plus generated tokens.
- `chunked_loss` (training): the loss is computed over chunks of the positions, so the fp32
  logits and their gradient exist for one chunk at a time (the 16-bit logits stay whole).
- `framework`: `vllm` pre-allocates a share of each card; `llama.cpp` loads GGUF weights
  (`quantization` q4_0, q4_k_m, q5_k_m, q6_k, q8_0), pre-allocates the KV cache for the
  whole context (sequence_length x batch_size, whatever the prompt), and reserves a compute
  buffer for one physical batch of 512 tokens against that context (its f32 attention scores
  unless attention is flash).
- `sharding` tensor_parallel also splits each layer's inner activations (Q, K, V, the
  attention scores, the MLP's hidden tensors and the vocabulary-parallel logits) over the
  GPUs; the norms' and blocks' inputs stay whole (Korthikanti et al. 2022, eq. 2).
- `quantization`: nf4 (bitsandbytes: one fp32 absmax per 64 weights), nf4_dq (the absmax
  constants quantized again: 0.127 bits per weight, QLoRA section 3), gptq and awq (4 bits
  with an fp16 scale and a 4-bit zero point per group of 128 weights, the default group size
  of Frantar et al. 2022 and Lin et al. 2023), int8 (LLM.int8, one byte per weight).
"""

from __future__ import annotations

from dataclasses import dataclass

PRECISION_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
QUANTIZED = {"fp8", "int8", "int4"}
# How a job over `gpus` GPUs divides its memory: which parts each GPU holds 1/n of.
SHARDINGS = {
    "none": (),  # data parallel: every GPU holds the whole job
    "zero2": ("gradients", "optimizer"),  # DeepSpeed ZeRO-2: weights replicated
    "zero3": ("weights", "kv_cache", "gradients", "optimizer"),
    "fsdp": ("weights", "kv_cache", "gradients", "optimizer"),
    "tensor_parallel": ("weights", "kv_cache", "gradients", "optimizer"),
}
FRAMEWORKS = ("transformers", "vllm", "llama.cpp")
# GGUF weight types (llama.cpp) in bits per weight over the whole file, embeddings and output
# included: the sizes llama-bench reports for Llama-3.1-8B (8.03 B parameters: Q4_0 4.34
# GiB, Q4_K_M 4.58, Q5_K_M 5.33, Q6_K 6.14, Q8_0 7.95 GiB; the _M mixes keep some tensors in
# Q6_K). Q8_0 is exact: 34 bytes per block of 32 weights.
GGUF_BITS = {"q4_0": 4.64, "q4_k_m": 4.90, "q5_k_m": 5.70, "q6_k": 6.57, "q8_0": 8.5}
# llama.cpp's physical batch (--ubatch-size, 512 by default): its compute buffer is reserved
# for that many tokens against the whole context.
LLAMA_CPP_UBATCH = 512
# Chunked cross-entropy (torchtune's CEWithChunkedOutputLoss, 8 chunks): the fp32 copy of the
# logits and its gradient exist for one chunk of the positions at a time.
LOSS_CHUNKS = 8
# vLLM's default --gpu-memory-utilization: the share of each card it takes at start.
VLLM_UTILIZATION = 0.9
KV_CACHE_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8")
QUANTIZATIONS = {"nf4": "int4", "nf4_dq": "int4", "gptq": "int4", "awq": "int4", "int8": "int8"}
# GGUF types set their own bits: they go with framework llama.cpp, whatever the precision.
QUANTIZATIONS.update(dict.fromkeys(GGUF_BITS, "gguf"))
OPTIMIZER_STATE_PRECISIONS = {"fp32": 4.0, "bf16": 2.0, "8bit": 1.0}
LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LORA_TARGETS = {
    "attention": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "all_linear": LORA_MODULES,
}
HEADS = ("lm", "classification")
MODES = ("inference", "training")
OPTIMIZERS = ("adamw", "adamw8bit", "sgd")
FINETUNES = ("full", "lora", "qlora")
FULL_TRAINING_PRECISIONS = ("fp32", "bf16", "fp16")
LORA_RANK = 16
MAX_GPUS = 64
ATTENTIONS = ("eager", "sdpa", "flash")


class EstimateError(ValueError):
    """An input the estimator cannot size; `field` names it, the message says why."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class Architecture:
    """A decoder or encoder transformer as its config file describes it."""

    layers: int
    hidden_size: int
    intermediate_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    parameters: int | None = None
    experts: int = 1
    experts_per_token: int = 1
    gated_mlp: bool = True
    tied_embeddings: bool = False
    # Learned absolute positions (GPT-2, BERT, StarCoder): a table of this many rows; 0 for
    # rotary or ALiBi models, which have none.
    position_embeddings: int = 0
    # Sliding-window attention (Mistral 7B v0.1, Gemma 2/3): layers that attend to the last
    # `sliding_window` tokens only keep that many in the KV cache. `sliding_layers` is how
    # many layers are windowed (0 with a window: all of them; Gemma 3: 5 of every 6).
    sliding_window: int = 0
    sliding_layers: int = 0
    # Multi-head latent attention (DeepSeek-V2/V3): the cache holds one compressed latent of
    # kv_lora_rank values plus the rotary key part (qk_rope_head_dim) per token and layer.
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    # Mixture of experts whose experts are narrower than the dense MLP (DeepSeek, Qwen3 MoE):
    # each expert's MLP width; 0: the experts are intermediate_size wide.
    moe_intermediate_size: int = 0

    def windowed_layers(self) -> int:
        if not self.sliding_window:
            return 0
        return self.sliding_layers or self.layers

    def expert_intermediate(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    def embedding_parameters(self) -> int:
        """Token embeddings, the output head when untied, and learned position tables."""
        tokens = self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)
        return tokens + self.position_embeddings * self.hidden_size

    def layer_linear_parameters(self) -> int:
        """Weights of one block's linear layers (attention and every expert's MLP)."""
        h, d = self.hidden_size, self.head_dim
        attention = 2 * h * self.attention_heads * d + 2 * h * self.kv_heads * d
        width = self.expert_intermediate() if self.experts > 1 else self.intermediate_size
        mlp = (3 if self.gated_mlp else 2) * h * width
        router = h * self.experts if self.experts > 1 else 0
        return attention + mlp * self.experts + router

    def counted_parameters(self) -> int:
        norms = 2 * self.hidden_size * self.layers + self.hidden_size
        return self.embedding_parameters() + self.layers * self.layer_linear_parameters() + norms

    def total_parameters(self) -> int:
        return self.parameters or self.counted_parameters()

    def lora_parameters(self, rank: int = LORA_RANK, targets=LORA_MODULES) -> int:
        """Rank-r adapters (A: in x r, B: r x out) on the targeted linear layers of every
        block (all of them by default)."""
        h, d = self.hidden_size, self.head_dim
        i = self.expert_intermediate() if self.experts > 1 else self.intermediate_size
        sizes = {
            "q_proj": h + self.attention_heads * d,
            "o_proj": h + self.attention_heads * d,
            "k_proj": h + self.kv_heads * d,
            "v_proj": h + self.kv_heads * d,
            "gate_proj": (h + i) * self.experts if self.gated_mlp else 0,
            "up_proj": (h + i) * self.experts,
            "down_proj": (h + i) * self.experts,
        }
        return self.layers * rank * sum(sizes[name] for name in set(targets))


@dataclass(frozen=True)
class Workload:
    architecture: Architecture
    mode: str = "inference"
    precision: str = "bf16"
    batch_size: int = 1
    sequence_length: int = 2048
    optimizer: str = "adamw"
    finetune: str = "full"
    gradient_checkpointing: bool = False
    gpus: int = 1
    # Optional inputs: None means "not said", and the estimate assumes the value in
    # `ASSUMED`; `unstated_inputs` tells whether the other value would change the picture.
    attention: str | None = None
    lora_rank: int | None = None
    lora_targets: str | None = None  # attention | all_linear | comma-separated module names
    lora_dropout: bool | None = None
    master_weights: bool | None = None
    optimizer_states: str | None = None
    head: str | None = None
    labels: int | None = None
    prompt_length: int | None = None
    new_tokens: int | None = None
    quantization: str | None = None
    # The KV cache's element type when it differs from the compute precision (vLLM's
    # --kv-cache-dtype fp8, llama.cpp's q8_0 as int8); None: the compute precision.
    kv_cache_dtype: str | None = None
    # none | zero2 | zero3 | fsdp | tensor_parallel, for gpus > 1 (None: an even split of
    # weights, gradients, states and cache, as before, without ZeRO-3's gather buffers).
    sharding: str | None = None
    # transformers | vllm. vLLM pre-allocates `gpu_memory_utilization` of every card (0.9 by
    # default) whatever the job, and fills what its weights and activations leave with KV
    # cache blocks: the verdict then compares the job with that share, and the report sizes
    # the KV budget (how many sequences fit at once).
    framework: str | None = None
    gpu_memory_utilization: float | None = None
    # Training: the loss in chunks (LOSS_CHUNKS) instead of one fp32 copy of all the logits.
    chunked_loss: bool | None = None

    def tensor_parallel(self) -> int:
        """How many ways each layer's inner activations are split (Megatron-style TP)."""
        return self.gpus if self.sharding == "tensor_parallel" else 1

    def usable_fraction(self) -> float:
        """The share of each card the job may use: vLLM's utilization, else all of it."""
        if self.framework == "vllm":
            return self.gpu_memory_utilization or VLLM_UTILIZATION
        return 1.0

    def resolved(self, name: str):
        value = getattr(self, name)
        return ASSUMED[name] if value is None else value

    def lora_modules(self) -> tuple[str, ...]:
        targets = self.resolved("lora_targets")
        if targets in LORA_TARGETS:
            return LORA_TARGETS[targets]
        return tuple(name.strip() for name in targets.split(",") if name.strip())

    def prefill_tokens(self) -> int:
        """Tokens processed at once: the prompt when given, else the whole sequence."""
        if self.mode == "inference" and self.prompt_length is not None:
            return self.prompt_length
        return self.sequence_length

    def cached_tokens(self) -> int:
        """Tokens the KV cache holds at the end: prompt plus generated, when given.

        llama.cpp allocates the cache for its whole context (sequence_length) at start."""
        if self.mode == "inference" and self.framework == "llama.cpp":
            return max(self.sequence_length, (self.prompt_length or 0) + (self.new_tokens or 0))
        if self.mode == "inference" and self.prompt_length is not None:
            return self.prompt_length + (self.new_tokens or 0)
        return self.sequence_length


# What the estimate assumes for an optional input left unsaid, and the value that would
# change the picture most (checked by `unstated_inputs`, for the modes where it applies).
ASSUMED = {
    "attention": "sdpa",
    "lora_rank": LORA_RANK,
    "lora_targets": "all_linear",
    "lora_dropout": False,
    "sharding": "even",
    "master_weights": True,
    "optimizer_states": "fp32",
    "head": "lm",
    "quantization": None,
    "chunked_loss": False,
}
ALTERNATIVES = {
    "attention": "eager",
    "lora_rank": 64,
    "lora_dropout": True,
    "sharding": "zero2",
    "master_weights": False,
    "optimizer_states": "bf16",
}
APPLIES = {
    "lora_rank": lambda w: w.mode == "training" and w.finetune != "full",
    "lora_dropout": lambda w: w.mode == "training" and w.finetune != "full",
    "sharding": lambda w: w.mode == "training" and w.gpus > 1,
    "master_weights": lambda w: (
        w.mode == "training" and w.finetune == "full" and w.precision != "fp32"
    ),
    "optimizer_states": lambda w: w.mode == "training" and w.optimizer != "adamw8bit",
}
