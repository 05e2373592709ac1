"""The ``split`` CPU executor's row split: a batch-1 graph whose output rows each read one
input row (1x1 unpadded convs whose halves line up, 1x1 stride-1 data gradients, pointwise ops) runs as two calls over half
its rows (H) at once (fusilli/batch_split.py ``plan_row_split``). Plans, numerics against the
reference (misaligned arrays: test_batch_split.py's staging test), and when ``auto`` takes it. Timing is BENCHMARKS.md's (none is asserted here)."""

from __future__ import annotations

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
from fusilli.batch_split import plan_batch_split, plan_row_split


@pytest.fixture
def split_executor(monkeypatch):
    monkeypatch.setenv("FUSILLI_CPU_EXECUTOR", "split")


@pytest.fixture
def auto_on_two_cpus(monkeypatch):
    monkeypatch.delenv("FUSILLI_CPU_EXECUTOR", raising=False)
    monkeypatch.setattr(runtime, "usable_cpus", lambda: 2)


def inputs_of(g: fs.Graph, rng) -> dict:
    return {t: random_array(t, rng) for t in g.input_tensors() if not t.is_scalar}


# ----------------------------------------------------------------------------- plans
def test_1x1_conv_bias_relu_splits_its_rows():
    g = channels_last_conv_graph([1, 16, 12, 10], 24, (1, 1), (1, 1), (0, 0), epilogue=True, name="rows_plan")
    assert plan_batch_split(g)[0] is None  # batch 1
    plan, why = plan_row_split(g)
    intermediates = {n.output_tensors()[0].name for n in g.nodes[:2]}
    assert plan is not None and plan.axis == 2 and plan.batch == 12 and plan.half == 6
    assert set(plan.split) == {"x", "y", *intermediates} and "6 of its 12 rows" in why
    half = plan.half_graph(g)
    dims = {t.name: t.dim for t in half.all_tensors() if not t.is_scalar}
    assert dims["x"] == [1, 16, 6, 10] and dims["y"] == [1, 24, 6, 10]
    assert dims["w"] == [24, 16, 1, 1] and dims["b"] == [1, 24, 1, 1]  # read whole
    strides = {t.name: t.stride for t in half.input_tensors()}
    assert strides["x"] == fs.strides([1, 16, 6, 10], "NHWC")  # the caller's half, as laid out


def test_strided_1x1_conv_cuts_each_tensor_along_its_own_rows():
    # Stride 2 over 12 rows: input rows 0-5 feed output rows 0-2 and rows 6-11 rows 3-5.
    g = channels_last_conv_graph([1, 16, 12, 8], 24, (1, 1), (2, 2), (0, 0), epilogue=True, name="rows_s2_plan")
    plan, why = plan_row_split(g)
    assert plan is not None and plan.axis == 2 and plan.batch == 6 and "3 of its 6 rows" in why, why
    half = plan.half_graph(g)
    dims = {t.name: t.dim for t in half.all_tensors() if not t.is_scalar}
    assert dims["x"] == [1, 16, 6, 8] and dims["y"] == [1, 24, 3, 4]
    assert {plan.half_of(t) for t in g.input_tensors() if t.name == "x"} == {6}
    strides = {t.name: t.stride for t in half.input_tensors()}
    assert strides["x"] == fs.strides([1, 16, 6, 8], "NHWC")


@pytest.mark.parametrize(
    "graph, reason",
    [
        (
            lambda: channels_last_conv_graph([1, 8, 12, 12], 8, (3, 3), (1, 1), (1, 1), name="rows_3x3"),
            "mixes rows of H",
        ),
        (
            # Stride 2 over 10 rows: the first 5 input rows feed output rows 0-2, 3 of its 5.
            lambda: channels_last_conv_graph([1, 8, 10, 12], 8, (1, 1), (2, 2), (0, 0), name="rows_s2"),
            "mixes rows of H",
        ),
        (
            lambda: channels_last_conv_graph([1, 8, 12, 12], 8, (1, 1), (1, 1), (1, 1), name="rows_pad"),
            "mixes rows of H",
        ),
        (lambda: channels_last_conv_graph([1, 8, 11, 12], 8, (1, 1), (1, 1), (0, 0), name="rows_odd"), "H is 11"),
        (lambda: channels_last_conv_graph([2, 8, 12, 12], 8, (1, 1), (1, 1), (0, 0), name="rows_b2"), "has batch 2"),
    ],
    ids=["3x3", "stride-2", "padded", "odd-H", "batch-2"],
)
def test_graphs_whose_rows_cannot_split_say_why(graph, reason):
    plan, why = plan_row_split(graph())
    assert plan is None and reason in why, why


