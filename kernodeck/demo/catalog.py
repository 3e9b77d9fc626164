"""The demo catalog: ten GPUs at 2026 on-demand market rates (USD per GPU-hour).

Unit prices derive from the hourly rate: 24 h x days x GPUs per unit, with 3 % off for
7 days and 15 % off for 30 days, rounded to the cent.
"""

from decimal import Decimal

from django.utils.translation import gettext_noop as N_

from kernodeck.core.money import usd

TERM_FACTORS = {3: Decimal("1.00"), 7: Decimal("0.97"), 30: Decimal("0.85")}
ALL = ["python", "pytorch", "notebook", "inference"]

# slug, model, vendor, backend, GiB per GPU, GPUs per unit, USD per GPU-hour, fleet units,
# preparations, description. The descriptions are stored in English and are message ids:
# the catalog page shows them through the catalogue (Spanish in kernodeck/locale), while an
# operator's own description, not in the catalogue, shows as written.
OFFERS = [
    (
        "rtx-4090",
        "RTX 4090 24 GB",
        "nvidia",
        "cuda",
        24,
        1,
        "0.45",
        24,
        ALL,
        N_("Consumer Ada card: fine-tuning small models, image generation, inference."),
    ),
    (
        "rtx-5090",
        "RTX 5090 32 GB",
        "nvidia",
        "cuda",
        32,
        1,
        "0.75",
        16,
        ALL,
        N_("Blackwell consumer card with 32 GB: larger LoRA runs and fast inference."),
    ),
    (
        "l40s",
        "L40S 48 GB",
        "nvidia",
        "cuda",
        48,
        1,
        "0.95",
        12,
        ALL,
        N_("Data-centre Ada with 48 GB: inference serving and mid-size fine-tuning."),
    ),
    (
        "rtx-pro-6000",
        "RTX PRO 6000 Blackwell 96 GB",
        "nvidia",
        "cuda",
        96,
        1,
        "1.45",
        8,
        ALL,
        N_("96 GB on one card: 70B-class inference with quantisation."),
    ),
    (
        "a100-80gb",
        "A100 80 GB",
        "nvidia",
        "cuda",
        80,
        1,
        "1.35",
        12,
        ALL,
        N_("The proven Ampere workhorse for training and inference."),
    ),
    (
        "h100-80gb",
        "H100 80 GB",
        "nvidia",
        "cuda",
        80,
        1,
        "2.25",
        16,
        ALL,
        N_("Hopper with FP8: training and high-throughput inference."),
    ),
    (
        "h200-141gb",
        "H200 141 GB",
        "nvidia",
        "cuda",
        141,
        1,
        "3.10",
        8,
        ALL,
        N_("Hopper with 141 GB HBM3e: long contexts and large KV caches."),
    ),
    (
        "b200-180gb",
        "B200 180 GB",
        "nvidia",
        "cuda",
        180,
        2,
        "6.50",
        4,
        ALL,
        N_("Blackwell: each unit holds two B200 GPUs."),
    ),
    (
        "mi300x-192gb",
        "AMD MI300X 192 GB",
        "amd",
        "rocm",
        192,
        1,
        "2.40",
        6,
        ["python", "pytorch", "inference"],
        N_("192 GB per GPU on ROCm: very large models on one card."),
    ),
    (
        "mi325x-256gb",
        "AMD MI325X 256 GB",
        "amd",
        "rocm",
        256,
        1,
        "2.95",
        4,
        ["python", "pytorch"],
        N_("256 GB HBM3e per GPU on ROCm."),
    ),
]


def unit_prices(gpu_hour: Decimal, gpus_per_unit: int) -> dict[int, Decimal]:
    return {
        days: usd(gpu_hour * 24 * days * gpus_per_unit * factor)
        for days, factor in TERM_FACTORS.items()
    }


def demo_offers():
    for order, row in enumerate(OFFERS):
        slug, model, vendor, backend, gib, per_unit, hourly, fleet, preps, text = row
        yield {
            "slug": slug,
            "gpu_model": model,
            "vendor": vendor,
            "backend": backend,
            "memory_gib": gib,
            "gpus_per_unit": per_unit,
            "fleet_units": fleet,
            "preparations": list(preps),
            "description": text,
            "sort_order": order,
            "prices": unit_prices(Decimal(hourly), per_unit),
        }
