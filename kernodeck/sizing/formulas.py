"""The estimator's formulas: the bytes of each part of a workload, and the result they make.

Pure (no Django, no I/O), like the estimator that calls them after validating the input.
Sizes are in bytes here and in GiB (2**30 bytes) in the result's figures.

Formulas and where they come from
---------------------------------
- Parameters, when not given, are counted from the architecture: embeddings (vocabulary x
  hidden, twice when input and output embeddings are not tied, plus learned position
  tables), attention projections
  (hidden x heads x head_dim for Q and O, hidden x kv_heads x head_dim for K and V), the MLP
  (3 x hidden x intermediate for gated SwiGLU/GeGLU blocks, 2 x for plain ones, times the
  experts for a mixture of experts, plus the router) and the norms. This is the count the
  published model cards give (Llama-2-7B: 6,738,415,616).
- Weights = parameters x bytes per parameter (fp32 4, bf16/fp16 2, fp8/int8 1, int4 0.5).
  Weight quantization (fp8; bitsandbytes LLM.int8 and NF4, Dettmers et al. 2022 and 2023)
  leaves the embeddings and the output head in 16 bits and stores one fp32 scale per block of
  64 weights for 4 bits (0.0625 byte per parameter); see the Hugging Face guide "Optimizing
  LLMs for speed and memory" (von Platen, 2023).
- KV cache = 2 (keys and values) x layers x kv_heads x head_dim x bytes per element x tokens
  x batch (the same guide; Shazeer 2019 and Ainslie et al. 2023 for multi-query and grouped-
  query attention, which is why kv_heads, not attention heads, sets its size). The cache is
  kept in the compute precision (16 bits, or 32 for fp32) unless `kv_cache_dtype` says
  otherwise. Sliding-window layers (Jiang et al. 2023, Mistral 7B; Gemma 2 and 3 alternate
  local and global layers) keep at most the window; multi-head latent attention (DeepSeek-V2,
  2024) caches one compressed latent (kv_lora_rank) plus the rotary key (qk_rope_head_dim)
  per token and layer, as vLLM and SGLang store it (Transformers' own implementation caches
  the decompressed keys and values, which is far more).
- Training model states follow ZeRO (Rajbhandari et al. 2020): mixed-precision AdamW keeps
  16-bit weights (2 bytes) and gradients (2) plus fp32 master weights, momentum and variance
  (12): 16 bytes per trained parameter (18 when gradients are accumulated in fp32). 8-bit
  AdamW (Dettmers et al. 2021) stores the two moments in 1 byte each; SGD with momentum keeps
  one fp32 state. LoRA (Hu et al. 2021) and QLoRA (Dettmers et al. 2023) train small rank-r
  adapters on every linear layer of the blocks while the base weights stay frozen: no
  gradients or optimizer states for those.
- Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
  Transformer Models"), whose per-layer figure is s*b*h*(34 + 5*a*s/h) bytes in 16 bits. We
  adapt its terms to current models: the MLP terms use the real intermediate size and gating
  instead of 4h, there are no dropout masks, and memory-efficient attention (FlashAttention,
  PyTorch SDPA) keeps the output and its log-sum-exp instead of the a*s*s score matrices.
  With full recomputation (gradient checkpointing) only each layer's input is kept, plus one
  layer being recomputed. The loss adds the logits (batch x sequence x vocabulary) in 16 bits
  plus an fp32 copy and its gradient.
- Inference activations are transient: one block's live intermediates at a time for the
  whole prompt (no-grad: the residual stream, the normalised input and, in a gated MLP, the
  activation, up projection and their product; see `inference_transient_bytes_per_token`),
  plus the last position's logits in fp32.
- Three figures per GPU, because published peaks use all three: `allocated` is the peak of
  live tensors (what `torch.cuda.max_memory_allocated` reports); `reserved` adds what the
  caching allocator holds beyond them (`max_memory_reserved`), counted as 5 % of the tensors
  for fragmentation and cached blocks; `device` adds the CUDA (or ROCm) context and library
  workspaces (what nvidia-smi shows as "used"), typically 0.3 to 1.3 GiB per GPU depending on
  the card, driver and CUDA version (PyTorch "CUDA semantics" notes). The context is 0.5 GiB
  unless `CONTEXT_GIB_BY_CARD` holds a measured figure for the card (a V100 measured 1.3 GiB,
  issue 25). The verdicts use `device`. Run `kernodeck-envcheck` to measure the context on
  a real machine; its `--measure` reports the same three figures for a trial.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernodeck.sizing.workloads import (
    GGUF_BITS,
    LLAMA_CPP_UBATCH,
    LOSS_CHUNKS,
    OPTIMIZER_STATE_PRECISIONS,
    PRECISION_BYTES,
    QUANTIZED,
    Architecture,
    Workload,
)

GIB = 2**30
# bitsandbytes NF4/FP4 keep one fp32 absmax per block of 64 weights.
INT4_SCALE_BYTES = 4 / 64
# GPTQ and AWQ: an fp16 scale and a packed 4-bit zero point per group of 128 weights.
GROUP128_SCALE_BYTES = (2 + 0.5) / 128
# NF4 with double quantization (QLoRA, Dettmers et al. 2023, section 3): the absmax constants
# are themselves quantized to 8 bits, 0.127 bits per weight instead of 0.5.
NF4_DQ_SCALE_BYTES = 0.127 / 8
MOMENTS = {"adamw": 2, "adamw8bit": 2, "sgd": 1}

# Optimizer bytes per trained parameter, on top of weights and gradients (ZeRO, section 3).
OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw8bit": 2.0, "sgd": 4.0}
FP32_MASTER_BYTES = 4.0

CONTEXT_BYTES = 0.5 * GIB
# Measured contexts (memory used on the card outside PyTorch's allocator right after CUDA
# initialises), by a word of the offer's GPU model; the rest use CONTEXT_BYTES.
CONTEXT_GIB_BY_CARD = {"V100": 1.3}
FRAGMENTATION = 0.05

PARTS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead")
SHARDED_PARTS = ("weights", "kv_cache", "gradients", "optimizer")


@dataclass(frozen=True)
class Estimate:
    """Bytes per part for the whole job and for one GPU, with the assumptions in words."""

    per_gpu: dict[str, float]
    total: dict[str, float]
    parameters: int
    trainable_parameters: int
    # (key, values) pairs; the page and the API put them into words in the reader's language.
    assumptions: tuple[tuple[str, dict], ...] = field(default_factory=tuple)

    @property
    def per_gpu_bytes(self) -> float:
        return sum(self.per_gpu.values())

    @property
    def total_bytes(self) -> float:
        return sum(self.total.values())

    @property
    def tensor_bytes(self) -> float:
        """What torch.cuda.max_memory_allocated would report on one GPU: all but overhead."""
        return self.per_gpu_bytes - self.per_gpu["overhead"]

    @property
    def allocated_bytes(self) -> float:
        """Peak of live tensors on one GPU (max_memory_allocated)."""
        return self.tensor_bytes

    @property
    def allocator_cache_bytes(self) -> float:
        return FRAGMENTATION * self.tensor_bytes

    @property
    def reserved_bytes(self) -> float:
        """What the caching allocator holds on one GPU (max_memory_reserved)."""
        return self.allocated_bytes + self.allocator_cache_bytes

    def device_bytes(self, context_bytes: float = CONTEXT_BYTES) -> float:
        """What the card shows as used (nvidia-smi): reserved plus the context."""
        return self.reserved_bytes + context_bytes

    def figures_gib(self, context_bytes: float = CONTEXT_BYTES) -> dict[str, dict]:
        """The three per-GPU figures, each with its breakdown, in GiB."""
        tensors = {p: self.per_gpu[p] / GIB for p in PARTS if p != "overhead"}
        return {
            "allocated": {"gib": self.allocated_bytes / GIB, "parts": tensors},
            "reserved": {
                "gib": self.reserved_bytes / GIB,
                "parts": {
                    "allocated": self.allocated_bytes / GIB,
                    "allocator_cache": self.allocator_cache_bytes / GIB,
                },
            },
            "device": {
                "gib": self.device_bytes(context_bytes) / GIB,
                "parts": {"reserved": self.reserved_bytes / GIB, "context": context_bytes / GIB},
            },
        }

    def per_gpu_gib(self) -> float:
        return self.per_gpu_bytes / GIB

    def as_gib(self) -> dict[str, float]:
        return {part: self.per_gpu[part] / GIB for part in PARTS}


def weight_bytes(
    arch: Architecture,
    precision: str,
    *,
    params: int | None = None,
    quantization: str | None = None,
) -> float:
    """Weights in memory; quantized formats keep embeddings and the head in 16 bits."""
    params = arch.total_parameters() if params is None else params
    if quantization in GGUF_BITS:
        # llama.cpp's GGUF types quantize every tensor (the average bits include the
        # embeddings and the output kept in a wider type).
        return params * GGUF_BITS[quantization] / 8
    if precision not in QUANTIZED:
        return params * PRECISION_BYTES[precision]
    embeddings = min(arch.embedding_parameters(), params)
    scales = 0.0
    if precision == "int4":
        scales = {
            "gptq": GROUP128_SCALE_BYTES,
            "awq": GROUP128_SCALE_BYTES,
            "nf4_dq": NF4_DQ_SCALE_BYTES,
        }.get(quantization, INT4_SCALE_BYTES)
    per_param = PRECISION_BYTES[precision] + scales
    return (params - embeddings) * per_param + embeddings * 2.0


def head_parameters_change(arch: Architecture, w: Workload) -> int:
    """A classification head replaces the untied vocabulary head by hidden x labels."""
    if w.resolved("head") != "classification":
        return 0
    vocabulary_head = 0 if arch.tied_embeddings else arch.vocab_size * arch.hidden_size
    return arch.hidden_size * (w.labels or 2) - vocabulary_head


def logit_width(arch: Architecture, w: Workload) -> tuple[int, bool]:
    """(logits per position, whether every position has them) for the loss."""
    if w.resolved("head") == "classification":
        return (w.labels or 2), False
    return arch.vocab_size, True


def compute_bytes(precision: str) -> float:
    """Bytes per element of activations and KV cache: fp32 stays fp32, the rest compute in 16."""
    return 4.0 if precision == "fp32" else 2.0


def kv_cache_bytes(
    arch: Architecture,
    *,
    batch_size: int,
    tokens: int,
    precision: str,
    kv_cache_dtype: str | None = None,
) -> float:
    """2 x kv_heads x head_dim values per token and layer (keys and values), or one latent of
    kv_lora_rank + rope_head_dim for multi-head latent attention; windowed layers keep at most
    `sliding_window` tokens."""
    element = PRECISION_BYTES[kv_cache_dtype] if kv_cache_dtype else compute_bytes(precision)
    if arch.kv_lora_rank:
        per_layer_token = arch.kv_lora_rank + arch.rope_head_dim
    else:
        per_layer_token = 2 * arch.kv_heads * arch.head_dim
    windowed = arch.windowed_layers()
    kept = (arch.layers - windowed) * tokens + windowed * min(tokens, arch.sliding_window or 0)
    return per_layer_token * element * kept * batch_size


def layer_activation_bytes_per_token(arch: Architecture, precision: str, tp: int = 1) -> float:
    """Bytes one block keeps for backward per token (Korthikanti et al., adapted; see module).

    Under tensor parallelism over `tp` GPUs each holds 1/tp of Q, K, V, the attention output
    and the MLP's hidden tensors; the norms' inputs and each sub-block's input stay whole
    (Korthikanti et al. 2022, eq. 2: sbh(10 + 24/t + 5as/(ht)), without sequence parallelism).
    """
    unit = compute_bytes(precision) / 2  # the paper counts 16-bit values: 2 bytes each
    h, i = arch.hidden_size, arch.intermediate_size
    q = arch.attention_heads * arch.head_dim
    kv = arch.kv_heads * arch.head_dim
    # Norm inputs (2 x 2h); attention: its input, Q, K, V, and its output (the O input).
    norms = 4 * h
    attention = 2 * h + (2 * q + 4 * kv + 2 * q) / tp
    # MLP: its input, then per active expert the up/gate outputs, activation and product.
    if arch.experts > 1:
        i = arch.expert_intermediate()
    per_expert = (8 if arch.gated_mlp else 4) * i
    mlp = 2 * h + per_expert * max(1, arch.experts_per_token) / tp
    return unit * (norms + attention + mlp)


def eager_score_bytes(arch: Architecture, w: Workload, *, training: bool) -> float:
    """One layer's attention scores when attention is eager (not SDPA or flash).

    Korthikanti et al.'s 5*a*s/h term per s*b*h: the scores (2 bytes), their softmax (2) and
    the dropout mask (1) per head and pair of positions; without dropout, the scores and the
    softmax are kept for backward. At inference, Transformers' eager attention computes the
    softmax in fp32 and casts it back: scores, the fp32 softmax and the cast copy at once.
    """
    unit = compute_bytes(w.precision)
    length = w.prefill_tokens()
    pairs = w.batch_size * arch.attention_heads * length * length / w.tensor_parallel()
    return pairs * (2 * unit if training else 2 * unit + 4.0)


def lora_input_width(arch: Architecture, module: str) -> int:
    """The width of the input a LoRA module reads (hidden, or the attention or MLP inner)."""
    if module == "o_proj":
        return arch.attention_heads * arch.head_dim
    if module == "down_proj":
        return arch.intermediate_size * arch.experts_per_token
    if module == "gate_proj" and not arch.gated_mlp:
        return 0
    return arch.hidden_size * (arch.experts_per_token if module in ("gate_proj", "up_proj") else 1)


def lora_dropout_bytes(arch: Architecture, w: Workload) -> float:
    """With adapter dropout, each adapted module keeps its dropped-out input (compute
    precision) and the 1-byte mask for backward, per token of every layer."""
    if w.finetune == "full" or not w.resolved("lora_dropout"):
        return 0.0
    width = sum(lora_input_width(arch, name) for name in set(w.lora_modules()))
    tokens = w.batch_size * w.sequence_length
    layers = 1 if w.gradient_checkpointing else arch.layers
    return tokens * layers * width * (compute_bytes(w.precision) + 1.0)


def training_activation_bytes(arch: Architecture, w: Workload) -> float:
    tokens = w.batch_size * w.sequence_length
    unit = compute_bytes(w.precision)
    tp = w.tensor_parallel()
    layer = layer_activation_bytes_per_token(arch, w.precision, tp)
    eager = w.resolved("attention") == "eager"
    scores = eager_score_bytes(arch, w, training=True) if eager else 0.0
    if w.gradient_checkpointing:
        # Each block's input is kept; one block at a time is recomputed in full.
        blocks = tokens * (arch.layers * unit * arch.hidden_size + layer) + scores
    else:
        blocks = tokens * arch.layers * layer + arch.layers * scores
    width, every_position = logit_width(arch, w)
    positions = tokens if every_position else w.batch_size
    # The 16-bit logits, their fp32 copy and its gradient; a chunked loss holds the fp32
    # pair for one chunk at a time. A vocabulary-parallel head splits them over TP GPUs.
    fp32_positions = -(-positions // LOSS_CHUNKS) if w.resolved("chunked_loss") else positions
    logits = (positions * width * unit + fp32_positions * width * 8.0) / tp
    return blocks + logits + lora_dropout_bytes(arch, w)


def inference_transient_bytes_per_token(arch: Architecture, precision: str, tp: int = 1) -> float:
    """What one block holds at once per token during a no-grad forward pass.

    Nothing is kept for backward, so each intermediate is freed as soon as the next one
    exists. The residual stream and the normalised input stay alive through the block; in
    the MLP the activation, the up projection and their product are alive together (a gated
    MLP; a plain one holds its two hidden tensors), in attention Q, K and V, their rotated
    copies and the output. The larger of the two is the block's peak.
    """
    h, i = arch.hidden_size, arch.intermediate_size
    q = arch.attention_heads * arch.head_dim
    kv = arch.kv_heads * arch.head_dim
    mlp = 2 * h + (3 if arch.gated_mlp else 2) * i / tp
    attention = 2 * h + (3 * q + 3 * kv) / tp
    return compute_bytes(precision) * max(mlp, attention)


def llama_cpp_compute_bytes(arch: Architecture, w: Workload) -> float:
    """llama.cpp's compute buffer: reserved for one physical batch (512 tokens) against the
    whole context, in f32: one block's intermediates, the attention scores (unless
    FlashAttention is on) and the batch's logits."""
    context = w.batch_size * w.cached_tokens()
    ubatch = min(LLAMA_CPP_UBATCH, context)
    tp = w.tensor_parallel()
    layer = inference_transient_bytes_per_token(arch, "fp32", tp)
    scores = 0.0
    if w.resolved("attention") != "flash":
        scores = ubatch * context * arch.attention_heads / tp * 4.0
    return ubatch * layer + scores + ubatch * logit_width(arch, w)[0] * 4.0


