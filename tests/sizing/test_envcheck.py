"""kernodeck-envcheck run as customers run it: a separate process, this interpreter.

The suite has the CPU build of PyTorch (2.13.0, installed by .ci/run), so the default run
must refuse loudly; the GPU path runs on a GPU machine (`kernodeck-envcheck --json`).
"""

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kernodeck.sizing.standalone import envcheck

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(
    not HAS_TORCH,
    reason="PyTorch is not installed: .ci/run installs the CPU build (pip install torch==2.13.0)",
)
SCRIPT = Path(envcheck.__file__)


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def test_a_cpu_only_build_fails_with_one_clear_line():
    result = run()

    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("FAIL: This PyTorch (2.13.0")
    assert "CPU-only build" in last
    assert "OK" not in result.stdout


def test_json_says_why_and_what_it_found():
    result = run("--json")

    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert "CPU-only build" in report["reason"]
    assert report["backend"] == "cpu"
    assert report["interpreter"] == sys.executable
    assert report["torch"].startswith("2.13.0")
    assert report["hip_version"] is None and report["cuda_version"] is None


def test_expecting_a_gpu_backend_on_the_cpu_build_fails():
    result = run("--expect-backend", "rocm", "--expect-gpus", "4")

    assert result.returncode == 1
    assert "CPU-only build" in result.stderr


def test_an_explicit_cpu_rehearsal_passes_and_says_so():
    result = run("--expect-backend", "cpu")

    assert result.returncode == 0, result.stderr
    assert "CPU requested explicitly" in result.stdout
    assert f"interpreter   {sys.executable}" in result.stdout


def test_a_wrong_gpu_count_fails_even_in_a_cpu_rehearsal():
    result = run("--expect-backend", "cpu", "--expect-gpus", "2", "--json")

    assert result.returncode == 1
    assert "Expected 2 GPU(s), but this process sees 0" in json.loads(result.stdout)["reason"]


def test_measure_refuses_to_run_the_trial_on_the_cpu_build(tmp_path):
    marker = tmp_path / "ran"
    trial = tmp_path / "trial.py"
    trial.write_text(f"open({str(marker)!r}, 'w').write('x')\n")

    result = run("--measure", str(trial))

    assert result.returncode == 1
    assert not marker.exists()


def test_measure_runs_the_trial_with_its_arguments_and_reports(tmp_path):
    trial = tmp_path / "trial.py"
    (tmp_path / "helper.py").write_text("SCALE = 2\n")
    trial.write_text(
        "import sys, torch\n"
        "from helper import SCALE\n"
        "x = torch.ones(int(sys.argv[1])) * SCALE\n"
        "print('trial output')\n"
        "open(sys.argv[2], 'w').write(str(float(x.sum())))\n"
    )
    out = tmp_path / "out.txt"

    result = run(
        "--expect-backend",
        "cpu",
        "--json",
        "--measure",
        str(trial),
        "--estimate-gib",
        "1.5",
        "--",
        "7",
        str(out),
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert out.read_text() == "14.0"
    assert "trial output" in result.stderr
    measured = report["measure"]
    assert measured["script"] == str(trial)
    assert measured["peaks"] == [] and measured["error"] is None
    assert measured["estimate_per_gpu_gib"] == 1.5
    # No GPU: the process's peak resident memory stands in for the trial's peak.
    assert measured["cpu_peak"]["peak_rss_gib"] > 0
    assert measured["cpu_peak"]["trial_growth_gib"] >= 0


def test_a_cpu_rehearsal_reports_the_trials_peak_in_words(tmp_path):
    trial = tmp_path / "trial.py"
    # 300 MiB touched on the CPU: the reported growth must see it.
    trial.write_text("import torch\nx = torch.ones(300 * 2**20, dtype=torch.uint8)\n")

    result = run("--expect-backend", "cpu", "--measure", str(trial), "--estimate-gib", "0,5")

    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("peak cpu"))
    growth = float(line.split("added ")[1].split(" GiB")[0])
    assert growth >= 0.25
    assert "estimate      0.5 GiB per GPU (compare with the device figure" in result.stdout


def test_a_failing_trial_is_reported_and_exits_non_zero(tmp_path):
    trial = tmp_path / "trial.py"
    trial.write_text("raise MemoryError('CUDA out of memory. Tried to allocate 2.00 GiB')\n")

    result = run("--expect-backend", "cpu", "--json", "--measure", str(trial))

    assert result.returncode == 1
    assert "MemoryError: CUDA out of memory" in json.loads(result.stdout)["measure"]["error"]


@pytest.mark.skipif(not shutil.which("git"), reason="needs git for the code revision")
def test_the_manifest_records_what_reproducibility_needs(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"kernodeck\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "start",
        ],
        check=True,
    )
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    result = run(
        "--expect-backend",
        "cpu",
        "--manifest",
        str(tmp_path / "m.json"),
        "--hash",
        str(data),
        "--param",
        "lr=3e-4",
        "--param",
        "seed=1",
        "--command",
        "python train.py",
        cwd=tmp_path,
    )

    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["code"] == {"revision": head, "dirty": True}
    assert record["parameters"] == {"lr": "3e-4", "seed": "1"}
    assert record["launch_command"] == "python train.py"
    assert record["files"] == {str(data): {"sha256": hashlib.sha256(b"kernodeck\n").hexdigest()}}
    assert record["environment"]["backend"] == "cpu"
    assert record["packages"]["torch"].startswith("2.13.0")
    assert record["control"]["output"][0][0] == 0.215326
    assert "fixed seed alone does not make results identical" in record["note"]


