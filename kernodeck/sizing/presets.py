"""Published architectures of current open models, each with the config.json values it came
from (the Hugging Face repository named beside it; Gemma 3's values sit under its
`text_config`). `architecture_from_config` turns those values into the estimator's
Architecture, so what the estimate uses is exactly what the file says: num_hidden_layers,
hidden_size, intermediate_size, num_attention_heads, num_key_value_heads, head_dim (when the
file has none: hidden_size / num_attention_heads), vocab_size, tie_word_embeddings, the
mixture-of-experts counts (num_local_experts or num_experts or n_routed_experts,
num_experts_per_tok, moe_intermediate_size), sliding_window with its layer pattern, and the
latent-attention sizes (kv_lora_rank, qk_rope_head_dim). A key starting with "_" is not in
the file: it is what the model's code fixes (Gemma 2 alternates windowed and global layers).
Whether a framework keeps only the window in its cache depends on its version (vLLM does;
Transformers does since its per-layer caches); the estimate assumes it does.

The parameter count is the one the model card publishes where it gives an exact one (it
includes biases and details the estimator's count leaves out); otherwise the estimator counts
from these values. DeepSeek-V3's count is the card's rounded 671B (main model without the
multi-token-prediction module): its latent attention, shared expert and three dense layers
are more than the count from these fields describes.
"""

from kernodeck.sizing.estimator import Architecture

# slug: (label, Hugging Face repository, config.json values, published parameter count)
CONFIGS: dict[str, tuple[str, str, dict, int | None]] = {
    "llama-3.1-8b": (
        "Llama-3.1-8B",
        "meta-llama/Llama-3.1-8B",
        {
            "num_hidden_layers": 32,
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
            "tie_word_embeddings": False,
        },
        8_030_261_248,
    ),
    "llama-3.1-70b": (
        "Llama-3.1-70B",
        "meta-llama/Llama-3.1-70B",
        {
            "num_hidden_layers": 80,
            "hidden_size": 8192,
            "intermediate_size": 28672,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
            "tie_word_embeddings": False,
        },
        70_553_706_496,
    ),
    "llama-3.2-1b": (
        "Llama-3.2-1B",
        "meta-llama/Llama-3.2-1B",
        {
            "num_hidden_layers": 16,
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "vocab_size": 128256,
            "tie_word_embeddings": True,
        },
        None,
    ),
    "llama-3.2-3b": (
        "Llama-3.2-3B",
        "meta-llama/Llama-3.2-3B",
        {
            "num_hidden_layers": 28,
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "num_attention_heads": 24,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 128256,
            "tie_word_embeddings": True,
        },
        None,
    ),
    "mistral-7b": (
        "Mistral-7B (v0.1)",
        "mistralai/Mistral-7B-v0.1",
        {
            "num_hidden_layers": 32,
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 32000,
            "tie_word_embeddings": False,
            "sliding_window": 4096,
        },
        7_241_732_096,
    ),
    "mixtral-8x7b": (
        "Mixtral-8x7B",
        "mistralai/Mixtral-8x7B-v0.1",
        {
            "num_hidden_layers": 32,
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 32000,
            "tie_word_embeddings": False,
            "num_local_experts": 8,
            "num_experts_per_tok": 2,
        },
        46_702_792_704,
    ),
    "qwen2.5-7b": (
        "Qwen2.5-7B",
        "Qwen/Qwen2.5-7B",
        {
            "num_hidden_layers": 28,
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
        },
        7_615_616_512,
    ),
    "qwen2.5-72b": (
        "Qwen2.5-72B",
        "Qwen/Qwen2.5-72B",
        {
            "num_hidden_layers": 80,
            "hidden_size": 8192,
            "intermediate_size": 29568,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "vocab_size": 152064,
            "tie_word_embeddings": False,
        },
        72_706_203_648,
    ),
    "qwen3-8b": (
        "Qwen3-8B",
        "Qwen/Qwen3-8B",
        {
            "num_hidden_layers": 36,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
        },
        None,
    ),
    "qwen3-32b": (
        "Qwen3-32B",
        "Qwen/Qwen3-32B",
        {
            "num_hidden_layers": 64,
            "hidden_size": 5120,
            "intermediate_size": 25600,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
        },
        None,
    ),
    "qwen3-30b-a3b": (
        "Qwen3-30B-A3B (MoE)",
        "Qwen/Qwen3-30B-A3B",
        {
            "num_hidden_layers": 48,
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "vocab_size": 151936,
            "tie_word_embeddings": False,
            "num_experts": 128,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 768,
        },
        None,
    ),
    "gemma-2-9b": (
        "Gemma-2-9B",
        "google/gemma-2-9b",
        {
            "num_hidden_layers": 42,
            "hidden_size": 3584,
            "intermediate_size": 14336,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 256,
            "vocab_size": 256000,
            "tie_word_embeddings": True,
            "sliding_window": 4096,
            # Not a config.json key: Gemma 2's modelling code alternates local (windowed)
            # and global layers.
            "_sliding_window_pattern": 2,
        },
        9_241_705_984,
    ),
    "gemma-3-27b": (
        "Gemma-3-27B",
        "google/gemma-3-27b-pt (text_config)",
        {
            "num_hidden_layers": 62,
            "hidden_size": 5376,
            "intermediate_size": 21504,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "vocab_size": 262208,
            "tie_word_embeddings": True,
            "sliding_window": 1024,
            "sliding_window_pattern": 6,
        },
        None,
    ),
    "phi-4": (
        "Phi-4 (14B)",
        "microsoft/phi-4",
        {
            "num_hidden_layers": 40,
            "hidden_size": 5120,
            "intermediate_size": 17920,
            "num_attention_heads": 40,
            "num_key_value_heads": 10,
            "vocab_size": 100352,
            "tie_word_embeddings": False,
        },
        None,
    ),
    "phi-3-mini": (
        "Phi-3-mini (3.8B)",
        "microsoft/Phi-3-mini-4k-instruct",
        {
            "num_hidden_layers": 32,
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "vocab_size": 32064,
            "tie_word_embeddings": False,
        },
        None,
    ),
    "deepseek-v3": (
        "DeepSeek-V3 (671B MoE)",
        "deepseek-ai/DeepSeek-V3",
        {
            "num_hidden_layers": 61,
            "hidden_size": 7168,
            "intermediate_size": 18432,
            "num_attention_heads": 128,
            "num_key_value_heads": 128,
            # q and k heads are qk_nope_head_dim + qk_rope_head_dim = 128 + 64 wide.
            "head_dim": 192,
            "vocab_size": 129280,
            "tie_word_embeddings": False,
            "n_routed_experts": 256,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 2048,
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
        },
        671_000_000_000,
    ),
    "llama-2-7b": (
        "Llama-2-7B",
        "meta-llama/Llama-2-7b-hf",
        {
            "num_hidden_layers": 32,
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "vocab_size": 32000,
            "tie_word_embeddings": False,
        },
        6_738_415_616,
    ),
    "gpt2": (
        "GPT-2 (124M)",
        "openai-community/gpt2",
        {
            "model_type": "gpt2",
            "n_layer": 12,
            "n_embd": 768,
            "n_head": 12,
            "n_inner": None,
            "n_positions": 1024,
            "vocab_size": 50257,
            "tie_word_embeddings": True,
        },
        124_439_808,
    ),
    "bert-base": (
        "BERT-base (uncased)",
        "google-bert/bert-base-uncased",
        {
            "model_type": "bert",
            "num_hidden_layers": 12,
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_attention_heads": 12,
            "max_position_embeddings": 512,
            "vocab_size": 30522,
            "tie_word_embeddings": True,
        },
        109_482_240,
    ),
}

