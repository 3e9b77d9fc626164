"""The checkpoint guide's example: stopped, resumed in a new process, it ends exactly where an
uninterrupted run ends; and the checkpoint's random state is what makes it so."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernodeck.sizing import standalone

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="PyTorch is not installed: .ci/run installs the CPU build (pip install torch==2.13.0)",
)
EXAMPLE = Path(standalone.__file__).with_name("checkpoint_example.py")


def example(*args):
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def full():
    """The uninterrupted run, once for the module (each process starts PyTorch afresh)."""
    return example("--steps", "30")


@pytest.mark.parametrize("stop_after", [5, 12])  # mid-epoch, and on an epoch boundary
def test_a_resumed_run_matches_an_uninterrupted_one_exactly(tmp_path, full, stop_after):
    checkpoint = str(tmp_path / "ck.pt")

    stopped = example("--steps", "30", "--stop-after", str(stop_after), "--checkpoint", checkpoint)
    resumed = example("--steps", "30", "--resume", checkpoint)

    assert stopped == {"stopped_at": stop_after, "checkpoint": checkpoint}
    assert resumed == full
    assert resumed["steps"] == 30


def test_without_its_random_state_the_resumed_run_drifts(tmp_path, full):
    import torch

    checkpoint = tmp_path / "ck.pt"
    example("--steps", "30", "--stop-after", "7", "--checkpoint", str(checkpoint))
    state = torch.load(checkpoint, weights_only=False)
    state["rng"]["torch"] = torch.Generator().manual_seed(1).get_state()
    torch.save(state, checkpoint)

    resumed = example("--steps", "30", "--resume", str(checkpoint))

    assert resumed["weights_sha256"] != full["weights_sha256"]
