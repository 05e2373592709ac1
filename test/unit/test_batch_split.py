"""The ``split`` CPU executor: a graph run as two half-batch calls at once, one inline in
the calling thread and one on a one-worker pool (fusilli/batch_split.py decides whether a
graph can; fusilli/backend/runtime.py runs it). Numerics against the reference, the plan
per op family, the variant-pack checks on the whole graph, workspaces, and the worker's
CPU placement. Timing is BENCHMARKS.md's (none is asserted here)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import (
    channels_last_conv_graph,
    channels_last_wgrad_graph,
    random_array,
    run_and_check,
    with_bias_gradient,
)

import fusilli as fs
from fusilli import reference
from fusilli.backend import runtime
from fusilli.batch_split import plan_batch_split


@pytest.fixture
def split_executor(monkeypatch):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")


def inputs_of(g: fs.Graph, rng) -> dict:
    return {t: random_array(t, rng) for t in g.input_tensors() if not t.is_scalar}


def split_names(g: fs.Graph) -> set[str] | None:
    plan, _ = plan_batch_split(g.validate())
    return None if plan is None else set(plan.split)


# ----------------------------------------------------------------------------- plans
def test_conv_bias_relu_splits_activations_and_reads_filter_and_bias_whole():
    g = channels_last_conv_graph([4, 8, 10, 10], 16, (3, 3), (1, 1), (1, 1), epilogue=True, name="plan_conv")
    intermediates = {n.output_tensors()[0].name for n in g.nodes[:2]}
    assert split_names(g) == {"x", "y", *intermediates}
    plan, why = plan_batch_split(g)
    assert plan is not None and plan.batch == 4 and plan.half == 2 and "batch 2" in why


def test_half_graph_halves_the_split_tensors_only():
    g = channels_last_conv_graph([4, 8, 10, 10], 16, (3, 3), (1, 1), (1, 1), epilogue=True, name="plan_half")
    plan, _ = plan_batch_split(g)
    half = plan.half_graph(g)
    dims = {t.name: t.dim for t in half.all_tensors() if not t.is_scalar}
    assert dims["x"] == [2, 8, 10, 10] and dims["y"] == [2, 16, 10, 10]
    assert dims["w"] == [16, 8, 3, 3] and dims["b"] == [1, 16, 1, 1]
    full = {t.name: t.stride for t in g.input_tensors()}
    assert all(t.stride == full[t.name] for t in half.input_tensors())  # the caller's halves, as laid out


@pytest.mark.parametrize(
    "build, reason",
    [
        (
            lambda g: g.reduction(g.tensor(name="x", dim=[4, 8]), mode="MAX", axes=[0], name="max"),
            "reduction 'max' mixes rows of dim 0",
        ),
        (lambda g: g.relu(g.tensor(name="x", dim=[3, 16]), name="r"), "dim 0 is 3"),
        (lambda g: g.relu(g.tensor(name="x", dim=[1, 16]), name="r"), "dim 0 is 1"),
        (lambda g: g.relu(g.tensor(name="x", dim=[2, 3]), name="r"), "not 64-byte aligned"),
        (
            lambda g: g.matmul(
                g.tensor(name="a", dim=[64, 32], stride=[1, 64]), g.tensor(name="b", dim=[32, 16]), name="mm"
            ),
            "not outermost",
        ),
    ],
    ids=["max-over-dim0", "odd", "one", "misaligned-half", "transposed-a"],
)
def test_graphs_that_cannot_split_say_why(build, reason):
    g = fs.Graph(name="no_split")
    build(g).set_output(True).set_name("out")
    plan, why = plan_batch_split(g.validate())
    assert plan is None and reason in why


def test_weight_gradient_halves_sum_into_its_output():
    """DW sums over the images: X and DY are cut, each half computes a partial DW (summed)."""
    plan, why = plan_batch_split(channels_last_wgrad_graph("plan_wgrad").validate())
    assert plan is not None and set(plan.split) == {"dy", "x"} and plan.summed == {"dw"}
    assert plan.batch == 4 and plan.summed_bytes == 8 * 8 * 9 * 4 and plan.whole_bytes == 0
    assert "the halves' partial sums of 'dw' added" in why
    half = plan.half_graph(channels_last_wgrad_graph("plan_wgrad_half").validate())
    dims = {t.name: t.dim for t in half.all_tensors()}
    assert dims["x"] == [2, 8, 6, 6] and dims["dy"] == [2, 8, 6, 6] and dims["dw"] == [8, 8, 3, 3]


def test_a_sum_over_the_batch_is_summed_too():
    plan, why = plan_batch_split(with_bias_gradient(channels_last_wgrad_graph("plan_wgrad_bias")).validate())
    assert plan is not None and plan.summed == {"dw", "db"} and set(plan.split) == {"dy", "x"}
    assert "partial sums of 'db', 'dw' added" in why
    g = fs.Graph(name="plan_sum")
    g.reduction(g.tensor(name="x", dim=[4, 64]), mode="ADD", axes=[0], name="sum").set_output(True).set_name("y")
    plan, _ = plan_batch_split(g.validate())
    assert plan is not None and plan.summed == {"y"} and set(plan.split) == {"x"}


@pytest.mark.parametrize(
    "build, reason",
    [
        (
            lambda: channels_last_wgrad_graph("no_split_bf16", io_data_type=fs.DataType.BFLOAT16),
            "output 'dw' sums over dim 0 in BFLOAT16: the halves' partial sums would be rounded",
        ),
        (
            lambda: _scaled(channels_last_wgrad_graph("no_split_read")),
            "tensor 'dw' sums over dim 0 and another node reads it",
        ),
    ],
    ids=["bf16-sum", "sum-read-by-a-node"],
)
def test_sums_that_cannot_split_say_why(build, reason):
    plan, why = plan_batch_split(build().validate())
    assert plan is None and reason in why


def _scaled(g: fs.Graph) -> fs.Graph:
    """``g`` with its DW no longer an output but scaled by a pointwise node (whose output is)."""
    (dw,) = g.output_tensors()
    dw.set_output(False).set_name("dw")
    g.mul(dw, g.tensor(name="s", dim=[1, 1, 1, 1]), name="scale").set_output(True).set_name("scaled")
    return g


def test_batchnorm_splits_in_inference_only():
    def bn(phase):
        g = fs.Graph(name=f"bn_{phase}")
        x = g.tensor(name="x", dim=[4, 16, 8, 8])
        stats = [g.tensor(name=n, dim=[16]) for n in ("scale", "bias", "mean", "var")]
        outs = g.batchnorm(x, *stats, phase=phase, epsilon=1e-5, momentum=0.1, name="bn")
        for i, t in enumerate(o for o in (outs if isinstance(outs, tuple) else (outs,)) if o is not None):
            t.set_output(True).set_name(f"o{i}")
        return g

    assert split_names(bn("INFERENCE")) == {"x", "o0"}
    plan, why = plan_batch_split(bn("TRAINING").validate())
    assert plan is None and "batchnorm 'bn'" in why


def test_matmul_splits_rows_and_batched_operands_it_carries():
    g = fs.Graph(name="mm_rows")
    g.matmul(g.tensor(name="a", dim=[64, 32]), g.tensor(name="b", dim=[32, 64]), name="mm").set_output(True).set_name(
        "c"
    )
    assert split_names(g) == {"a", "c"}  # B's dim 0 is K, even where K == M

    g = fs.Graph(name="mm_bcast")
    a, b = g.tensor(name="a", dim=[4, 16, 32]), g.tensor(name="b", dim=[1, 32, 16])
    g.matmul(a, b, name="mm").set_output(True).set_name("c")
    assert split_names(g) == {"a", "c"}


def test_pointwise_reads_broadcast_operands_whole_and_splits_per_sample_ones():
    g = fs.Graph(name="pw")
    x = g.tensor(name="x", dim=[4, 16, 4, 4])
    per_channel = g.tensor(name="pc", dim=[1, 16, 1, 1])
    per_sample = g.tensor(name="ps", dim=[4, 16, 1, 1])  # halves 128 bytes apart: aligned
    g.mul(g.add(x, per_channel, name="add"), per_sample, name="mul").set_output(True).set_name("y")
    names = split_names(g)
    assert names is not None and {"x", "ps", "y"} <= names and "pc" not in names


# ----------------------------------------------------------------------------- numerics
def test_conv_bias_relu_split_matches_reference(cpu, rng, split_executor):
    g = channels_last_conv_graph([4, 16, 12, 12], 32, (3, 3), (1, 1), (1, 1), epilogue=True, name="split_conv")
    run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == g.executor == "split"


def test_strided_conv_split_matches_reference(cpu, rng, split_executor):
    g = channels_last_conv_graph([4, 32, 16, 16], 64, (3, 3), (2, 2), (1, 1), epilogue=True, name="split_s2")
    run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split"


def test_conv_dgrad_split_matches_reference(cpu, rng, split_executor):
    g = fs.Graph(name="split_dgrad")
    dy = g.tensor(name="dy", dim=[4, 16, 10, 10], stride=fs.strides([4, 16, 10, 10], "NHWC"))
    w = g.tensor(name="w", dim=[16, 8, 3, 3], stride=fs.strides([16, 8, 3, 3], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="dgrad")
    dx.set_dim([4, 8, 10, 10]).set_stride(fs.strides([4, 8, 10, 10], "NHWC")).set_output(True).set_name("dx")
    run_and_check(g.validate(), cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split"


def test_matmul_bias_gelu_split_matches_reference(cpu, rng, split_executor):
    g = fs.Graph(name="split_mm")
    a, b = g.tensor(name="a", dim=[128, 64]), g.tensor(name="b", dim=[64, 96])
    bias = g.tensor(name="bias", dim=[1, 96])
    g.gelu(g.add(g.matmul(a, b, name="mm"), bias, name="add"), name="gelu").set_output(True).set_name("c")
    run_and_check(g.validate(), cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split"


def test_layernorm_training_split_matches_reference(cpu, rng, split_executor):
    g = fs.Graph(name="split_ln")
    x = g.tensor(name="x", dim=[32, 64])  # the stats' halves start 64 bytes apart
    scale, bias = g.tensor(name="scale", dim=[1, 64]), g.tensor(name="bias", dim=[1, 64])
    y, mean, inv = g.layernorm(x, scale, bias, phase="TRAINING", epsilon=1e-5, name="ln")
    for t, n in ((y, "y"), (mean, "mean"), (inv, "inv")):
        t.set_output(True).set_name(n)
    run_and_check(g.validate(), cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split"


def test_sdpa_with_batch_broadcast_mask_split_matches_reference(cpu, rng, split_executor):
    g = fs.Graph(name="split_sdpa")
    q, k, v = (g.tensor(name=n, dim=[2, 2, 16, 8]) for n in ("q", "k", "v"))
    mask = g.tensor(name="mask", dim=[1, 1, 16, 16])
    g.sdpa(q, k, v, mask=mask, name="attn").set_output(True).set_name("o")
    assert split_names(g) == {"q", "k", "v", "o"}
    run_and_check(g.validate(), cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split"


@pytest.mark.parametrize("bias", [False, True], ids=["dw", "dw-and-db"])
def test_weight_gradient_split_matches_reference(cpu, rng, split_executor, bias):
    """Each half's partial sums (the caller's array and the worker's scratch) add up to the
    whole's, call after call, whatever the output array held before (each call writes it)."""
    g = channels_last_wgrad_graph(f"split_wgrad_{bias}", n=4, c=16, k=32, hw=8)
    g = with_bias_gradient(g) if bias else g
    g.validate().compile(cpu)
    assert g._compiled.executor == "split" and g._compiled.split.summed == ({"dw", "db"} if bias else {"dw"})
    outputs = {t: fs.empty(t) for t in g.output_tensors()}
    for array in outputs.values():
        array[...] = 1e6
    for _ in range(3):
        inputs = inputs_of(g, rng)
        g.execute({**inputs, **outputs})
        want = reference.run(g, inputs)
        for t, got in outputs.items():
            np.testing.assert_allclose(got, want[t.name], rtol=1e-4, atol=1e-4, err_msg=t.name)


