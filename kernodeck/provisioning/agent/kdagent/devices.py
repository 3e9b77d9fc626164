"""GPU device files: which belong to a GPU, which every GPU process needs, granting them.

NVIDIA: a rental's own `/dev/nvidiaN` goes to the rental's group; the shared control devices
every CUDA process opens (`nvidiactl`, `nvidia-uvm`, `nvidia-uvm-tools`, `nvidia-modeset`)
go to the node's GPU group (`gpu_group`), which every active rental account joins and
leaves at its end. AMD: `/dev/kfd` is shared the same way; a rental's own
`/dev/dri/renderD*` (and `card*`) are found from the GPUs' PCI addresses under
`/sys/bus/pci/devices/<bdf>/drm/`. Everything else stays root's: a rental never opens a GPU
it does not hold.
"""

from __future__ import annotations

import contextlib
import grp
import os
import stat

from .common import AgentError, run

SHARED = {
    "cuda": ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"),
    "rocm": ("kfd",),
}


def _drm_names(root, gpu):
    bdf = gpu.get("bdf") or ""
    drm = os.path.join(root, "sys", "bus", "pci", "devices", bdf, "drm")
    if bdf and os.path.isdir(drm):
        return sorted(os.listdir(drm))
    return []


def device_path(root, backend, gpu):
    """The device node that grants access to GPU `gpu["index"]`."""
    if backend == "cuda":
        return os.path.join(root, "dev", f"nvidia{int(gpu['index'])}")
    for name in _drm_names(root, gpu):
        if name.startswith("renderD"):
            return os.path.join(root, "dev", "dri", name)
    return os.path.join(root, "dev", "dri", f"renderD{128 + int(gpu['index'])}")


def device_paths(root, backend, gpu):
    """Every device node of one GPU: its render node first, then its `card*` (AMD)."""
    paths = [device_path(root, backend, gpu)]
    if backend == "rocm":
        for name in _drm_names(root, gpu):
            if name.startswith("card") and name[4:].isdigit():
                paths.append(os.path.join(root, "dev", "dri", name))
    return paths


def shared_paths(root, backend):
    return [os.path.join(root, "dev", name) for name in SHARED.get(backend, ())]


def env_lines(backend, gpus):
    visible = ",".join(str(i) for i in gpus)
    if backend == "cuda":
        pairs = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": visible}
    else:
        pairs = {"HIP_VISIBLE_DEVICES": visible, "ROCR_VISIBLE_DEVICES": visible}
    return pairs


def _set(path, gid, *, required, what):
    """root:gid 0660 on a device node (never on a link or a regular file in its place)."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        if required:
            raise AgentError(f"{what} has no device file {path}") from None
        return False
    if stat.S_ISLNK(info.st_mode):
        raise AgentError(f"refusing to follow {path}: it is a symbolic link, not a device")
    os.chown(path, 0, gid, follow_symlinks=False)
    os.chmod(path, 0o660)
    return True


def gpu_group(host):
    """The node's GPU group's gid, made on first use."""
    name = host.settings["gpu_group"]
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        run(["groupadd", "--system", name])
        return grp.getgrnam(name).gr_gid


def join_gpu_group(host, account):
    name = host.settings["gpu_group"]
    gpu_group(host)
    if account not in grp.getgrnam(name).gr_mem:
        run(["usermod", "--append", "--groups", name, account])


def leave_gpu_group(host, account):
    name = host.settings["gpu_group"]
    with contextlib.suppress(KeyError):
        if account in grp.getgrnam(name).gr_mem:
            run(["gpasswd", "--delete", account, name])


def grant_devices(host, backend, gpus, gid, *, inventory_gpus):
    """The rental's own device nodes to its group and the shared ones to the GPU group.

    Returns the rental's nodes as `[{"index": i, "path": ...}, ...]` for the state file.
    """
    by_index = {g["index"]: g for g in inventory_gpus}
    granted = []
    for index in gpus:
        paths = device_paths(host.root, backend, by_index.get(index, {"index": index}))
        for n, path in enumerate(paths):
            if _set(path, gid, required=n == 0, what=f"GPU {index}"):
                granted.append({"index": index, "path": path})
    shared = gpu_group(host)
    for path in shared_paths(host.root, backend):
        _set(path, shared, required=False, what="the GPU driver")
    return granted


def revoke_devices(host, state):
    """Hands the rental's device nodes back to root alone."""
    for gpu in state.get("devices", []):
        path = gpu["path"]
        if os.path.exists(path) and not os.path.islink(path):
            os.chown(path, 0, 0)
            os.chmod(path, 0o660)