def test_nchw_rows_are_not_dense_halves():
    g = fs.Graph(name="rows_nchw")
    x = g.tensor(name="x", dim=[1, 8, 12, 12], stride=fs.strides([1, 8, 12, 12], "NCHW"))
    g.relu(x, name="r").set_output(True).set_name("y")
    plan, why = plan_row_split(g.validate())
    assert plan is None and "H of tensor 'x' is not outermost in memory" in why


def _dgrad_graph(name: str, c: int, h: int, k: int, stride: int = 1, epilogue: bool = False) -> fs.Graph:
    """DX[1, c, h, h] of a 1x1 conv of ``stride``, channels-last (with ``epilogue``: relu(DX))."""
    g = fs.Graph(name=name)
    out = (h - 1) // stride + 1
    dy = g.tensor(name="dy", dim=[1, k, out, out], stride=fs.strides([1, k, out, out], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, 1, 1], stride=fs.strides([k, c, 1, 1], "NHWC"))
    dx = g.conv_dgrad(dy, w, padding=[0, 0], stride=[stride, stride], dilation=[1, 1], name="dgrad")
    dx.set_dim([1, c, h, h]).set_stride(fs.strides([1, c, h, h], "NHWC"))
    if epilogue:
        dx = g.relu(dx, name="relu")
    dx.set_output(True).set_name("dx")
    return g.validate()


def test_1x1_dgrad_splits_its_rows_and_a_strided_one_does_not():
    # DX row i reads DY row i only: DY and DX are cut, W read whole.
    plan, why = plan_row_split(_dgrad_graph("rows_dgrad_plan", 16, 12, 24))
    assert plan is not None and plan.axis == 2 and set(plan.split) == {"dy", "dx"} and "6 of its 12 rows" in why
    plan, why = plan_row_split(_dgrad_graph("rows_dgrad_s2", 16, 12, 24, stride=2))
    assert plan is None and "conv_dgrad 'dgrad' mixes rows of H" in why


def _wgrad_graph(name: str, c: int, h: int, k: int, stride: int = 1, kernel: int = 1, bias: bool = False) -> fs.Graph:
    """DW[k, c, kernel, kernel] of a batch-1 channels-last conv of ``stride`` (``bias``: and DY's sum
    over N, H and W, a bias gradient)."""
    g = channels_last_wgrad_graph(name, n=1, c=c, k=k, hw=h, kernel=kernel, stride=stride)
    return (with_bias_gradient(g) if bias else g).validate()


def test_1x1_wgrad_sums_its_row_halves():
    # DY row i pairs with X row stride * i: each half of the rows gives a partial DW.
    plan, why = plan_row_split(_wgrad_graph("rows_wgrad_plan", 16, 12, 24))
    assert plan is not None and plan.axis == 2 and set(plan.split) == {"dy", "x"} and plan.summed == {"dw"}
    assert plan.batch == 12 and "6 of its 12 rows" in why and "partial sums of 'dw' added" in why
    strided = _wgrad_graph("rows_wgrad_s2", 16, 12, 24, stride=2)
    plan, why = plan_row_split(strided)
    assert plan is not None and plan.batch == 12  # every output summed: the extent is X's rows
    dims = {t.name: t.dim for t in plan.half_graph(strided).all_tensors()}
    assert dims["x"] == [1, 16, 6, 12] and dims["dy"] == [1, 24, 3, 6] and dims["dw"] == [24, 16, 1, 1]
    plan, why = plan_row_split(_wgrad_graph("rows_wgrad_bias", 16, 12, 24, bias=True))
    assert plan is not None and plan.summed == {"dw", "db"}
    plan, why = plan_row_split(_wgrad_graph("rows_wgrad_3x3", 16, 12, 24, kernel=3))
    assert plan is None and "conv_wgrad 'wgrad' mixes rows of H" in why
    plan, why = plan_row_split(_wgrad_graph("rows_wgrad_s2_odd", 16, 10, 24, stride=2))
    assert plan is None and "conv_wgrad 'wgrad' mixes rows of H" in why  # 10 rows: halves of 5 and 2.5


