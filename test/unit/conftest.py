"""Shared pytest fixtures: one compile cache per test session, a CPU handle, RNG."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

# One cache directory for the whole session, so graphs compiled by several tests
# are compiled once; set before fusilli is imported anywhere. Always a fresh
# one, never the user's own FUSILLI_CACHE_DIR, and removed when the run ends.
_SESSION_CACHE = tempfile.mkdtemp(prefix="fusilli-test-cache-")
os.environ["FUSILLI_CACHE_DIR"] = _SESSION_CACHE
os.environ.pop("FUSILLI_CACHE_MAX_BYTES", None)
atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)

import fusilli as fs  # noqa: E402
from fusilli import reference  # noqa: E402


@pytest.fixture(scope="session")
def cpu() -> fs.Handle:
    return fs.Handle(fs.Backend.CPU)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def random_array(t: fs.TensorAttr, rng: np.random.Generator, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """An array laid out like ``t`` (its strides) filled with random values of its dtype."""
    arr = fs.empty(t)
    if t.data_type == fs.DataType.BOOLEAN:
        arr[...] = rng.random(arr.shape) > 0.5
    elif t.data_type.is_integer:
        info = np.iinfo(np.int8) if t.data_type.bits <= 8 else None
        lo, hi = (max(int(low * 8), info.min if info else -8), min(int(high * 8), info.max if info else 8))
        arr[...] = rng.integers(lo, hi + 1, arr.shape)
    else:
        arr[...] = rng.uniform(low, high, arr.shape)
    return arr


def run_and_check(g: fs.Graph, handle: fs.Handle, inputs: dict, *, rtol: float = 1e-5, atol: float = 1e-5) -> dict:
    """Compiles and executes ``g``, compares every output with the NumPy reference."""
    g.compile(handle)
    outputs = {t: fs.empty(t) for t in g.output_tensors()}
    g.execute({**inputs, **outputs})
    expected = reference.run(g, inputs)
    for t, got in outputs.items():
        want = expected[t.name]
        np.testing.assert_allclose(
            np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol, err_msg=t.name
        )
    return {t.name: a for t, a in outputs.items()}


def run_checked(g: fs.Graph, handle: fs.Handle, rng: np.random.Generator) -> fs.Graph:
    """``run_and_check`` on random inputs laid out like the graph's input tensors; returns ``g``."""
    run_and_check(g, handle, {t: random_array(t, rng) for t in g.input_tensors()})
    return g


def matmul_relu_graph(name: str, k: int = 8) -> fs.Graph:
    """y = relu(a[3x5] @ b[5xk]): a small graph whose compiled artifact tests can poke at."""
    g = fs.Graph(name=name)
    a = g.tensor(name="a", dim=[3, 5])
    b = g.tensor(name="b", dim=[5, k])
    g.relu(g.matmul(a, b, name="mm"), name="relu").set_output(True).set_name("y")
    return g


def channels_last_wgrad_graph(
    name: str, n: int = 4, c: int = 8, k: int = 8, hw: int = 6, kernel: int = 3, stride: int = 1, **kw
):
    """A channels-last weight gradient DW[k, c, kernel, kernel] of DY and X (``kw``: Graph's)."""
    g = fs.Graph(name=name, **kw)
    ho = (hw + 2 * (kernel // 2) - kernel) // stride + 1
    dy = g.tensor(name="dy", dim=[n, k, ho, ho], stride=fs.strides([n, k, ho, ho], "NHWC"))
    x = g.tensor(name="x", dim=[n, c, hw, hw], stride=fs.strides([n, c, hw, hw], "NHWC"))
    pad = [kernel // 2] * 2
    dw = g.conv_wgrad(dy, x, padding=pad, stride=[stride] * 2, dilation=[1, 1], name="wgrad")
    dims = [k, c, kernel, kernel]
    dw.set_dim(dims).set_stride(fs.strides(dims, "NHWC")).set_output(True).set_name("dw")
    return g


def channels_last_dgrad_graph(
    name: str, n: int = 4, c: int = 8, k: int = 8, hw: int = 6, kernel: int = 3, stride: int = 1, **kw
):
    """A channels-last data gradient DX[n, c, hw, hw] of DY and the KRSC filter W[k, c, kernel, kernel],
    padded as ``channels_last_wgrad_graph`` (``kw``: Graph's)."""
    g = fs.Graph(name=name, **kw)
    ho = (hw + 2 * (kernel // 2) - kernel) // stride + 1
    dy = g.tensor(name="dy", dim=[n, k, ho, ho], stride=fs.strides([n, k, ho, ho], "NHWC"))
    w = g.tensor(name="w", dim=[k, c, kernel, kernel], stride=fs.strides([k, c, kernel, kernel], "NHWC"))
    pad = [kernel // 2] * 2
    dx = g.conv_dgrad(dy, w, padding=pad, stride=[stride] * 2, dilation=[1, 1], name="dgrad")
    dims = [n, c, hw, hw]
    dx.set_dim(dims).set_stride(fs.strides(dims, "NHWC")).set_output(True).set_name("dx")
    return g


def with_bias_gradient(g: fs.Graph) -> fs.Graph:
    """``g`` plus DY's sum over N, H and W (a bias gradient, another sum over the batch)."""
    (dy,) = (t for t in g.input_tensors() if t.name == "dy")
    g.reduction(dy, mode="ADD", axes=[0, 2, 3], name="bias_sum").set_output(True).set_name("db")
    return g


def channels_last_conv_graph(
    x_dim, k, kernel, stride, padding, dilation=(1, 1), dtype=fs.DataType.FLOAT, epilogue=False, name="conv", groups=1
) -> fs.Graph:
    """A validated NHWC conv_fprop (KRSC filter, f32 compute) of ``groups`` groups, with a bias + relu
    epilogue if asked."""
    c = x_dim[1] // groups
    g = fs.Graph(
        name=f"{name}_{dtype.short_name}_{int(epilogue)}", io_data_type=dtype, compute_data_type=fs.DataType.FLOAT
    )
    x = g.tensor(name="x", dim=x_dim, stride=fs.strides(x_dim, "NHWC"))
    wdim = [k, c, *kernel]
    wt = g.tensor(name="w", dim=wdim, stride=fs.strides(wdim, "NHWC"))
    y = g.conv_fprop(x, wt, padding=list(padding), stride=list(stride), dilation=list(dilation), name="conv")
    if epilogue:
        b = g.tensor(name="b", dim=[1, k, 1, 1], stride=fs.strides([1, k, 1, 1], "NHWC"))
        y = g.relu(g.add(y, b, name="bias"), name="relu")
    y.set_output(True).set_name("y")
    g.validate()
    return g


def arch_running_here(arch: str) -> str | None:
    """The ``arch`` a test compiles for (``host``: None, this CPU's own); skips the test where this
    CPU cannot run that code."""
    from fusilli.backend.targets import Target

    resolved = None if arch == "host" else arch
    try:
        Target.resolve("cpu", resolved).check_runs_here(f"{resolved} code")
    except fs.FusilliError:
        pytest.skip(f"this CPU cannot run {resolved} code")
    return resolved


def run_python(code: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh ``sys.executable`` with os.environ updated by ``env``
    (a value of None removes the variable); fails the test on a non-zero exit."""
    import subprocess
    import sys

    full_env = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    proc = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc
