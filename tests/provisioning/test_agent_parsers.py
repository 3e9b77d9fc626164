"""The agent's parsers on the output shapes the vendors' tools document.

The samples follow the documented formats: `nvidia-smi --query-gpu=... --format=csv,
noheader,nounits` (one line per GPU, ", " between fields, MiB without unit), `amd-smi
static --json` in both its list form (ROCm 6.x) and its `{"gpu_data": [...]}` form (ROCm 6.4
and later), `amd-smi list --json`, and `rocm-smi ... --json` (cards as `card0`, bytes as
strings, the driver under `system`).
"""

import json

import pytest

from tests.provisioning.agent_loader import load_agent

agent = load_agent()

NVIDIA_H100_X2 = (
    "0, GPU-5b7c1f0e-3a1d-4c7e-9f52-0d2c6b8e1a47, NVIDIA H100 80GB HBM3, 81559\n"
    "1, GPU-e41a9d3b-77c2-4b8f-a0d6-5f3e2c1b9a08, NVIDIA H100 80GB HBM3, 81559\n"
)


def test_nvidia_csv_gives_index_uuid_name_and_mib():
    assert agent.parse_nvidia_smi_csv(NVIDIA_H100_X2) == [
        {
            "index": 0,
            "uuid": "GPU-5b7c1f0e-3a1d-4c7e-9f52-0d2c6b8e1a47",
            "name": "NVIDIA H100 80GB HBM3",
            "memory_mib": 81559,
        },
        {
            "index": 1,
            "uuid": "GPU-e41a9d3b-77c2-4b8f-a0d6-5f3e2c1b9a08",
            "name": "NVIDIA H100 80GB HBM3",
            "memory_mib": 81559,
        },
    ]


def test_nvidia_csv_sorts_by_index_skips_blank_lines_and_keeps_unknown_memory_empty():
    text = "\n1, GPU-bbbb, NVIDIA B200, [N/A]\n0, GPU-aaaa, NVIDIA B200, 183359\n\n"
    gpus = agent.parse_nvidia_smi_csv(text)
    assert [(g["index"], g["memory_mib"]) for g in gpus] == [(0, 183359), (1, None)]


def test_nvidia_csv_keeps_a_name_with_a_comma_whole():
    gpus = agent.parse_nvidia_smi_csv("0, GPU-aaaa, Tesla V100-SXM2-16GB, rev 2, 16160\n")
    assert gpus[0]["name"] == "Tesla V100-SXM2-16GB, rev 2"
    assert gpus[0]["memory_mib"] == 16160


@pytest.mark.parametrize(
    "text",
    ["0, GPU-aaaa, 81559\n", "zero, GPU-aaaa, NVIDIA H100, 81559\n", "NVIDIA-SMI has failed\n"],
)
def test_nvidia_csv_refuses_what_is_not_the_documented_format(text):
    with pytest.raises(ValueError):
        agent.parse_nvidia_smi_csv(text)


AMD_STATIC_GPU_DATA = {
    "gpu_data": [
        {
            "gpu": 0,
            "asic": {
                "market_name": "AMD Instinct MI300X",
                "vendor_id": "0x1002",
                "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
                "device_id": "0x74a1",
                "asic_serial": "0x8D2A61C7E3B40F19",
                "target_graphics_version": "gfx942",
            },
            "bus": {"bdf": "0000:0c:00.0", "max_pcie_width": 16},
            "vram": {"type": "HBM3", "vendor": "HYNIX", "size": {"value": 196592, "unit": "MB"}},
            "driver": {"name": "amdgpu", "version": "6.10.5"},
        },
        {
            "gpu": 1,
            "asic": {"market_name": "AMD Instinct MI300X", "asic_serial": "0x3E91B0C24A7D5F68"},
            "bus": {"bdf": "0000:22:00.0"},
            "vram": {"type": "HBM3", "size": {"value": 196592, "unit": "MB"}},
            "driver": {"name": "amdgpu", "version": "6.10.5"},
        },
    ]
}

AMD_LIST = [
    {"gpu": 0, "bdf": "0000:0c:00.0", "uuid": "75ff74a1-0000-1000-8039-8d2a61c7e3b4"},
    {"gpu": 1, "bdf": "0000:22:00.0", "uuid": "21ff74a1-0000-1000-80b2-3e91b0c24a7d"},
]


