"""Convs with a one-wide output dim over a padded input longer than the window they read
(fusilli/lowering/conv.py, ``unread_input_window``): IREE 3.13 fails to compile them as
emitted, so the emitter slices off the unread rows and makes the padding explicit. Numerics
against the reference on every path (NCHW, channels-last, one channel, dilation, 1-D, 3-D,
f16), the window each dim keeps, and that the AMD GPU target compiles them too."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_array, run_and_check, run_checked

import fusilli as fs
from fusilli.lowering.conv import unread_input_window


def conv(x_dim, k, kernel, stride, padding, layout="NCHW", dilation=None, dtype=fs.DataType.FLOAT):
    name = "one_wide_" + "_".join(map(str, [*x_dim, k, *kernel, *stride, *padding, *(dilation or [])])) + layout
    g = fs.Graph(name=f"{name}_{dtype.short_name}", io_data_type=dtype, compute_data_type=fs.DataType.FLOAT)
    w_dim = [k, x_dim[1], *kernel]
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, layout))
    w = g.tensor(name="w", dim=w_dim, stride=fs.strides(w_dim, layout))
    dilation = dilation or [1] * len(kernel)
    g.conv_fprop(x, w, padding=padding, stride=stride, dilation=dilation, name="conv").set_output(True).set_name("y")
    return g.validate()


# x dims, K, kernel, stride, padding, layout, dilation: each has an output dim of extent 1
# whose padded input is longer than its window (these failed to compile before).
CASES = {
    "nchw_unread_rows": ([1, 16, 4, 9], 8, [3, 3], [2, 2], [0, 0], "NCHW", None),
    "nchw_unread_padding": ([2, 3, 2, 9], 4, [3, 3], [2, 2], [1, 0], "NCHW", None),
    "nhwc_both_dims": ([1, 16, 4, 4], 8, [3, 3], [2, 2], [0, 0], "NHWC", None),
    "both_dims_padded": ([1, 4, 2, 2], 4, [3, 3], [2, 2], [1, 1], "NHWC", None),
    "rows_sliced_cols_padded": ([1, 4, 4, 2], 4, [3, 3], [2, 2], [0, 1], "NCHW", None),
    "one_channel": ([1, 1, 2, 9], 1, [3, 3], [2, 2], [1, 0], "NHWC", None),
    "kernel2_stride3": ([1, 16, 3, 9], 8, [2, 2], [3, 3], [0, 0], "NCHW", None),
    "big_stride_asymmetric": ([1, 4, 4, 9], 4, [3, 3], [6, 2], [2, 1], "NHWC", None),
    "dilated": ([1, 4, 6, 8], 4, [3, 3], [3, 1], [0, 1], "NCHW", [2, 1]),
    "conv1d": ([2, 4, 4], 3, [3], [2], [0], "NCH", None),
    "conv3d": ([1, 2, 4, 5, 6], 3, [3, 3, 3], [2, 2, 2], [0, 1, 1], "NCDHW", None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_numerics(cpu, rng, case):
    x_dim, k, kernel, stride, padding, layout, dilation = CASES[case]
    g = conv(x_dim, k, kernel, stride, padding, layout, dilation)
    assert any(unread_input_window(g.nodes[0]))
    run_checked(g, cpu, rng)


def test_numerics_f16(cpu, rng):
    g = conv([1, 8, 4, 9], 8, [3, 3], [2, 2], [0, 1], "NHWC", dtype=fs.DataType.HALF)
    run_and_check(g, cpu, {t: random_array(t, rng) for t in g.input_tensors()}, rtol=2e-2, atol=2e-2)


def test_window_per_dim():
    # H: 4 rows, no padding, one 3-row window: 3 rows read, nothing to pad. W: 4 outputs: kept.
    assert unread_input_window(conv([1, 16, 4, 9], 8, [3, 3], [2, 2], [0, 0]).nodes[0]) == [(3, 0, 0), None]
    # H: 2 rows padded by 1 (4 rows): the window is 1 padding row + both rows; the last padding row goes.
    assert unread_input_window(conv([1, 3, 2, 9], 4, [3, 3], [2, 2], [1, 0]).nodes[0]) == [(2, 1, 0), None]
    # An input of one row padded by 2 (5 rows), a 3-row window: 2 padding rows before the row, none after.
    assert unread_input_window(conv([1, 3, 1, 9], 4, [3, 3], [3, 2], [2, 0]).nodes[0]) == [(1, 2, 0), None]
    # Exactly one window, or more than one output, or a 1-tap filter: left alone.
    assert unread_input_window(conv([1, 3, 3, 9], 4, [3, 3], [2, 2], [0, 0]).nodes[0]) == [None, None]
    assert unread_input_window(conv([1, 3, 6, 9], 4, [3, 3], [2, 2], [0, 0]).nodes[0]) == [None, None]
    assert unread_input_window(conv([1, 3, 2, 9], 4, [1, 1], [2, 2], [0, 0]).nodes[0]) == [None, None]


def test_amdgpu_target_compiles_it():
    # No GPU needed: the ROCm artifact is built and inspected only.
    g = conv([1, 16, 4, 9], 8, [3, 3], [2, 2], [1, 0])
    assert len(g.compile_to_artifact(fs.Backend.AMDGPU, arch="gfx942")) > 0


def test_bias_relu_after_it(cpu, rng):
    g = fs.Graph(name="one_wide_epilogue")
    x = g.tensor(name="x", dim=[1, 16, 4, 9], stride=fs.strides([1, 16, 4, 9], "NHWC"))
    w = g.tensor(name="w", dim=[8, 16, 3, 3], stride=fs.strides([8, 16, 3, 3], "NHWC"))
    b = g.tensor(name="b", dim=[1, 8, 1, 1], stride=fs.strides([1, 8, 1, 1], "NHWC"))
    y = g.conv_fprop(x, w, padding=[0, 1], stride=[2, 2], dilation=[1, 1], name="conv")
    g.relu(g.add(y, b, name="bias"), name="relu").set_output(True).set_name("y")
    run_checked(g.validate(), cpu, np.random.default_rng(3))
