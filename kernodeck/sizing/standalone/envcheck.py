#!/usr/bin/env python3
"""kernodeck-envcheck: does this Python really compute on the GPU you rented?

One standalone file (standard library plus PyTorch). Run it with the SAME interpreter as your
program, for example `.venv/bin/python kernodeck-envcheck.py`. It prints the interpreter,
Python, PyTorch and its backend (CUDA through torch.version.cuda, ROCm through
torch.version.hip; ROCm reuses the torch.cuda namespace, so that name alone does not identify
the hardware), the visible-device variables, every device with its memory and capability; it
runs a small matrix product on each device, checks the result lives there and matches the CPU,
and measures the memory used outside PyTorch's allocator (mostly the CUDA/ROCm context).

It never falls back to the CPU silently: a CPU-only build, an invisible device, a wrong
backend or a wrong GPU count ends with exit status 1 and one line saying why. Only an explicit
`--expect-backend cpu` accepts a CPU-only run (to rehearse the script itself).

    kernodeck-envcheck                         # human-readable report
    kernodeck-envcheck --json                  # one JSON object, for scripts
    kernodeck-envcheck --expect-backend rocm --expect-gpus 4
    kernodeck-envcheck --measure train.py [--estimate-gib 21.5] -- --args --for --train
    kernodeck-envcheck --manifest run.json --hash data.parquet --hash model.safetensors \
        --param lr=3e-4 --command "python train.py --lr 3e-4"

Exit status: 0 all checks passed, 1 a check failed (the last line says which), 2 bad usage
or PyTorch missing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import os
import platform
import runpy
import shutil
import subprocess
import sys
import traceback

GIB = 2**30
VISIBILITY_VARIABLES = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
)
BACKENDS = ("cuda", "rocm", "cpu")
SEED_NOTE = (
    "A fixed seed alone does not make results identical across hardware, drivers or library "
    "versions: compare the control output within a tolerance and record all of the above."
)


class CheckFailed(Exception):
    """A check that did not pass; the message is the one line the user reads."""

    def __init__(self, message: str, *, status: int = 1):
        super().__init__(message)
        self.status = status


def _gib(value: float) -> float:
    return round(value / GIB, 3)


def installed_torch() -> tuple[str | None, str | None]:
    """The version and package folder of the PyTorch distribution installed for this
    interpreter (its metadata), without importing it."""
    from importlib import metadata

    try:
        dist = metadata.distribution("torch")
    except metadata.PackageNotFoundError:
        return None, None
    return dist.version, os.path.dirname(str(dist.locate_file("torch/__init__.py")))


def torch_found_at() -> tuple[str | None, bool]:
    """Where `import torch` would load from, and whether that is a real package (a folder
    with __init__.py or a module file) rather than a bare folder named torch."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None, False
    if spec is None:
        return None, False
    if spec.origin and spec.origin not in ("namespace", "built-in"):
        origin = spec.origin
        folder = os.path.dirname(origin) if origin.endswith("__init__.py") else origin
        return folder, True
    locations = list(spec.submodule_search_locations or [])
    return (locations[0] if locations else None), False


def _same(a: str | None, b: str | None) -> bool:
    return bool(a and b) and os.path.realpath(a) == os.path.realpath(b)