def conv_backward_graph(name: str, n: int = 4, c: int = 16, k: int = 16, hw: int = 8) -> fs.Graph:
    """A conv + bias + relu layer's backward as fusilli.torch builds it: relu's backward from the
    result, then DX, DW and the bias gradient (a sum over N, H and W)."""
    g = fs.Graph(name=name)

    def nhwc(name: str, dims: list[int]) -> fs.TensorAttr:
        return g.tensor(name=name, dim=dims, stride=fs.strides(dims, "NHWC"))

    dy, y, x, w = (
        nhwc("dy", [n, k, hw, hw]),
        nhwc("y", [n, k, hw, hw]),
        nhwc("x", [n, c, hw, hw]),
        nhwc("w", [k, c, 3, 3]),
    )
    dz = g.relu_bwd(dy, y, name="relu_bwd")
    attrs = dict(padding=[1, 1], stride=[1, 1], dilation=[1, 1])
    dx = g.conv_dgrad(dz, w, name="dgrad", **attrs)
    dx.set_dim([n, c, hw, hw]).set_stride(fs.strides([n, c, hw, hw], "NHWC")).set_output(True).set_name("dx")
    dw = g.conv_wgrad(dz, x, name="wgrad", **attrs)
    dw.set_dim([k, c, 3, 3]).set_stride(fs.strides([k, c, 3, 3], "NHWC")).set_output(True).set_name("dw")
    g.reduction(dz, mode="ADD", axes=[0, 2, 3], name="bias_grad").set_output(True).set_name("db")
    return g.validate()


