"""Parsers of the vendors' GPU tools' output (nvidia-smi, amd-smi, rocm-smi)."""

from __future__ import annotations

import json
import re


def _mib(value, unit):
    """Converts a memory figure in `unit` to MiB (amd-smi's "MB" means MiB)."""
    number = float(value)
    unit = (unit or "MB").strip().upper()
    factors = {"B": 1 / 1048576, "KB": 1 / 1024, "MB": 1, "MIB": 1, "GB": 1024, "GIB": 1024}
    if unit not in factors:
        raise ValueError(f"unknown memory unit {unit!r}")
    return round(number * factors[unit])


def parse_nvidia_smi_csv(text):
    """Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits`.

    One line per GPU, fields separated by ", ", memory in MiB ("[N/A]" when unknown).
    """
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split(",")]
        if len(parts) < 4:
            raise ValueError(f"unexpected nvidia-smi line: {line!r}")
        index, uuid, memory = parts[0], parts[1], parts[-1]
        name = ", ".join(parts[2:-1])
        if not index.isdigit():
            raise ValueError(f"unexpected GPU index in nvidia-smi line: {line!r}")
        gpus.append(
            {
                "index": int(index),
                "uuid": uuid,
                "name": name,
                "memory_mib": int(float(memory)) if re.fullmatch(r"\d+(\.\d+)?", memory) else None,
            }
        )
    return sorted(gpus, key=lambda gpu: gpu["index"])


def _amd_rows(data):
    """amd-smi answers a list per GPU, or (newer releases) `{"gpu_data": [...]}`."""
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        return data["gpu_data"]
    if isinstance(data, list):
        return data
    raise ValueError("unexpected amd-smi JSON shape")


def _amd_memory(vram):
    if not isinstance(vram, dict):
        return None
    for key in ("size", "vram_size"):
        size = vram.get(key)
        if isinstance(size, dict) and "value" in size:
            return _mib(size["value"], size.get("unit"))
    if "vram_size_mb" in vram:
        return _mib(vram["vram_size_mb"], "MB")
    return None


def parse_amd_smi_json(static_text, list_text=None):
    """Parses `amd-smi static --json` (and optionally `amd-smi list --json` for UUIDs).

    Returns (gpus, driver_version).
    """
    listed = {}
    if list_text:
        for row in _amd_rows(json.loads(list_text)):
            listed[int(row["gpu"])] = row
    gpus, driver = [], None
    for row in _amd_rows(json.loads(static_text)):
        index = int(row["gpu"])
        asic = row.get("asic") or {}
        extra = listed.get(index, {})
        bus = row.get("bus") or {}
        drv = row.get("driver") or {}
        driver = driver or drv.get("version") or drv.get("driver_version")
        gpus.append(
            {
                "index": index,
                "uuid": extra.get("uuid") or asic.get("asic_serial") or "",
                "name": asic.get("market_name") or "",
                "memory_mib": _amd_memory(row.get("vram")),
                "bdf": extra.get("bdf") or bus.get("bdf") or "",
            }
        )
    return sorted(gpus, key=lambda gpu: gpu["index"]), driver


def parse_rocm_smi_json(text):
    """Parses `rocm-smi --showproductname --showmeminfo vram --showuniqueid --showbus --json`.

    Cards are keys `card0`, `card1`...; memory is in bytes. Returns (gpus, driver_version).
    """
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("unexpected rocm-smi JSON shape")
    system = data.get("system") if isinstance(data.get("system"), dict) else {}
    cards = {k: v for k, v in data.items() if re.fullmatch(r"card\d+", k)}
    cards.update({k: v for k, v in system.items() if re.fullmatch(r"card\d+", k)})
    gpus, driver = [], system.get("Driver version")
    for key, card in cards.items():
        driver = driver or card.get("Driver version")
        total = card.get("VRAM Total Memory (B)")
        gpus.append(
            {
                "index": int(key[4:]),
                "uuid": card.get("Unique ID", ""),
                "name": card.get("Card series") or card.get("Card model") or "",
                "memory_mib": _mib(total, "B") if total not in (None, "") else None,
                "bdf": card.get("PCI Bus", ""),
            }
        )
    return sorted(gpus, key=lambda gpu: gpu["index"]), driver