def test_pointwise_operand_carrying_h_without_a_dim_2_cannot_split():
    g = fs.Graph(name="rows_rank3")
    x = g.tensor(name="x", dim=[1, 8, 12, 12], stride=fs.strides([1, 8, 12, 12], "NHWC"))
    s = g.tensor(name="s", dim=[8, 12, 12])  # right-aligned: its dim 1 is the output's H
    g.add(x, s, name="add").set_output(True).set_name("y")
    plan, why = plan_row_split(g.validate())
    assert plan is None and "pointwise 'add' mixes rows of H" in why


# ----------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("epilogue", [False, True])
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_1x1_conv_row_split_matches_reference(cpu, rng, split_executor, epilogue, stride):
    # 24 rows: a multiple of 2 * stride for each stride, so every case splits (width 12 odd
    # after stride 3 = 4 columns; the columns are never cut).
    g = channels_last_conv_graph(
        [1, 32, 24, 12], 48, (1, 1), (stride, stride), (0, 0), epilogue=epilogue, name=f"rows_num_s{stride}"
    )
    run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split" and g._compiled.split.axis == 2


@pytest.mark.parametrize("epilogue", [False, True])
def test_1x1_dgrad_row_split_matches_reference(cpu, rng, split_executor, epilogue):
    g = _dgrad_graph(f"rows_dgrad_num_{epilogue}", 48, 14, 32, epilogue=epilogue)
    run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split" and g._compiled.split.axis == 2


@pytest.mark.parametrize(
    "stride, bias", [(1, False), (2, False), (1, True)], ids=["stride-1", "stride-2", "with-bias-gradient"]
)
def test_1x1_wgrad_row_split_matches_reference(cpu, rng, split_executor, stride, bias):
    g = _wgrad_graph(f"rows_wgrad_num_{stride}_{bias}", 32, 16, 48, stride=stride, bias=bias)
    for _ in range(2):  # the worker's partial sums land in its scratch anew each call
        run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)
    assert g._compiled.executor == "split" and g._compiled.split.axis == 2 and "dw" in g._compiled.split.summed