def test_a_conv_layers_whole_backward_splits(cpu, rng, split_executor):
    """DX's images are cut, DW and the bias gradient summed, the filter read whole: the graph
    fusilli.torch's conv2d backward builds runs as two halves (it ran on the pool before)."""
    g = conv_backward_graph("split_conv_backward")
    plan, why = plan_batch_split(g)
    assert plan is not None and plan.summed == {"dw", "db"} and {"dy", "y", "x", "dx"} <= set(plan.split)
    assert "w" not in plan.split and plan.whole_bytes == 16 * 16 * 9 * 4
    run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split"


def test_misaligned_summed_output_goes_through_staging(cpu, rng, split_executor):
    g = channels_last_wgrad_graph("split_wgrad_misaligned", n=2, c=16, k=16, hw=8).validate()
    g.compile(cpu)
    inputs = inputs_of(g, rng)
    (dwt,) = g.output_tensors()
    raw = np.empty(fs.empty(dwt).size + 1, np.float32)[1:]  # 4 bytes off a 64-byte boundary at best
    dw = np.lib.stride_tricks.as_strided(raw, fs.empty(dwt).shape, fs.empty(dwt).strides)
    g.execute({**inputs, dwt: dw})
    np.testing.assert_allclose(dw, reference.run(g, inputs)["dw"], rtol=1e-4, atol=1e-4)