def load_torch(report: dict | None = None):
    """Import PyTorch, or fail with one line that says what is wrong and what to do.

    Fills `report` with what was found (interpreter, version, where it loads from) first, so
    a failure still shows it.
    """
    report = {} if report is None else report
    version, installed_at = installed_torch()
    found_at, real_package = torch_found_at()
    report.setdefault("interpreter", sys.executable)
    report.setdefault("python", platform.python_version())
    report.setdefault("torch", version)
    report.setdefault("backend", None)
    report["torch_location"] = found_at
    shadow = (
        found_at is not None and installed_at is not None and not _same(found_at, installed_at)
    )
    if found_at is None:
        raise CheckFailed(
            f"PyTorch is not installed for this interpreter ({sys.executable}). "
            "Run this check with the Python your program uses.",
            status=2,
        )
    if not real_package:
        raise CheckFailed(
            f"`import torch` finds the folder {found_at}, which is not PyTorch"
            + (
                f" (the installed PyTorch {version} is at {installed_at})"
                if version
                else " (PyTorch is not installed for this interpreter)"
            )
            + ". Rename that folder or run from another directory.",
            status=1 if version else 2,
        )
    try:
        import torch
    except Exception as error:  # OSError (a missing libcudnn.so.9), ImportError, any breakage
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        if shadow:
            raise CheckFailed(
                f"`import torch` loads {found_at}, not the PyTorch {version} installed at "
                f"{installed_at}, and it cannot load ({detail}). Rename or move that folder, "
                "or run from another directory."
            ) from None
        if isinstance(error, ModuleNotFoundError) and error.name == "torch":
            raise CheckFailed(
                f"PyTorch is not installed for this interpreter ({sys.executable}): {error}. "
                "Run this check with the Python your program uses.",
                status=2,
            ) from None
        library = isinstance(error, OSError) or ".so" in detail or ".dll" in detail
        advice = (
            "A library it needs cannot be loaded: install the PyTorch build whose CUDA or ROCm "
            "matches this machine into this environment (or fix LD_LIBRARY_PATH)."
            if library
            else "The installation is broken: reinstall PyTorch into this environment "
            "(pip install --force-reinstall torch, with the index URL of your CUDA or ROCm)."
        )
        raise CheckFailed(
            f"This PyTorch ({version or 'version unknown'}, at {found_at}) is installed but "
            f"cannot load: {detail}. {advice}"
        ) from None
    if shadow or not hasattr(torch, "__version__") or not hasattr(torch, "version"):
        where = f" (PyTorch {version} is installed at {installed_at})" if installed_at else ""
        raise CheckFailed(
            f"`import torch` loads {found_at}, which is not the PyTorch installed for this "
            f"interpreter{where}. Rename or move it, or run from another directory."
        )
    return torch


def backend_of(torch) -> str:
    """ROCm builds also answer torch.cuda, so torch.version.hip decides first."""
    if getattr(torch.version, "hip", None):
        return "rocm"
    if getattr(torch.version, "cuda", None):
        return "cuda"
    return "cpu"


def describe_environment(torch) -> dict:
    return {
        "interpreter": sys.executable,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "backend": backend_of(torch),
        "cuda_version": getattr(torch.version, "cuda", None),
        "hip_version": getattr(torch.version, "hip", None),
        "visible_devices": {name: os.environ.get(name) for name in VISIBILITY_VARIABLES},
        "driver": driver_version(backend_of(torch)),
    }


def driver_version(backend: str) -> str | None:
    """The kernel driver as the vendor tool reports it, when the tool is present."""
    commands = {
        "cuda": ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        "rocm": ["rocm-smi", "--showdriverversion"],
    }
    command = commands.get(backend)
    if not command or not shutil.which(command[0]):
        return None
    try:
        # The vendor's own tool, found on PATH, with fixed arguments.
        result = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)  # noqa: S603
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    return lines[0] if lines else None


def require_gpu(torch, report: dict, *, expect_backend: str | None) -> None:
    """Refuse every way of ending up on the CPU without saying so."""
    backend = report["backend"]
    if expect_backend == "cpu":
        if backend != "cpu" and torch.cuda.is_available():
            raise CheckFailed(
                f"--expect-backend cpu, but this PyTorch ({torch.__version__}) is a {backend} "
                "build that sees a GPU."
            )
        return
    if backend == "cpu":
        raise CheckFailed(
            f"This PyTorch ({torch.__version__}) is a CPU-only build: it has neither CUDA nor "
            "ROCm support. Install a CUDA or ROCm build of PyTorch for this interpreter."
        )
    if expect_backend and backend != expect_backend:
        raise CheckFailed(
            f"Expected the {expect_backend} backend, but this PyTorch ({torch.__version__}) is "
            f"a {backend} build."
        )
    if not torch.cuda.is_available():
        visible = {k: v for k, v in report["visible_devices"].items() if v is not None}
        raise CheckFailed(
            f"PyTorch is a {backend} build but sees no GPU (torch.cuda.is_available() is "
            f"False; visible-device variables: {visible or 'none set'}). Check the driver and "
            "that the devices are visible to this process."
        )