def inference_activation_bytes(arch: Architecture, w: Workload) -> float:
    """The largest transient set during prefill: one block's tensors for the whole prompt."""
    if w.framework == "llama.cpp":
        return llama_cpp_compute_bytes(arch, w)
    tokens = w.batch_size * w.prefill_tokens()
    layer = inference_transient_bytes_per_token(arch, w.precision, w.tensor_parallel())
    logits = w.batch_size * logit_width(arch, w)[0] * 4.0
    scores = eager_score_bytes(arch, w, training=False)
    return tokens * layer + logits + (scores if w.resolved("attention") == "eager" else 0.0)


def optimizer_state_bytes(w: Workload) -> float:
    """Bytes of optimizer state per trained parameter (the moments, without a master copy)."""
    if w.optimizer_states is None:
        return OPTIMIZER_STATE_BYTES[w.optimizer]
    per_moment = OPTIMIZER_STATE_PRECISIONS[w.optimizer_states]
    if w.optimizer == "adamw8bit":
        per_moment = 1.0
    return MOMENTS[w.optimizer] * per_moment


def context_bytes_for(gpu_model: str) -> float:
    """The measured context of a card when one is known, else the usual 0.5 GiB."""
    words = gpu_model.upper().replace("-", " ").split()
    for card, gib in CONTEXT_GIB_BY_CARD.items():
        if card in words:
            return gib * GIB
    return CONTEXT_BYTES