def test_repeated_split_calls_see_new_input_values(cpu, rng, split_executor):
    g = channels_last_conv_graph([4, 8, 8, 8], 8, (1, 1), (1, 1), (0, 0), name="split_repeat")
    g.compile(cpu)
    inputs = inputs_of(g, rng)
    y = fs.empty(g.output_tensors()[0])
    for _ in range(3):
        for arr in inputs.values():
            arr[...] = rng.uniform(-1, 1, arr.shape)
        g.execute({**inputs, g.output_tensors()[0]: y})
        want = reference.run(g, inputs)["y"]
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "x_dim, kernel, padding",
    [([4, 8, 8, 8], (3, 3), (1, 1)), ([1, 16, 8, 8], (1, 1), (0, 0))],
    ids=["batch-halves", "row-halves"],  # the second: plan_row_split
)
def test_misaligned_arrays_go_through_staging_and_both_halves_land(cpu, rng, split_executor, x_dim, kernel, padding):
    name = f"split_misaligned_{x_dim[0]}"
    g = channels_last_conv_graph(x_dim, 16, kernel, (1, 1), padding, epilogue=True, name=name)
    g.compile(cpu)
    inputs = {}
    for t, arr in inputs_of(g, rng).items():
        raw = np.empty(arr.size + 1, np.float32)[1:]  # 4 bytes off a 64-byte boundary at best
        view = np.lib.stride_tricks.as_strided(raw, arr.shape, arr.strides)
        view[...] = arr
        inputs[t] = view
    (yt,) = g.output_tensors()
    raw = np.empty(fs.empty(yt).size + 1, np.float32)[1:]
    y = np.lib.stride_tricks.as_strided(raw, fs.empty(yt).shape, fs.empty(yt).strides)
    g.execute({**inputs, yt: y})
    np.testing.assert_allclose(y, reference.run(g, inputs)["y"], rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- checks
def test_variant_pack_is_checked_against_the_whole_graph(cpu, rng, split_executor):
    g = channels_last_conv_graph([4, 8, 8, 8], 8, (1, 1), (1, 1), (0, 0), name="split_checks")
    g.compile(cpu)
    inputs = inputs_of(g, rng)
    (yt,) = g.output_tensors()
    half = np.zeros((2, 8, 8, 8), np.float32)
    with pytest.raises(fs.FusilliError) as e:
        g.execute({**inputs, yt: half})
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR and "[4, 8, 8, 8]" in e.value.message


def test_an_output_overlapping_the_other_halfs_input_is_refused(cpu, rng, split_executor):
    g = fs.Graph(name="split_overlap")
    g.relu(g.tensor(name="x", dim=[4, 64]), name="r").set_output(True).set_name("y")
    g.compile(cpu)
    buf = fs.empty(g.input_tensors()[0]).reshape(-1)
    buf = np.concatenate([buf, buf])  # 8 rows of 64
    x, y = buf[: 4 * 64].reshape(4, 64), buf[2 * 64 : 6 * 64].reshape(4, 64)  # y[:2] is x[2:]
    with pytest.raises(fs.FusilliError) as e:
        g.execute({"x": x, "y": y})
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR


def test_workspace_covers_both_halves(cpu, rng, split_executor):
    g = channels_last_conv_graph([4, 32, 16, 16], 64, (3, 3), (2, 2), (1, 1), epilogue=True, name="split_ws")
    g.compile(cpu)
    size = g.workspace_size
    assert size % 128 == 0  # two 64-byte aligned halves
    inputs = inputs_of(g, rng)
    (yt,) = g.output_tensors()
    y = fs.empty(yt)
    if size:
        with pytest.raises(fs.FusilliError) as e:
            g.execute({**inputs, yt: y}, workspace=np.zeros(size - 64, np.uint8))
        assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and "too small" in e.value.message
    workspace = np.zeros(size + 64, np.uint8)
    g.execute({**inputs, yt: y}, workspace=workspace)
    np.testing.assert_allclose(y, reference.run(g, inputs)["y"], rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- when and where
def big_matmul(name: str, rows: int = 8192, k: int = 64, n: int = 64) -> fs.Graph:
    # 2 * 8192 * 64 * 64 = 2^26 FLOP: above runtime.INLINE_MAX_FLOPS; A and C hold 4 MiB
    # (runtime.SPLIT_MIN_BYTES), B (16 KiB, read whole by both halves) is small next to them.
    g = fs.Graph(name=name)
    a, b = g.tensor(name="a", dim=[rows, k]), g.tensor(name="b", dim=[k, n])
    g.matmul(a, b, name="mm").set_output(True).set_name("c")
    return g.validate()


def test_auto_splits_only_on_two_cpus(monkeypatch):
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    g = big_matmul("split_auto")
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    assert runtime.choose_cpu_executor(g, "znver4") == "split"
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 8)
    assert runtime.choose_cpu_executor(g, "znver4") == "local-task"
    tiny = fs.Graph(name="split_tiny")
    tiny.relu(tiny.tensor(name="x", dim=[4, 16]), name="r").set_output(True).set_name("y")
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    assert runtime.choose_cpu_executor(tiny.validate()) == "local-sync"


def test_zen1_runs_on_the_pool(monkeypatch):
    """Zen 1 measured the split executor no faster than IREE's pool anywhere, slower on deep GEMMs
    (runtime.SPLIT_EXCLUDED_CORES): auto keeps its graphs on the pool and explain says why; the
    environment variable still forces the split."""
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    g = big_matmul("split_zen1")
    execution = runtime.cpu_execution(g, "znver1")
    assert execution.executor == "local-task" and "znver1: the split executor measured no faster" in execution.why
    assert g.explain(fs.Backend.CPU, "znver1").splitlines()[-1].startswith("execution: local-task (znver1:")
    rows = channels_last_conv_graph([1, 1024, 14, 14], 512, (1, 1), (1, 1), (0, 0), name="split_zen1_rows")
    assert runtime.cpu_execution(rows, "znver1").executor == "local-task"
    assert (
        runtime.cpu_execution(rows, "znver4").executor == "split"
    )  # a row split elsewhere (Zen 3: its filter outweighs half)
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")
    assert runtime.cpu_execution(g, "znver1").executor == "split"


@pytest.mark.parametrize(
    "graph, why",
    [
        (lambda: big_matmul("split_small", rows=2048), "bytes split < 4194304"),
        (lambda: big_matmul("split_square", rows=2048, k=2048, n=2048), "read 16777216 bytes whole"),
        (
            lambda: channels_last_conv_graph([8, 3, 224, 224], 64, (7, 7), (2, 2), (3, 3), name="split_stem"),
            "an im2col GEMM over a (7, 7) filter",
        ),
        # 2 * 8192 * 128 * 128 = 2^28 FLOP: data-tiled (cpu-matmul-data-tiling); its halves are not.
        (lambda: big_matmul("split_data_tiling", rows=8192, k=128, n=128), "would be lowered otherwise"),
    ],
    ids=["too-small", "big-whole-operand", "stem-patch-matrix", "half-below-a-rule-threshold"],
)
def test_auto_keeps_on_the_pool_what_the_split_loses(monkeypatch, graph, why):
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    g = graph()
    execution = runtime.cpu_execution(g, "x86-64-v4")  # AVX-512, no vendor: the stem is an im2col GEMM
    assert execution.executor == "local-task" and why in execution.why


def test_attention_counts_its_flops_for_the_executor(monkeypatch):
    """An attention graph's I/O can be small for its arithmetic (f16 1x8x512x64: 1 MiB, 268
    MFLOP): it goes to the pool, not inline (its node has no workload; the rules count it)."""
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    g = fs.Graph(name="sdpa_executor", io_data_type=fs.DataType.HALF)
    q, k, v = (g.tensor(name=n, dim=[1, 8, 512, 64]) for n in "qkv")
    g.sdpa(q, k, v, name="attn").set_output(True).set_name("o")
    assert runtime.choose_cpu_executor(g.validate()) == "local-task"  # batch 1: nothing to split


def test_forced_split_of_a_graph_that_cannot_runs_on_the_pool(monkeypatch, cpu, rng):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")
    g = fs.Graph(name="split_forced_max")
    g.reduction(g.tensor(name="x", dim=[4, 64]), mode="MAX", axes=[0], name="max").set_output(True).set_name("y")
    assert runtime.choose_cpu_executor(g.validate()) == "local-task"
    run_and_check(g, cpu, inputs_of(g, rng))
    assert g._compiled.executor == "local-task"


def test_explain_names_the_split(monkeypatch):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")
    text = big_matmul("split_explain").explain()
    assert text.splitlines()[-1].startswith("execution: split (two calls of batch 4096 at once")
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "local-task")
    assert big_matmul("split_explain").explain().endswith("execution: local-task (FUSILLI_CPU_EXECUTOR=local-task)")


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_worker_is_pinned_and_the_callers_affinity_is_restored(cpu, rng, split_executor):
    g = big_matmul("split_pinning")
    run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    worker = runtime.SplitWorker.get()
    assert worker.caller_cpus is not None
    (worker_cpu,) = set(os.sched_getaffinity(0)) - worker.caller_cpus
    assert worker.worker_tid is not None and os.sched_getaffinity(worker.worker_tid) == {worker_cpu}
    with open(f"/proc/self/task/{worker.worker_tid}/comm") as f:
        assert f.read().startswith("iree-worker")
    before = os.sched_getaffinity(0)
    g.execute({t: fs.empty(t) for t in (*g.input_tensors(), *g.output_tensors())})
    assert os.sched_getaffinity(0) == before


