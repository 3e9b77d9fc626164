"""GPU device files: which one belongs to a GPU, granting and revoking them."""

from __future__ import annotations

import os

from .common import (
    AgentError,
)


def device_path(root, backend, gpu):
    """The device node that grants access to GPU `gpu["index"]`."""
    if backend == "cuda":
        return os.path.join(root, "dev", f"nvidia{int(gpu['index'])}")
    bdf = gpu.get("bdf") or ""
    drm = os.path.join(root, "sys", "bus", "pci", "devices", bdf, "drm")
    if bdf and os.path.isdir(drm):
        for name in sorted(os.listdir(drm)):
            if name.startswith("renderD"):
                return os.path.join(root, "dev", "dri", name)
    return os.path.join(root, "dev", "dri", f"renderD{128 + int(gpu['index'])}")


def env_lines(backend, gpus):
    visible = ",".join(str(i) for i in gpus)
    if backend == "cuda":
        pairs = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": visible}
    else:
        pairs = {"HIP_VISIBLE_DEVICES": visible, "ROCR_VISIBLE_DEVICES": visible}
    return pairs


def grant_devices(host, backend, gpus, gid, *, inventory_gpus):
    by_index = {g["index"]: g for g in inventory_gpus}
    for index in gpus:
        path = host.device_path(backend, by_index.get(index, {"index": index}))
        if not os.path.exists(path):
            raise AgentError(f"GPU {index} has no device file {path}")
        os.chown(path, 0, gid, follow_symlinks=False)
        os.chmod(path, 0o660)


def revoke_devices(host, state):
    """Hands the rental's device nodes back to root alone."""
    for gpu in state.get("devices", []):
        path = gpu["path"]
        if os.path.exists(path) and not os.path.islink(path):
            os.chown(path, 0, 0)
            os.chmod(path, 0o660)