def test_bad_usage_is_exit_status_2(tmp_path):
    assert run("--measure", str(tmp_path / "missing.py")).returncode == 2
    assert run("--expect-backend", "tpu").returncode == 2
    assert run("--expect-gpus", "-1").returncode == 2


def test_the_console_script_is_declared():
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())

    scripts = pyproject["project"]["scripts"]
    assert scripts["kernodeck-envcheck"] == "kernodeck.sizing.standalone.envcheck:main"


def _gpu_visible() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.device_count() > 0


@pytest.mark.skipif(
    not HAS_TORCH or not _gpu_visible(), reason="needs a GPU build of PyTorch and a GPU"
)
def test_on_a_gpu_machine_every_device_computes_and_measure_reads_the_peak(tmp_path):
    import torch

    trial = tmp_path / "trial.py"
    trial.write_text(
        "import torch\nx = torch.empty(256 * 2**20, dtype=torch.uint8, device='cuda')\n"
    )

    result = run(
        "--json",
        "--expect-gpus",
        str(torch.cuda.device_count()),
        "--measure",
        str(trial),
        "--estimate-gib",
        "1",
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["backend"] == ("rocm" if torch.version.hip else "cuda")
    assert [d["matmul"] for d in report["devices"]] == ["ok"] * torch.cuda.device_count()
    assert all(d["total_gib"] > 0 for d in report["devices"])
    peak = report["measure"]["peaks"][0]
    assert peak["max_memory_allocated_gib"] >= 0.25
    assert peak["allocated_gib"] <= peak["reserved_gib"] <= peak["device_gib"]
    assert "device_over_estimate" in report["measure"]


# --- The contract holds when PyTorch cannot even be imported (issue 25, item 7) -----------
# A fake torch on PYTHONPATH comes before the real one: each case is a package that breaks
# the way real installs break, with its own dist-info so the version is found.


def fake_torch(root: Path, init: str, *, version: str = "2.5.1") -> Path:
    package = root / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    info = root / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    (info / "RECORD").write_text("")
    return package


def run_with(path: Path, *args, cwd=None, script=SCRIPT):
    env = {"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
        env=env,
    )


BROKEN = {
    "missing-library": (
        "raise OSError('libcudnn.so.9: cannot open shared object file: No such file or "
        "directory')\n",
        "installed but cannot load: OSError: libcudnn.so.9",
        "CUDA or ROCm matches this machine",
    ),
    "broken-install": (
        "from torch import _C  # the compiled part is gone\n",
        "installed but cannot load: ImportError",
        "reinstall PyTorch",
    ),
    "half-written": (
        "raise AttributeError(\"module 'torch' has no attribute 'version'\")\n",
        "installed but cannot load: AttributeError",
        "reinstall PyTorch",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_torch_that_cannot_load_gives_one_fail_line_and_the_right_advice(tmp_path, case):
    init, said, advice = BROKEN[case]
    fake_torch(tmp_path / "site", init)

    result = run_with(tmp_path / "site")

    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("FAIL: This PyTorch (2.5.1, at ")
    assert said in lines[-1] and advice in lines[-1]
    assert "not installed" not in lines[-1]
    assert "Traceback" not in result.stderr
    # What was found, before the FAIL line: interpreter, torch version, backend.
    assert f"interpreter   {sys.executable}" in result.stdout
    assert "torch         2.5.1" in result.stdout
    assert "backend       unknown" in result.stdout


@pytest.mark.parametrize("case", list(BROKEN))
def test_with_json_a_torch_that_cannot_load_is_still_one_json_object(tmp_path, case):
    init, said, _advice = BROKEN[case]
    fake_torch(tmp_path / "site", init)

    result = run_with(tmp_path / "site", "--json")

    assert result.returncode == 1
    report = json.loads(result.stdout)  # exactly one object: json.loads refuses any more
    assert report["ok"] is False
    assert said in report["reason"]
    assert report["torch"] == "2.5.1"
    assert report["interpreter"] == sys.executable
    assert report["torch_location"] == str(tmp_path / "site" / "torch")


def test_a_torch_folder_beside_the_script_that_shadows_pytorch_is_named(tmp_path):
    # A source checkout called torch/ next to the downloaded check: it comes first on the path.
    project = tmp_path / "project"
    (project / "torch").mkdir(parents=True)
    (project / "torch" / "__init__.py").write_text("raise ImportError('Failed to load C ext')\n")
    script = project / "kernodeck-envcheck.py"
    shutil.copy(SCRIPT, script)
    site = Path(importlib.util.find_spec("torch").origin).parents[1]

    for args in ((), ("--json",)):
        result = run_with(site, *args, cwd=project, script=script)
        assert result.returncode == 1
        reason = result.stderr.strip().splitlines()[-1]
        assert reason.startswith(f"FAIL: `import torch` loads {project / 'torch'}, not the")
        assert "Rename or move that folder" in reason
        if args:
            assert json.loads(result.stdout)["ok"] is False


def test_a_bare_torch_folder_without_pytorch_installed_is_not_called_pytorch(tmp_path):
    (tmp_path / "torch").mkdir()
    script = tmp_path / "kernodeck-envcheck.py"
    shutil.copy(SCRIPT, script)

    result = subprocess.run(
        [sys.executable, "-S", str(script), "--json"],  # -S: no site-packages, no PyTorch
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )

    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert f"finds the folder {tmp_path / 'torch'}, which is not PyTorch" in report["reason"]