def test_an_unknown_executor_setting_is_refused_by_name(monkeypatch, cpu):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "splitt")
    g = big_matmul("split_bad_setting")
    with pytest.raises(fs.FusilliError) as e:
        g.compile(cpu)
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT
    assert "FUSILLI_CPU_EXECUTOR='splitt'" in e.value.message and "split" in e.value.message
    assert g._compiled is None


# ----------------------------------------------------------------------------- rounds
@pytest.fixture
def auto_rounds(monkeypatch):
    """``auto`` on two CPUs of a core that splits (this host may be a Zen 1), with the split's and
    the rounds' byte floors lowered to small graphs."""
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)
    monkeypatch.setattr(runtime, "SPLIT_EXCLUDED_CORES", frozenset())
    monkeypatch.setattr(runtime, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(runtime, "SPLIT_ROUNDS_MIN_BYTES", 0)


def winograd_conv(name: str, epilogue: bool = True) -> fs.Graph:
    return channels_last_conv_graph([8, 32, 28, 28], 32, (3, 3), (1, 1), (1, 1), epilogue=epilogue, name=name)


def test_rounds_run_each_half_as_calls_one_after_another(cpu, rng, auto_rounds):
    """A Winograd conv's halves run as two calls each (batch 2 a call): numerics of every image."""
    g = winograd_conv("split_rounds")
    execution = runtime.cpu_execution(g)
    assert execution.executor == "split" and execution.plan.rounds == runtime.SPLIT_ROUNDS
    assert execution.half.output_tensors()[0].dim[0] == 2
    assert "two calls of batch 2 at once, 2 after another on each side" in g.explain()
    for _ in range(2):  # new values each call reach every part (Winograd F(4x4): its rounding)
        run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-3, atol=1e-3)