# Models whose MLP is plain (two matrices, GELU), not gated.
PLAIN_MLP = ("gpt2", "bert")


def architecture_from_config(config: dict, parameters: int | None = None) -> Architecture:
    """The estimator's Architecture from config.json values (Llama-style or GPT-2 names)."""
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    hidden = config.get("hidden_size", config.get("n_embd"))
    heads = config.get("num_attention_heads", config.get("n_head"))
    intermediate = config.get("intermediate_size", config.get("n_inner")) or 4 * hidden
    plain = config.get("model_type") in PLAIN_MLP
    experts = (
        config.get("num_local_experts")
        or config.get("num_experts")
        or config.get("n_routed_experts")
        or 1
    )
    window = config.get("sliding_window") or 0
    pattern = config.get("sliding_window_pattern") or config.get("_sliding_window_pattern")
    # With a pattern of p, every p-th layer is global and the others are windowed.
    sliding_layers = layers - layers // pattern if window and pattern else 0
    return Architecture(
        layers=layers,
        hidden_size=hidden,
        intermediate_size=intermediate,
        attention_heads=heads,
        kv_heads=config.get("num_key_value_heads") or heads,
        head_dim=config.get("head_dim") or hidden // heads,
        vocab_size=config["vocab_size"],
        parameters=parameters,
        experts=experts,
        experts_per_token=config.get("num_experts_per_tok", 1) if experts > 1 else 1,
        gated_mlp=not plain,
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
        position_embeddings=(config.get("n_positions") or config.get("max_position_embeddings"))
        if plain
        else 0,
        sliding_window=window,
        sliding_layers=sliding_layers,
        kv_lora_rank=config.get("kv_lora_rank") or 0,
        rope_head_dim=config.get("qk_rope_head_dim") or 0,
        moe_intermediate_size=config.get("moe_intermediate_size") or 0,
    )


PRESETS: dict[str, tuple[str, Architecture]] = {
    slug: (label, architecture_from_config(config, parameters))
    for slug, (label, _repo, config, parameters) in CONFIGS.items()
}


def preset_choices() -> list[tuple[str, str]]:
    return [(slug, label) for slug, (label, _arch) in PRESETS.items()]
