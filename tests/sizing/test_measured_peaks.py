"""The estimator against the published measured peaks of tests/sizing/measured_peaks.py.

Each peak is compared with the estimate's figure of the same kind (allocated, reserved or
device). On the held-out half (peaks the formulas were never changed against) the test
reports the median and the worst error and holds them to what they are today, so a change
that makes them worse fails; and for every peak of both halves no card the verdict calls a
fit is below the measured peak.
"""

from statistics import median

import pytest

from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import estimate
from tests.sizing.measured_peaks import FIGURES, FIT, HELD_OUT, peaks

PEAKS = peaks()
BY_KEY = {peak.key: peak for peak in PEAKS}


def predicted_bytes(peak) -> float:
    result = estimate(peak.workload)
    if peak.figure == "allocated":
        return result.allocated_bytes
    if peak.figure == "reserved":
        return result.reserved_bytes
    return result.device_bytes()


def error(peak) -> float:
    return (predicted_bytes(peak) - peak.measured_bytes) / peak.measured_bytes


def summary(split: str) -> dict:
    errors = sorted((abs(error(p)), p.key) for p in PEAKS if p.split == split)
    signed = [error(p) for p in PEAKS if p.split == split]
    return {
        "cases": len(errors),
        "median": median(e for e, _key in errors),
        "worst": errors[-1],
        "within_10": sum(1 for e, _key in errors if e <= 0.10),
        "under": sum(1 for e in signed if e < 0),
    }


def test_every_peak_says_its_source_its_figure_and_its_conditions():
    assert len(BY_KEY) == len(PEAKS)
    for peak in PEAKS:
        assert peak.figure in FIGURES, peak.key
        assert peak.unit in ("GB", "GiB"), peak.key
        assert peak.source.startswith("https://"), peak.key
        assert peak.conditions and peak.measured > 0, peak.key
        assert peak.split in (FIT, HELD_OUT), peak.key
    held_out = [p for p in PEAKS if p.split == HELD_OUT]
    assert 40 <= len(held_out) <= len(PEAKS) - 40
    assert {p.workload.mode for p in held_out} == {"inference", "training"}


def test_held_out_median_error_is_under_10_percent_and_the_worst_no_worse_than_today():
    """Today (the numbers the README quotes): 58 held-out peaks, median 2.3 %, worst 25.6 %
    (Qwen2.5-1.5B AWQ with a one-token prompt, an under-estimate: see its note), then the
    four QLoRA cases (-21 % to -22 %); the other 53 are within 8.4 %. 51 of the 58 are
    under-estimates, most by 1 to 5 %. The fit half: 63 peaks, median 2.9 %, worst 33.7 %
    (Qwen2.5-0.5B AWQ, one-token prompt). Caveat: the inference prefill term was rewritten
    from PyTorch's no-grad behaviour after a first run that showed both Qwen halves; no
    constant was fitted, but those held-out rows were seen once."""
    result = summary(HELD_OUT)
    print("held-out:", result, "fit:", summary(FIT))

    assert result["median"] < 0.10, result
    assert result["worst"][0] <= 0.26, result


@pytest.mark.parametrize("key", [p.key for p in PEAKS if p.note])
def test_the_cases_with_a_note_are_the_known_outliers(key):
    """The AWQ one-token rows of tied models are the only ones over 10 %: under-estimates the
    margin's floor covers."""
    assert error(BY_KEY[key]) < -0.10


def test_outside_10_percent_are_only_the_noted_cases_qlora_and_two_tinyllama_runs():
    """QLoRA is 18 % to 23 % short in every table (bitsandbytes' buffers are not modelled);
    LitGPT's TinyLlama full fine-tune is 10.4 % short and its all-linear LoRA 11.3 % over."""
    outside = {
        p.key: round(error(p), 3)
        for p in PEAKS
        if not p.note and p.workload.finetune != "qlora" and abs(error(p)) > 0.10
    }
    qlora = [
        error(p) for p in PEAKS if p.workload.mode == "training" and p.workload.finetune == "qlora"
    ]

    assert set(outside) <= {"litgpt-hub-tiny-llama-full", "litgpt-hub-tiny-llama-lora"}, outside
    assert all(-0.25 < e < -0.15 for e in qlora), qlora


@pytest.mark.parametrize("key", list(BY_KEY))
def test_no_card_the_verdict_calls_a_fit_is_below_the_measured_peak(key):
    """The smallest card called a fit holds the estimate plus the margin; that must hold the
    measured peak on the card (the tensors measured plus the allocator cache and context the
    estimate counts beyond them)."""
    peak = BY_KEY[key]
    result = estimate(peak.workload)
    margin = estimator.margin_for(peak.workload)
    beyond = result.device_bytes() - predicted_bytes(peak)
    measured_on_card = peak.measured_bytes + beyond

    assert estimator.with_margin(result.device_bytes(), margin) >= measured_on_card
    assert (
        estimator.verdict(
            result.device_bytes(), memory_gib=measured_on_card / estimator.GIB, margin=margin
        )
        != estimator.FITS
    )