def test_rounds_with_a_callers_workspace_and_misaligned_arrays(cpu, rng, auto_rounds):
    g = winograd_conv("split_rounds_ws", epilogue=False)
    g.compile(cpu)
    ins = inputs_of(g, rng)
    x = next(t for t in ins if t.name == "x")
    raw = np.empty(ins[x].size + 1, np.float32)[1:]  # 4 bytes off a 64-byte boundary at best: staged
    shifted = np.lib.stride_tricks.as_strided(raw, ins[x].shape, ins[x].strides)
    shifted[...] = ins[x]
    ins[x] = shifted
    expected = reference.run(g, ins)
    y = g.output_tensors()[0]
    out = fs.empty(y)
    workspace = np.empty(max(g.workspace_size, 1) + 64, dtype=np.uint8)
    g.execute({**ins, y: out}, workspace=workspace)
    np.testing.assert_allclose(out, expected[y.name], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "graph, arch, rounds",
    [
        (lambda: winograd_conv("rounds_yes"), None, 2),
        # A 1x1 conv is a GEMM: no transformed data (measured even).
        (lambda: channels_last_conv_graph([8, 64, 28, 28], 64, (1, 1), (1, 1), (0, 0), name="rounds_1x1"), None, 1),
        # A Winograd weight gradient's halves each write the whole DW: one call a side (Zen 3,
        # where auto splits partial sums: runtime.SPLIT_SUMMED_CORES).
        (lambda: channels_last_wgrad_graph("rounds_wgrad", n=8, c=32, k=32, hw=28).validate(), "znver3", 1),
    ],
    ids=["winograd", "gemm", "winograd-wgrad"],
)
def test_rounds_only_for_winograd_convs(auto_rounds, graph, arch, rounds):
    g = graph()
    execution = runtime.cpu_execution(g, arch)
    assert execution.executor == "split" and execution.plan.rounds == rounds
    if execution.plan.summed:
        from fusilli.backend import rules

        assert rules.lowering_summary(g.nodes, g.target(fs.Backend.CPU, arch)).startswith("cpu-conv-winograd")


