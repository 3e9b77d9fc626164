"""Verdicts that do not under-provision (issue 25, item 4): a margin from the estimator's
measured spread per kind of workload, wider for each unstated input that matters; no card
below the estimate called a fit; "measure it" with a command argparse accepts."""

import re

import pytest
from django.urls import reverse

from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import GIB, Workload
from kernodeck.sizing.presets import PRESETS
from kernodeck.sizing.standalone import envcheck
from tests.factories import api_post, make_offer

LLAMA31_8B = PRESETS["llama-3.1-8b"][1]


def test_training_spreads_wider_than_inference_and_qlora_widest():
    inference = estimator.margin_for(Workload(LLAMA31_8B, attention="flash"))
    lora = estimator.margin_for(
        Workload(LLAMA31_8B, mode="training", finetune="lora", attention="flash")
    )
    qlora = estimator.margin_for(
        Workload(
            LLAMA31_8B, mode="training", finetune="qlora", precision="int4", attention="flash"
        )
    )

    assert inference < lora < qlora


def test_an_unstated_input_that_matters_widens_the_margin_and_is_named():
    stated = Workload(LLAMA31_8B, mode="training", sequence_length=4096, attention="sdpa")
    unstated = Workload(LLAMA31_8B, mode="training", sequence_length=4096)

    found = [u for u in estimator.unstated_inputs(unstated) if u.raises]

    assert [u.name for u in found] == ["attention"]
    assert found[0].assumed == "sdpa" and found[0].alternative == "eager"
    assert found[0].per_gpu_bytes > estimator.estimate(unstated).per_gpu_bytes
    assert estimator.margin_for(unstated) > estimator.margin_for(stated)
    assert not any(u.raises for u in estimator.unstated_inputs(stated))


def test_an_unstated_input_that_changes_little_does_not_widen_it():
    # 64 tokens: eager scores are a few MiB against 15 GiB of weights.
    w = Workload(LLAMA31_8B, sequence_length=64)

    assert estimator.unstated_inputs(w) == ()
    assert estimator.margin_for(w) == estimator.MARGINS["inference"]


def test_eager_attention_keeps_the_scores_of_every_layer_in_training():
    base = Workload(LLAMA31_8B, mode="training", sequence_length=2048, attention="sdpa")
    eager = estimator.estimate(Workload(**{**base.__dict__, "attention": "eager"}))
    sdpa = estimator.estimate(base)

    # 32 layers x 32 heads x 2048^2 x (scores + softmax, 2 bytes each).
    assert eager.per_gpu["activations"] - sdpa.per_gpu["activations"] == pytest.approx(
        32 * 32 * 2048 * 2048 * 4
    )


@pytest.mark.parametrize("memory_factor", [0.6, 0.9, 0.99, 1.0, 1.1, 1.3, 2.0])
def test_no_card_below_the_estimate_is_ever_a_fit(memory_factor):
    w = Workload(LLAMA31_8B, mode="training", finetune="lora")
    need = estimator.estimate(w).per_gpu_bytes
    margin = estimator.margin_for(w)
    memory_gib = need * memory_factor / GIB

    verdict = estimator.verdict(need, memory_gib=memory_gib, margin=margin)

    if memory_factor < 1:
        assert verdict == estimator.DOES_NOT_FIT
    elif memory_factor < 1 + margin:
        assert verdict == estimator.MEASURE
    else:
        assert verdict == estimator.FITS


@pytest.mark.django_db
def test_a_card_between_the_estimate_and_the_margin_says_measure_it(client):
    w = Workload(LLAMA31_8B, sequence_length=64)
    need = estimator.estimate(w).per_gpu_bytes / GIB  # about 15.6 GiB, margin 15 %
    make_offer(slug="tight", gpu_model="Tight 17 GB", memory_gib=17)
    make_offer(slug="small", gpu_model="Small 12 GB", memory_gib=12)
    make_offer(slug="roomy", gpu_model="Roomy 24 GB", memory_gib=24)
    assert need < 17 < need * 1.15

    body = api_post(client, "/sizing", {"preset": "llama-3.1-8b", "sequence_length": 64}).json()

    by_slug = {r["offer"]: r for r in body["recommendations"]}
    assert by_slug["roomy"]["verdict"] == "fits" and by_slug["roomy"]["fits_one_gpu"]
    assert by_slug["tight"]["verdict"] == "measure"
    assert by_slug["tight"]["fits_one_gpu"] is False
    assert "kernodeck-envcheck --measure train.py --estimate-gib" in by_slug["tight"]["note"]
    assert by_slug["small"]["verdict"] == "does_not_fit"
    # Fits as asked first; then holding it when sharded (2 x 12 GB, with the margin); then
    # "measure it", which a trial may or may not confirm.
    assert [r["offer"] for r in body["recommendations"]] == ["roomy", "small", "tight"]


@pytest.mark.django_db
def test_an_offer_whose_verdict_depends_on_the_unstated_input_says_so(client):
    # Training at 4096 tokens: eager attention adds 16 GiB of scores.
    payload = {"preset": "llama-3.1-8b", "mode": "training", "sequence_length": 4096}
    base = Workload(LLAMA31_8B, mode="training", sequence_length=4096)
    need = estimator.estimate(base).per_gpu_bytes / GIB
    margin = estimator.margin_for(base)
    make_offer(slug="edge", gpu_model="Edge", memory_gib=int(need * (1 + margin)) + 1)

    body = api_post(client, "/sizing", payload).json()

    edge = body["recommendations"][0]
    assert edge["verdict"] == "fits"
    assert "With attention = eager: does not fit." in edge["note"]
    assert body["unstated_inputs"][0]["widens_margin"] is True


def _command_on(page: str) -> list[str]:
    line = re.search(r"kernodeck-envcheck --measure train\.py --estimate-gib ([^\s<]+)", page)
    assert line, "no envcheck command on the page"
    return ["--measure", __file__, "--estimate-gib", line.group(1)]


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["es", "en"])
def test_the_pages_envcheck_command_is_accepted_by_envcheck(client, language):
    make_offer(slug="h100", gpu_model="H100 80 GB", memory_gib=80)
    page = client.get(
        reverse("sizing:estimate"),
        {
            "preset": "llama-3.1-8b",
            "mode": "inference",
            "precision": "bf16",
            "batch_size": "1",
            "sequence_length": "2048",
            "optimizer": "adamw",
            "finetune": "full",
            "gpus": "1",
        },
        HTTP_ACCEPT_LANGUAGE=language,
    ).content.decode()

    args = envcheck.parse_args(_command_on(page))

    expected = estimator.estimate(Workload(LLAMA31_8B)).per_gpu_bytes / GIB
    assert args.estimate_gib == pytest.approx(expected, abs=0.01)


def test_envcheck_also_takes_a_decimal_comma():
    args = envcheck.parse_args(["--measure", __file__, "--estimate-gib", "18,6"])

    assert args.estimate_gib == 18.6