def check_devices(torch, *, backend: str) -> list[dict]:
    """Name, memory, capability of each device, and a matrix product computed on it."""
    devices = []
    for index in range(torch.cuda.device_count()):
        device = torch.device("cuda", index)
        props = torch.cuda.get_device_properties(index)
        generator = torch.Generator().manual_seed(1234 + index)
        a_cpu = torch.randn(512, 512, generator=generator)
        a = a_cpu.to(device)
        product = a @ a
        torch.cuda.synchronize(index)
        if product.device != device:
            raise CheckFailed(
                f"The product on {device} came back on {product.device}: the computation did "
                "not run on the GPU."
            )
        expected = a_cpu @ a_cpu
        error = (product.cpu() - expected).abs().max().item()
        scale = expected.abs().max().item()
        if not error <= 1e-2 * max(scale, 1.0):
            raise CheckFailed(
                f"The product on {device} differs from the CPU result by {error:.3g}: the "
                "device computes wrong results."
            )
        free, total = torch.cuda.mem_get_info(index)
        reserved = torch.cuda.memory_reserved(index)
        arch = getattr(props, "gcnArchName", None) if backend == "rocm" else None
        devices.append(
            {
                "index": index,
                "name": props.name,
                "capability": arch or f"{props.major}.{props.minor}",
                "total_gib": _gib(total),
                "free_gib": _gib(free),
                # Memory in use that PyTorch's allocator does not hold: the context, library
                # workspaces, and any other process on this GPU.
                "outside_allocator_gib": _gib(max(0, total - free - reserved)),
                "matmul": "ok",
            }
        )
        del a, product
    if not devices:
        raise CheckFailed("PyTorch reports a GPU backend but zero devices.")
    return devices


def run_checks(args, report: dict) -> dict:
    """Fill `report` as the checks go, so a failure still shows what was found."""
    torch = load_torch(report)
    report.update(describe_environment(torch))
    require_gpu(torch, report, expect_backend=args.expect_backend)
    if report["backend"] == "cpu" or not torch.cuda.is_available():
        report["devices"] = []
        report["note"] = "CPU requested explicitly with --expect-backend cpu: no GPU was checked."
    else:
        report["devices"] = check_devices(torch, backend=report["backend"])
    count = len(report["devices"])
    if args.expect_gpus is not None and count != args.expect_gpus:
        raise CheckFailed(
            f"Expected {args.expect_gpus} GPU(s), but this process sees {count} "
            f"(visible-device variables: {visible_summary(report)})."
        )
    return report


def visible_summary(report: dict) -> str:
    visible = {k: v for k, v in report["visible_devices"].items() if v is not None}
    return json.dumps(visible) if visible else "none set"


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory so far (Unix), or None where it cannot be read."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak if sys.platform == "darwin" else peak * 1024


