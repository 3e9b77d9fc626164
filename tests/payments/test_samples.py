"""The API samples are the repository's own files, and loopback handlers fail the test."""

import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.loopback import SAMPLES_DIR, HandlerError, LoopbackServer, sample

TESTS = Path(__file__).resolve().parents[1]
SAMPLE_FILES = sorted(
    path.relative_to(SAMPLES_DIR).as_posix() for path in SAMPLES_DIR.rglob("*.json")
)

# Run in a copy of tests/ alone: load every sample through the suite's loader and say where
# each shape is documented.
LOAD_EVERY_SAMPLE = """
import json, sys
from tests.loopback import SAMPLES_DIR, sample
names = json.loads(sys.argv[1])
docs = {name: sample(name)["documentation"] for name in names}
print(json.dumps({"dir": str(SAMPLES_DIR), "docs": docs}))
"""


def test_the_samples_live_in_the_repository():
    assert SAMPLES_DIR == TESTS / "samples"
    providers = {name.split("/")[0] for name in SAMPLE_FILES}
    assert providers == {"esplora", "ethereum", "tron", "solana", "prices"}


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_each_sample_names_where_its_shape_is_documented(name):
    data = sample(name)

    assert {"documentation", "notes", "request", "response"} <= set(data)
    assert data["documentation"].startswith("https://")
    assert data["notes"].startswith("Kernodeck's own data.")


def test_the_loader_reads_every_sample_from_a_copy_with_nothing_beside_it(tmp_path):
    clone = tmp_path / "clone"  # its parent holds nothing else: no shared/ folder beside it
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(TESTS, clone / "tests", ignore=ignore)

    run = subprocess.run(
        [sys.executable, "-c", LOAD_EVERY_SAMPLE, json.dumps(SAMPLE_FILES)],
        cwd=clone,
        env={"PYTHONPATH": str(clone), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert run.returncode == 0, run.stderr
    loaded = json.loads(run.stdout)
    assert loaded["dir"] == str(clone / "tests" / "samples")
    assert sorted(loaded["docs"]) == SAMPLE_FILES
    assert all(url.startswith("https://") for url in loaded["docs"].values())


def test_a_missing_sample_is_an_error_not_a_skip():
    with pytest.raises(FileNotFoundError):
        sample("esplora/no-such-answer.json")


def get(server: LoopbackServer, path: str) -> int:
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_handler_that_fails_answers_500_and_fails_the_test_in_its_own_thread():
    def broken(request):
        assert request.query.get("ok") == "yes", "the handler's own check"
        return 200, {}, {}

    server = LoopbackServer()
    server.route("GET", "/check", handler=broken)

    assert get(server, "/check?ok=no") == 500  # an answer, not a dropped connection
    with pytest.raises(HandlerError, match=r"1 loopback handler error.*the handler's own check"):
        server.close()


def test_a_skip_in_a_handler_is_an_answer_and_a_failure_not_a_dropped_connection():
    def skipping(request):
        pytest.skip("nothing to answer with")

    skipped = pytest.raises(HandlerError, match="Skipped: nothing to answer with")
    with skipped as raised, LoopbackServer() as server:
        server.otherwise(skipping)
        assert get(server, "/anything") == 500

    assert "while answering GET /anything" in raised.value.__cause__.__notes__


def test_errors_provoked_on_purpose_are_taken_and_do_not_fail():
    with LoopbackServer() as server:
        server.route("GET", "/boom", handler=lambda request: 1 / 0)

        assert get(server, "/boom") == 500
        [error] = server.take_handler_errors()

    assert isinstance(error, ZeroDivisionError)


def test_the_tests_own_failure_is_reported_first_with_the_handler_error_noted():
    with pytest.raises(KeyError) as raised, LoopbackServer() as server:
        server.route("GET", "/boom", handler=lambda request: 1 / 0)
        get(server, "/boom")
        raise KeyError("the test's own failure")

    assert any("ZeroDivisionError" in note for note in raised.value.__notes__)
