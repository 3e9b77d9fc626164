"""The estimate says which number it is (issue 25, item 1): allocated, reserved and device per
GPU with their breakdowns; the verdict uses the device figure with the card's context."""

import pytest

from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import GIB, Workload
from kernodeck.sizing.presets import PRESETS
from tests.factories import api_post, make_offer

LLAMA31_8B = PRESETS["llama-3.1-8b"][1]


def test_three_figures_nest_and_add_up():
    e = estimator.estimate(Workload(LLAMA31_8B, mode="training", finetune="lora"))
    figures = e.figures_gib()

    tensors = sum(figures["allocated"]["parts"].values())
    assert figures["allocated"]["gib"] == pytest.approx(tensors)
    assert figures["reserved"]["gib"] == pytest.approx(
        figures["allocated"]["gib"] + figures["reserved"]["parts"]["allocator_cache"]
    )
    assert figures["device"]["gib"] == pytest.approx(figures["reserved"]["gib"] + 0.5)
    assert figures["allocated"]["gib"] < figures["reserved"]["gib"] < figures["device"]["gib"]
    # The device figure with the usual context is the per-GPU figure clients already read.
    assert e.device_bytes() == pytest.approx(e.per_gpu_bytes)


def test_a_v100_counts_its_measured_context():
    assert estimator.context_bytes_for("Tesla V100-SXM2 32 GB") == 1.3 * GIB
    assert estimator.context_bytes_for("H100 80 GB") == estimator.CONTEXT_BYTES
    assert estimator.context_bytes_for("V1000") == estimator.CONTEXT_BYTES


@pytest.mark.django_db
def test_the_api_gives_the_three_figures_and_keeps_the_old_fields(client):
    body = api_post(client, "/sizing", {"preset": "llama-3.1-8b"}).json()

    assert body["allocated_gib"] < body["reserved_gib"] < body["device_gib"]
    assert body["device_gib"] == body["per_gpu_gib"]
    assert set(body["figures"]) == {"allocated", "reserved", "device"}
    assert set(body["figures"]["allocated"]["parts"]) == {
        "weights",
        "kv_cache",
        "activations",
        "gradients",
        "optimizer",
    }
    assert set(body["figures"]["device"]["parts"]) == {"reserved", "context"}
    assert "breakdown" in body and "overhead" in body["breakdown"]


@pytest.mark.django_db
def test_the_verdict_uses_the_cards_own_context(client):
    margin = estimator.margin_for(Workload(LLAMA31_8B, sequence_length=64, attention="sdpa"))
    # A 24 GB card; grow the batch until the default 0.5 GiB context calls it a fit with the
    # margin but the V100's measured 1.3 GiB does not.
    memory = 24
    batch = 1
    while True:
        w2 = Workload(LLAMA31_8B, sequence_length=64, attention="sdpa", batch_size=batch)
        e2 = estimator.estimate(w2)
        if (
            e2.device_bytes() * (1 + margin)
            <= memory * GIB
            < e2.device_bytes(1.3 * GIB) * (1 + margin)
        ):
            break
        batch += 1
        assert batch < 400
    make_offer(slug="v100", gpu_model="Tesla V100 32 GB", memory_gib=memory)
    make_offer(slug="other", gpu_model="Other 32 GB", memory_gib=memory)

    payload = {
        "preset": "llama-3.1-8b",
        "sequence_length": 64,
        "attention": "sdpa",
        "batch_size": batch,
    }
    body = api_post(client, "/sizing", payload).json()

    by_slug = {r["offer"]: r for r in body["recommendations"]}
    assert by_slug["other"]["verdict"] == "fits"
    assert by_slug["v100"]["verdict"] == "measure"
    assert by_slug["v100"]["context_gib"] == 1.3
    assert by_slug["v100"]["device_gib"] == pytest.approx(body["device_gib"] + 0.8, abs=0.02)