def current_rss_bytes() -> int | None:
    """This process's resident memory now (Linux /proc), or None elsewhere."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            resident = int(handle.read().split()[1])
        return resident * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def measure(torch, report: dict, args) -> dict:
    """Run the customer's trial in this process and read the allocator's peaks.

    Per GPU, the same three figures the estimator gives: allocated (max_memory_allocated),
    reserved (max_memory_reserved) and device (reserved plus the memory used outside the
    allocator, the context measured before the trial; or what the card shows used at the end,
    when that is more). Without a GPU, the process's peak resident memory stands in.
    """
    on_gpu = bool(report["devices"])
    rss_before = current_rss_bytes() or peak_rss_bytes()
    if on_gpu:
        for index in range(torch.cuda.device_count()):
            torch.cuda.reset_peak_memory_stats(index)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [args.measure, *args.script_args]
    # As `python script.py` would: the script's folder first on the import path.
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.measure)))
    # With --json, the trial's own prints go to stderr so stdout stays one JSON object.
    printing = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    error = None
    try:
        with printing:
            runpy.run_path(args.measure, run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0):
            error = f"the script exited with status {stop.code}"
    except Exception as exc:  # the trial's own error, reported with the peaks so far
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    peaks = []
    if on_gpu:
        context = {d["index"]: d["outside_allocator_gib"] for d in report["devices"]}
        for index in range(torch.cuda.device_count()):
            torch.cuda.synchronize(index)
            allocated = _gib(torch.cuda.max_memory_allocated(index))
            reserved = _gib(torch.cuda.max_memory_reserved(index))
            free, total = torch.cuda.mem_get_info(index)
            device = max(round(reserved + context.get(index, 0.0), 3), _gib(total - free))
            peaks.append(
                {
                    "index": index,
                    "allocated_gib": allocated,
                    "reserved_gib": reserved,
                    "device_gib": device,
                    "max_memory_allocated_gib": allocated,
                    "max_memory_reserved_gib": reserved,
                }
            )
    result = {"script": args.measure, "peaks": peaks, "error": error}
    rss_after = peak_rss_bytes()
    if not on_gpu and rss_after is not None:
        result["cpu_peak"] = {
            "peak_rss_gib": _gib(rss_after),
            "trial_growth_gib": _gib(max(0, rss_after - (rss_before or 0))),
        }
    if args.estimate_gib is not None:
        result["estimate_per_gpu_gib"] = args.estimate_gib
        if peaks:
            worst = max(peak["max_memory_reserved_gib"] for peak in peaks)
            result["reserved_over_estimate"] = round(worst / args.estimate_gib, 3)
            device = max(peak["device_gib"] for peak in peaks)
            result["device_over_estimate"] = round(device / args.estimate_gib, 3)
    return result


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_revision() -> dict:
    if not shutil.which("git"):
        return {"revision": None, "dirty": None}
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],  # noqa: S607 - the user's git, fixed arguments
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        status = subprocess.run(
            ["git", "status", "--porcelain"],  # noqa: S607
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {"revision": None, "dirty": None}
    if head.returncode != 0:
        return {"revision": None, "dirty": None}
    return {"revision": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def installed_packages() -> dict:
    from importlib import metadata

    versions = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            versions[name] = dist.version
    return dict(sorted(versions.items(), key=lambda item: item[0].lower()))


def control_run(torch, *, device: str) -> dict:
    """A small fixed input, its output on the checked device, and a digest of that output."""
    values = torch.arange(16, dtype=torch.float32).reshape(4, 4) / 8
    output = torch.tanh(values.to(device) @ values.T.to(device)).cpu()
    rounded = [[round(x, 6) for x in row] for row in output.tolist()]
    return {
        "device": device,
        "input": "tanh(A @ A.T) with A = arange(16).reshape(4, 4) / 8, float32",
        "output": rounded,
        "output_sha256": hashlib.sha256(json.dumps(rounded).encode()).hexdigest(),
    }


def manifest(torch, report: dict, args) -> dict:
    params = {}
    for item in args.param:
        key, _, value = item.partition("=")
        params[key] = value
    device = "cuda:0" if report["devices"] else "cpu"
    return {
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "code": git_revision(),
        "launch_command": args.command or " ".join([sys.executable, *sys.argv]),
        "parameters": params,
        "environment": {key: report[key] for key in report if key != "devices"},
        "devices": report["devices"],
        "packages": installed_packages(),
        "files": {path: {"sha256": sha256_of(path)} for path in args.hash},
        "control": control_run(torch, device=device),
        "note": SEED_NOTE,
    }


def print_found(report: dict, out) -> None:
    """On a failure: what was found before it, so the reader sees which Python and PyTorch."""
    version = report.get("hip_version") or report.get("cuda_version") or ""
    print(f"interpreter   {report.get('interpreter') or sys.executable}", file=out)
    print(f"python        {report.get('python') or platform.python_version()}", file=out)
    print(f"torch         {report.get('torch') or 'not found'}", file=out)
    if report.get("torch_location"):
        print(f"torch at      {report['torch_location']}", file=out)
    print(
        f"backend       {(report.get('backend') or 'unknown') + ' ' + version}".rstrip(), file=out
    )


def print_human(report: dict, out) -> None:
    print(f"interpreter   {report['interpreter']}", file=out)
    print(f"python        {report['python']}", file=out)
    print(f"torch         {report['torch']}", file=out)
    version = report.get("hip_version") or report.get("cuda_version") or "-"
    print(f"backend       {report['backend']} {version}", file=out)
    print(f"driver        {report.get('driver') or 'unknown'}", file=out)
    for name, value in report["visible_devices"].items():
        if value is not None:
            print(f"{name:<14}{value}", file=out)
    for device in report.get("devices", []):
        print(
            f"gpu {device['index']}         {device['name']} · capability {device['capability']}"
            f" · {device['total_gib']} GiB total, {device['free_gib']} GiB free · "
            f"{device['outside_allocator_gib']} GiB outside PyTorch (context) · matmul ok",
            file=out,
        )
    if report.get("note"):
        print(report["note"], file=out)


def gib_number(text: str) -> float:
    """A size in GiB, written 18.6 or, as Spanish and other languages write it, 18,6."""
    try:
        value = float(text.strip().replace(",", "."))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of GiB: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="kernodeck-envcheck",
        description="Check that this interpreter's PyTorch really computes on the GPU.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--expect-backend", choices=BACKENDS, help="cuda, rocm (or cpu)")
    parser.add_argument("--expect-gpus", type=int, help="how many GPUs must be visible")
    parser.add_argument("--measure", metavar="SCRIPT", help="run SCRIPT and report its peaks")
    parser.add_argument(
        "--estimate-gib", type=gib_number, help="the estimator's per-GPU figure (18.6)"
    )
    parser.add_argument("--manifest", metavar="OUT", help="write a reproducibility record")
    parser.add_argument("--hash", action="append", default=[], metavar="FILE")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--command", help="the launch command to record")
    parser.add_argument("script_args", nargs="*", help="arguments for --measure's script")
    args = parser.parse_args(argv)
    if args.expect_gpus is not None and args.expect_gpus < 0:
        parser.error("--expect-gpus must be 0 or more")
    if args.measure and not os.path.isfile(args.measure):
        parser.error(f"--measure: no such file: {args.measure}")
    for path in args.hash:
        if not os.path.isfile(path):
            parser.error(f"--hash: no such file: {path}")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = sys.stdout
    report: dict = {}
    try:
        run_checks(args, report)
    except CheckFailed as failure:
        if args.json:
            print(json.dumps({"ok": False, "reason": str(failure), **report}), file=out)
        else:
            print_found(report, out)
        print(f"FAIL: {failure}", file=sys.stderr)
        return failure.status
    torch = load_torch(report)
    if args.manifest:
        record = manifest(torch, report, args)
        with open(args.manifest, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=2)
        report["manifest"] = args.manifest
    status = 0
    if args.measure:
        report["measure"] = measure(torch, report, args)
        if report["measure"]["error"]:
            status = 1
    report["ok"] = status == 0
    if args.json:
        print(json.dumps(report), file=out)
    else:
        print_human(report, out)
        if args.measure:
            print_measure(report["measure"], out)
    if status:
        print(f"FAIL: {report['measure']['error']}", file=sys.stderr)
    else:
        print("OK: the checks passed.", file=sys.stderr if args.json else out)
    return status


def print_measure(result: dict, out) -> None:
    for peak in result["peaks"]:
        print(
            f"peak gpu {peak['index']}    allocated {peak['allocated_gib']} GiB · "
            f"reserved {peak['reserved_gib']} GiB · device {peak['device_gib']} GiB",
            file=out,
        )
    if "cpu_peak" in result:
        cpu = result["cpu_peak"]
        print(
            f"peak cpu      {cpu['peak_rss_gib']} GiB resident (the trial added "
            f"{cpu['trial_growth_gib']} GiB); no GPU in this rehearsal",
            file=out,
        )
    if "estimate_per_gpu_gib" in result:
        print(
            f"estimate      {result['estimate_per_gpu_gib']} GiB per GPU (compare with the "
            "device figure; allocated and reserved match the estimate's figures of the same "
            "names)",
            file=out,
        )


if __name__ == "__main__":
    sys.exit(main())