def test_row_split_calls_see_new_input_values(cpu, rng, split_executor):
    g = channels_last_conv_graph([1, 16, 8, 8], 16, (1, 1), (1, 1), (0, 0), epilogue=True, name="rows_repeat")
    g.compile(cpu)
    (yt,) = g.output_tensors()
    for _ in range(3):
        inputs = inputs_of(g, rng)
        y = fs.empty(yt)
        g.execute({**inputs, yt: y})
        np.testing.assert_allclose(y, reference.run(g, inputs)["y"], rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- when
def test_auto_row_splits_a_batch_1_1x1_conv_on_two_cpus(auto_on_two_cpus):
    # ResNet-50's 1x1 1x64x56x56->64: 25.7 MFLOP, above the inline threshold.
    g = channels_last_conv_graph([1, 64, 56, 56], 64, (1, 1), (1, 1), (0, 0), name="rows_auto")
    execution = runtime.cpu_execution(g, "znver4")
    assert execution.executor == "split" and "28 of its 56 rows" in execution.why
    assert g.explain(fs.Backend.CPU, "znver4").endswith("split along H))")
    # ResNet-50's 1x1 stride-2 1x512x28x28->1024: each half reads 14 input rows for 7 output rows.
    strided = channels_last_conv_graph([1, 512, 28, 28], 1024, (1, 1), (2, 2), (0, 0), name="rows_auto_s2")
    execution = runtime.cpu_execution(strided, "znver4")
    assert execution.executor == "split" and "7 of its 14 rows" in execution.why
    # 1x256x56x56->256: 784 GEMM rows take the explicit GEMM; its halves' 392 would not by their
    # own size, but on AMD's AVX-512 cores a half is lowered as its whole (rules.lowered_as_parts).
    # (With 512 output channels the halves take it by their own size: the filter's rows are written
    # apart there, rules.CPU_CONV_GEMM_MIN_ROWS_1X1_PADDED.)
    strided = channels_last_conv_graph([1, 256, 56, 56], 256, (1, 1), (2, 2), (0, 0), name="rows_auto_s2_gemm")
    execution = runtime.cpu_execution(strided, "znver4")
    assert execution.executor == "split" and execution.half._lowered_as_parts == 2
    assert "each half lowered as the whole graph (by its own size: cpu-conv-channels-last-linalg" in strided.explain(
        fs.Backend.CPU, "znver4"
    )
    assert "linalg.matmul" not in execution.half.mlir("optimized", fs.Backend.CPU, "znver4")  # the strided view
    assert "compilation_info" in execution.half.mlir(
        "optimized", fs.Backend.CPU, "znver4"
    )  # the GEMM's, not data tiling
    # As AVX2 code (measured slower split) the half keeps its own size's lowering: no split.
    execution = runtime.cpu_execution(strided, "x86-64-v3")
    assert execution.executor == "local-task" and "would be lowered otherwise" in execution.why


def test_a_row_split_half_is_lowered_as_its_whole():
    from fusilli.backend import rules
    from fusilli.backend.targets import Target

    g = channels_last_conv_graph([1, 64, 56, 56], 32, (1, 1), (2, 2), (0, 0), name="rows_whole")
    half = plan_row_split(g)[0].half_graph(g)
    assert half._lowered_as_parts == 2 and "lowered_as_parts" in half.to_dict()
    assert "lowered_as_parts" not in g.to_dict()
    assert fs.Graph.from_json(half.to_json())._lowered_as_parts == 2  # its JSON round-trips
    bad = dict(half.to_dict(), lowered_as_parts=0)
    with pytest.raises(fs.FusilliError, match=r"lowered_as_parts"):
        fs.Graph.from_json(bad)
    # The same shape as a user's graph is another cache entry (it is lowered by its own size).
    own = channels_last_conv_graph([1, 64, 28, 56], 32, (1, 1), (2, 2), (0, 0), name="rows_whole")
    assert own.key(fs.Backend.CPU, "znver4") != half.key(fs.Backend.CPU, "znver4")
    znver4, v3 = Target.resolve("cpu", "znver4"), Target.resolve("cpu", "x86-64-v3")
    # 392 GEMM rows: below the strided 1x1 GEMM's 512 (stride-1 ones on AMD AVX-512 take it from 49)
    problem = rules.problem_of(half.nodes[0])
    assert rules.choose(problem, znver4, "algorithm").rule is not rules.CPU_CONV_IM2COL_GEMM
    with rules.lowered_as_parts(2):
        assert rules.choose(problem, znver4, "algorithm").rule is rules.CPU_CONV_IM2COL_GEMM
        assert rules.choose(problem, v3, "algorithm").rule is not rules.CPU_CONV_IM2COL_GEMM  # not measured there
    assert rules.choose(problem, znver4, "algorithm").rule is not rules.CPU_CONV_IM2COL_GEMM  # reset on exit


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_numerics_of_halves_lowered_as_their_whole(cpu, rng, split_executor, monkeypatch, stride):
    """The split's halves with the whole's GEMM, wherever the tests run (the host's target taken in)."""
    from fusilli.backend import rules, targets
    from fusilli.backend.targets import Target

    here = (rules.vector_isa(Target.resolve("cpu")), targets.cpu_vendor(targets.host_cpu()) or "")
    monkeypatch.setattr(rules, "LOWERED_AS_WHOLE_TARGETS", {here})
    x_dim = [1, 64, 28 * stride[0], 28 * stride[1]]
    g = channels_last_conv_graph(x_dim, 32, (1, 1), stride, (0, 0), epilogue=True, name=f"rows_whole_num{stride[0]}")
    half = plan_row_split(g)[0].half_graph(g)
    with rules.lowered_as_parts(2):
        lowering = rules.lowering_summary(half.nodes, half.target())
    assert lowering == rules.lowering_summary(g.nodes, g.target())
    run_and_check(g, cpu, inputs_of(g, rng), rtol=1e-4, atol=1e-4)


def test_auto_keeps_a_row_split_that_writes_more_than_it_reads_on_the_pool(auto_on_two_cpus):
    g = channels_last_conv_graph([1, 64, 56, 56], 256, (1, 1), (1, 1), (0, 0), name="rows_wide")
    execution = runtime.cpu_execution(g, "x86-64-v3")
    assert execution.executor == "local-task" and "would write 3211264 bytes, > 1.0 x" in execution.why
    # AMD's and Intel's AVX-512 cores split rows that write up to 4x what they read (this one: 4x).
    for arch in ("znver4", "znver5", "sapphirerapids", "icelake-server"):
        assert runtime.cpu_execution(g, arch).executor == "split"
    # ... Intel's as far as the halves keep the whole's lowering: 1x128x28x28->512's 392-row halves
    # keep the GEMM there (rules.CPU_CONV_GEMM_1X1_FEW_ROWS_MAX_OUT_CHANNELS).
    expansion = channels_last_conv_graph([1, 128, 28, 28], 512, (1, 1), (1, 1), (0, 0), name="rows_expand")
    assert runtime.cpu_execution(expansion, "sapphirerapids").executor == "split"
    # ... not more: a 1x1 conv that widens 32 channels to 256 writes 8x.
    wider = channels_last_conv_graph([1, 32, 56, 56], 256, (1, 1), (1, 1), (0, 0), name="rows_wider")
    execution = runtime.cpu_execution(wider, "znver5")
    assert execution.executor == "local-task" and "> 4.0 x" in execution.why


def test_zen3_keeps_a_row_split_whose_filter_outweighs_half_its_split_bytes_on_the_pool(auto_on_two_cpus):
    # runtime.ROW_SPLIT_MAX_WHOLE_FRACTION_BY_CORE: on Zen 3 both halves transposing a 2 MiB filter
    # lost to the pool (1x1 s2 1x512x28x28->1024: 2 MiB whole, 2.4 MB split, 0.87).
    strided = channels_last_conv_graph([1, 512, 28, 28], 1024, (1, 1), (2, 2), (0, 0), name="rows_zen3_s2")
    execution = runtime.cpu_execution(strided, "znver3")
    assert execution.executor == "local-task", execution.why
    assert "read 2097152 bytes whole, > 0.5 of the 2408448 bytes split (znver3)" in execution.why
    assert "not split: both row halves" in strided.explain(fs.Backend.CPU, "znver3")
    assert runtime.cpu_execution(strided, "znver4").executor == "split"  # other cores: no such limit
    # A filter under half the split bytes still splits there (1x512x28x28->256: 0.5 MiB against 2.4 MB).
    light = channels_last_conv_graph([1, 512, 28, 28], 256, (1, 1), (1, 1), (0, 0), name="rows_zen3_light")
    assert runtime.cpu_execution(light, "znver3").executor == "split"


def test_auto_row_splits_a_batch_1_1x1_wgrad_but_not_a_data_tiled_one(auto_on_two_cpus):
    """ResNet-50's 1x1 1x64x56x56->256 weight gradient (one GEMM) splits its rows; on Zen 3
    1x512x28x28->128's is data-tiled (each half would unpack a whole DW: runtime.
    SPLIT_SUMMED_EXCLUDED_RULES) and stays on the pool."""
    g = _wgrad_graph("rows_wgrad_auto", 64, 56, 256)
    execution = runtime.cpu_execution(g, "znver3")
    assert execution.executor == "split" and "28 of its 56 rows" in execution.why and "'dw' added" in execution.why
    tiled = _wgrad_graph("rows_wgrad_tiled", 512, 28, 128)
    execution = runtime.cpu_execution(tiled, "znver3")
    assert execution.executor == "local-task"
    assert "conv_wgrad 'wgrad' is cpu-conv-wgrad-data-tiling: each half would unpack" in execution.why
