"""Properties the estimate must keep for any architecture and workload."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from kernodeck.sizing import estimator
from kernodeck.sizing.estimator import Architecture, Workload


@st.composite
def architectures(draw):
    kv_heads = draw(st.integers(1, 16))
    groups = draw(st.integers(1, 8))
    experts = draw(st.integers(1, 8))
    return Architecture(
        layers=draw(st.integers(1, 96)),
        hidden_size=draw(st.integers(64, 16384)),
        intermediate_size=draw(st.integers(64, 65536)),
        attention_heads=kv_heads * groups,
        kv_heads=kv_heads,
        head_dim=draw(st.sampled_from([32, 64, 128, 256])),
        vocab_size=draw(st.integers(1000, 300_000)),
        experts=experts,
        experts_per_token=draw(st.integers(1, experts)),
        gated_mlp=draw(st.booleans()),
        tied_embeddings=draw(st.booleans()),
    )


@st.composite
def workloads(draw):
    mode = draw(st.sampled_from(estimator.MODES))
    finetune = draw(st.sampled_from(estimator.FINETUNES))
    if mode == "training" and finetune == "qlora":
        precision = "int4"
    elif mode == "training" and finetune == "full":
        precision = draw(st.sampled_from(estimator.FULL_TRAINING_PRECISIONS))
    else:
        precision = draw(st.sampled_from(list(estimator.PRECISION_BYTES)))
    return Workload(
        architecture=draw(architectures()),
        mode=mode,
        precision=precision,
        batch_size=draw(st.integers(1, 64)),
        sequence_length=draw(st.integers(1, 32768)),
        optimizer=draw(st.sampled_from(estimator.OPTIMIZERS)),
        finetune=finetune,
        gradient_checkpointing=draw(st.booleans()),
        gpus=draw(st.integers(1, 16)),
    )


def per_gpu(w):
    return estimator.estimate(w).per_gpu_bytes


@settings(max_examples=150, deadline=None)
@given(workloads(), st.integers(1, 64))
def test_memory_grows_with_the_batch(w, more):
    assert per_gpu(replace(w, batch_size=w.batch_size + more)) > per_gpu(w)


@settings(max_examples=150, deadline=None)
@given(workloads(), st.integers(1, 8192))
def test_memory_grows_with_the_sequence(w, more):
    assert per_gpu(replace(w, sequence_length=w.sequence_length + more)) > per_gpu(w)


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_memory_never_shrinks_with_more_bytes_per_value(w):
    allowed = list(estimator.PRECISION_BYTES)
    if w.mode == "training" and w.finetune == "full":
        allowed = list(estimator.FULL_TRAINING_PRECISIONS)
    elif w.mode == "training" and w.finetune == "qlora":
        allowed = ["int4"]
    # Compare every pair whose bytes per value differ (fp8 and int8 both take one byte).
    for low in allowed:
        for high in allowed:
            if estimator.PRECISION_BYTES[low] < estimator.PRECISION_BYTES[high]:
                assert per_gpu(replace(w, precision=low)) <= per_gpu(replace(w, precision=high))
                assert estimator.weight_bytes(w.architecture, low) < estimator.weight_bytes(
                    w.architecture, high
                )


@settings(max_examples=150, deadline=None)
@given(workloads(), st.integers(2, 16))
def test_sharding_over_n_gpus_divides_the_sharded_parts(w, n):
    one = estimator.estimate(replace(w, gpus=1))
    many = estimator.estimate(replace(w, gpus=n))
    for part in estimator.SHARDED_PARTS:
        assert abs(many.per_gpu[part] * n - one.per_gpu[part]) <= 1e-6 * max(1, one.per_gpu[part])
    assert many.per_gpu["activations"] == one.per_gpu["activations"]
    assert many.per_gpu_bytes <= one.per_gpu_bytes


@settings(max_examples=100, deadline=None)
@given(workloads())
def test_the_parts_add_up_and_none_is_negative(w):
    result = estimator.estimate(w)
    assert all(value >= 0 for value in result.per_gpu.values())
    assert abs(sum(result.per_gpu.values()) - result.per_gpu_bytes) < 1
    assert result.total_bytes >= result.per_gpu_bytes