def test_auto_keeps_summed_splits_that_lose_on_the_pool(auto_rounds):
    """Zen 3: a data-tiled weight gradient (each half would unpack a whole DW), and one whose halves
    fall below the chunks' 4096 positions (lowering_summary says "in chunks"), stay on the pool;
    a Winograd one splits."""
    from fusilli.backend import rules
    from fusilli.backend.targets import Target

    tiled = channels_last_wgrad_graph("summed_tiled", n=4, c=128, k=128, hw=16, kernel=1).validate()
    execution = runtime.cpu_execution(tiled, "znver3")
    assert execution.executor == "local-task" and "is cpu-conv-wgrad-data-tiling" in execution.why
    chunked = channels_last_wgrad_graph(
        "summed_chunked", n=2, c=64, k=128, hw=48, kernel=1
    ).validate()  # 4608 positions
    assert rules.lowering_summary(chunked.nodes, Target.resolve("cpu", "znver3")) == "cpu-conv-wgrad-gemm in chunks"
    execution = runtime.cpu_execution(chunked, "znver3")
    assert execution.executor == "local-task"
    assert "(cpu-conv-wgrad-gemm instead of cpu-conv-wgrad-gemm in chunks)" in execution.why
    winograd = channels_last_wgrad_graph("summed_winograd", n=8, c=32, k=32, hw=28).validate()
    assert runtime.cpu_execution(winograd, "znver3").executor == "split"
    # Other cores were not measured: their weight gradients stay on the pool (as before).
    for arch in ("znver4", "x86-64-v3"):
        execution = runtime.cpu_execution(winograd, arch)
        assert execution.executor == "local-task"
        assert "the halves' partial sums ('dw') are split only on znver3 (measured)" in execution.why


def test_rounds_need_the_bytes(monkeypatch, auto_rounds):
    monkeypatch.setattr(runtime, "SPLIT_ROUNDS_MIN_BYTES", 1 << 30)
    assert runtime.cpu_execution(winograd_conv("rounds_small")).plan.rounds == 1
