"""Published architectures of common models, as their config.json files on the Hugging Face
Hub give them (num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
num_key_value_heads, head_dim, vocab_size, tie_word_embeddings), with the parameter counts
the model cards publish. The estimator counts parameters itself when one is not given; the
published count is kept because it includes biases and details the count leaves out.
"""

from kernodeck.sizing.estimator import Architecture

PRESETS: dict[str, tuple[str, Architecture]] = {
    "llama-3.1-8b": (
        "Llama-3.1-8B",
        Architecture(32, 4096, 14336, 32, 8, 128, 128256, parameters=8_030_261_248),
    ),
    "llama-3.1-70b": (
        "Llama-3.1-70B",
        Architecture(80, 8192, 28672, 64, 8, 128, 128256, parameters=70_553_706_496),
    ),
    "mistral-7b": (
        "Mistral-7B",
        Architecture(32, 4096, 14336, 32, 8, 128, 32000, parameters=7_241_732_096),
    ),
    "qwen2.5-7b": (
        "Qwen2.5-7B",
        Architecture(28, 3584, 18944, 28, 4, 128, 152064, parameters=7_615_616_512),
    ),
    "qwen2.5-72b": (
        "Qwen2.5-72B",
        Architecture(80, 8192, 29568, 64, 8, 128, 152064, parameters=72_706_203_648),
    ),
    "gemma-2-9b": (
        "Gemma-2-9B",
        Architecture(
            42, 3584, 14336, 16, 8, 256, 256000, parameters=9_241_705_984, tied_embeddings=True
        ),
    ),
    "mixtral-8x7b": (
        "Mixtral-8x7B",
        Architecture(
            32,
            4096,
            14336,
            32,
            8,
            128,
            32000,
            parameters=46_702_792_704,
            experts=8,
            experts_per_token=2,
        ),
    ),
    "llama-2-7b": (
        "Llama-2-7B",
        Architecture(32, 4096, 11008, 32, 32, 128, 32000, parameters=6_738_415_616),
    ),
    "gpt2": (
        "GPT-2 (124M)",
        Architecture(
            12,
            768,
            3072,
            12,
            12,
            64,
            50257,
            parameters=124_439_808,
            gated_mlp=False,
            tied_embeddings=True,
            position_embeddings=1024,
        ),
    ),
    "bert-base": (
        "BERT-base (uncased)",
        Architecture(
            12,
            768,
            3072,
            12,
            12,
            64,
            30522,
            parameters=109_482_240,
            gated_mlp=False,
            tied_embeddings=True,
            position_embeddings=512,
        ),
    ),
}


def preset_choices() -> list[tuple[str, str]]:
    return [(slug, label) for slug, (label, _arch) in PRESETS.items()]