def test_amd_smi_static_with_gpu_data_and_list_uuids():
    gpus, driver = agent.parse_amd_smi_json(json.dumps(AMD_STATIC_GPU_DATA), json.dumps(AMD_LIST))
    assert driver == "6.10.5"
    assert gpus == [
        {
            "index": 0,
            "uuid": "75ff74a1-0000-1000-8039-8d2a61c7e3b4",
            "name": "AMD Instinct MI300X",
            "memory_mib": 196592,
            "bdf": "0000:0c:00.0",
        },
        {
            "index": 1,
            "uuid": "21ff74a1-0000-1000-80b2-3e91b0c24a7d",
            "name": "AMD Instinct MI300X",
            "memory_mib": 196592,
            "bdf": "0000:22:00.0",
        },
    ]


def test_amd_smi_static_in_the_older_list_form_with_vram_size_mb():
    older = [
        {
            "gpu": 0,
            "asic": {"market_name": "AMD Instinct MI210", "asic_serial": "0xA1B2C3D4E5F60718"},
            "bus": {"bdf": "0000:83:00.0"},
            "vram": {"vram_type": "HBM2e", "vram_vendor": "SAMSUNG", "vram_size_mb": 65520},
            "driver": {"driver_name": "amdgpu", "driver_version": "6.3.6"},
        }
    ]
    gpus, driver = agent.parse_amd_smi_json(json.dumps(older))
    assert driver == "6.3.6"
    assert gpus == [
        {
            "index": 0,
            "uuid": "0xA1B2C3D4E5F60718",
            "name": "AMD Instinct MI210",
            "memory_mib": 65520,
            "bdf": "0000:83:00.0",
        }
    ]


def test_amd_smi_refuses_an_unknown_shape():
    with pytest.raises(ValueError):
        agent.parse_amd_smi_json(json.dumps({"error": "no GPU"}))


ROCM_SMI = {
    "card0": {
        "Card series": "AMD Instinct MI210",
        "Card model": "0x0c34",
        "Card vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
        "Card SKU": "D67301",
        "Unique ID": "0x6f2d8c4b1a9e3750",
        "PCI Bus": "0000:83:00.0",
        "VRAM Total Memory (B)": "68702699520",
        "VRAM Total Used Memory (B)": "10960896",
    },
    "card1": {
        "Card series": "AMD Instinct MI210",
        "Unique ID": "0x1d5e7a3c9b2f4860",
        "PCI Bus": "0000:c3:00.0",
        "VRAM Total Memory (B)": "68702699520",
        "VRAM Total Used Memory (B)": "10960896",
    },
    "system": {"Driver version": "6.3.6"},
}


def test_rocm_smi_cards_bytes_and_driver():
    gpus, driver = agent.parse_rocm_smi_json(json.dumps(ROCM_SMI))
    assert driver == "6.3.6"
    assert [(g["index"], g["name"], g["memory_mib"], g["uuid"], g["bdf"]) for g in gpus] == [
        (0, "AMD Instinct MI210", 65520, "0x6f2d8c4b1a9e3750", "0000:83:00.0"),
        (1, "AMD Instinct MI210", 65520, "0x1d5e7a3c9b2f4860", "0000:c3:00.0"),
    ]


def test_rocm_smi_refuses_a_list():
    with pytest.raises(ValueError):
        agent.parse_rocm_smi_json("[]")


def test_the_zipapp_is_the_same_bytes_every_build_and_holds_only_the_package(tmp_path):
    import hashlib
    import subprocess
    import sys
    import zipfile

    from kernodeck.provisioning import agent as agent_package

    first = agent_package.zipapp_bytes()
    agent_package.zipapp_bytes.cache_clear()
    second = agent_package.zipapp_bytes()
    assert first == second and first.startswith(b"#!/usr/bin/env python3\n")
    archive = agent_package.write_zipapp(tmp_path / "agent.pyz")
    names = zipfile.ZipFile(archive).namelist()
    assert names[0] == "__main__.py" and "kdagent/commands.py" in names
    assert all(
        n == "__main__.py" or (n.startswith("kdagent/") and n.endswith(".py")) for n in names
    )
    done = subprocess.run(
        [sys.executable, str(archive), "version"], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout)["sha256"] == hashlib.sha256(first).hexdigest()
