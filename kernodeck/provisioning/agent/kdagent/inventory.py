"""What the host has: GPUs, driver, disk, and the rentals it holds."""

from __future__ import annotations

import math
import shutil
import socket

from . import AGENT_VERSION
from .common import (
    run,
)
from .parsers import parse_amd_smi_json, parse_nvidia_smi_csv, parse_rocm_smi_json


def collect_inventory(host):
    """GPUs, driver version and free disk of the workspace volume."""
    env = host.tool_env()
    gpus, driver, backend = [], None, None
    if host.which("nvidia-smi"):
        done = run(
            [
                host.which("nvidia-smi"),
                "--query-gpu=index,uuid,name,memory.total",
                "--format=csv,noheader,nounits",
            ],
            env=env,
        )
        gpus, backend = parse_nvidia_smi_csv(done.stdout), "cuda"
        version = run(
            [host.which("nvidia-smi"), "--query-gpu=driver_version", "--format=csv,noheader"],
            env=env,
            check=False,
        )
        driver = version.stdout.strip().splitlines()[0] if version.stdout.strip() else None
    elif host.which("amd-smi"):
        static = run([host.which("amd-smi"), "static", "--json"], env=env)
        listed = run([host.which("amd-smi"), "list", "--json"], env=env, check=False)
        gpus, driver = parse_amd_smi_json(static.stdout, listed.stdout or None)
        backend = "rocm"
    elif host.which("rocm-smi"):
        done = run(
            [
                host.which("rocm-smi"),
                "--showproductname",
                "--showmeminfo",
                "vram",
                "--showuniqueid",
                "--showbus",
                "--showdriverversion",
                "--json",
            ],
            env=env,
        )
        gpus, driver = parse_rocm_smi_json(done.stdout)
        backend = "rocm"
    for gpu in gpus:
        gpu["device"] = host.device_path(backend, gpu) if backend else None
    usage = shutil.disk_usage(host.settings["home_base"])
    return {
        "backend": backend,
        "gpus": gpus,
        "driver_version": driver,
        "disk": {
            "path": host.settings["home_base"],
            "free_bytes": usage.free,
            "total_bytes": usage.total,
        },
    }


def cmd_inventory(host, request):
    inventory = collect_inventory(host)
    inventory["hostname"] = socket.gethostname()
    inventory["agent_version"] = AGENT_VERSION
    inventory["rentals"] = [
        {
            "account": s["account"],
            "reference": s["reference"],
            "status": s["status"],
            "gpus": s["gpus"],
        }
        for s in host.all_states()
    ]
    return inventory


def collect_gpu_use(host):
    """Each GPU's use now (utilisation %, memory MiB, °C, W), for the status answer.

    Only nvidia-smi for now; a host without it, or a tool that fails, reports no samples
    rather than failing the status the reconcile needs. "[N/A]" figures become null.
    """
    tool = host.which("nvidia-smi")
    if not tool:
        return []
    query = "index,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw"
    done = run(
        [tool, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
        env=host.tool_env(),
        check=False,
        timeout=20,
    )
    names = ("utilization_pct", "memory_used_mib", "memory_total_mib", "temperature_c", "power_w")
    samples = []
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 6 or not parts[0].isdigit():
            continue
        figures = {}
        for name, text in zip(names, parts[1:], strict=True):
            try:
                value = float(text)
            except ValueError:
                value = None
            finite = value is not None and math.isfinite(value) and value >= 0
            figures[name] = round(value, 1) if finite else None
        samples.append({"index": int(parts[0]), **figures})
    return samples
