"""fusilli.torch: torch tensors in variant packs, the torch.ops.fusilli ops (opcheck,
gradcheck, memory formats, memo), replace_modules and the torch.compile backend."""

from __future__ import annotations

import copy
import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="fusilli.torch needs PyTorch: pip install -e '.[test,torch]'")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import fusilli as fs  # noqa: E402
import fusilli.torch as ft  # noqa: E402
from fusilli.torch import compile_backend, runner  # noqa: E402

SENTINEL = 12345.0


# ---------------------------------------------------------------- variant packs of torch tensors
def _add_graph(cpu, dtype: fs.DataType, dim, stride=None, name="torch_pack"):
    g = fs.Graph(name=f"{name}_{dtype.name}", io_data_type=dtype)
    x = g.tensor(name="x", dim=dim, stride=stride)
    y = g.tensor(name="y", dim=dim, stride=stride)
    out = g.add(x, y, name="add").set_output(True).set_name("out")
    if stride is not None:
        out.set_stride(stride)
    g.compile(cpu)
    return g, x, y, out


@pytest.mark.parametrize(
    "torch_dtype, fs_dtype",
    [
        (torch.float32, fs.DataType.FLOAT),
        (torch.bfloat16, fs.DataType.BFLOAT16),
        (torch.float16, fs.DataType.HALF),
        (torch.float8_e5m2, fs.DataType.FP8_E5M2),
    ],
    ids=["f32", "bf16", "f16", "fp8"],
)
def test_torch_tensors_in_the_variant_pack(cpu, torch_dtype, fs_dtype):
    g, x, y, out = _add_graph(cpu, fs_dtype, [3, 8])
    a = (
        torch.tensor(np.linspace(-2, 2, 24).reshape(3, 8), dtype=torch.float32)
        .to(torch_dtype)
        .requires_grad_(torch_dtype.is_floating_point and torch_dtype.itemsize > 1)
    )
    b = torch.full([3, 8], 0.5).to(torch_dtype)
    result = torch.full([3, 8], SENTINEL).to(torch_dtype)
    storage = result.data_ptr()
    g.execute({x: a, y: b, out: result})
    assert result.data_ptr() == storage  # written in place
    want = (a.detach().float() + b.float()).to(torch_dtype)
    torch.testing.assert_close(result.float(), want.float(), rtol=0, atol=0)
    assert not result.requires_grad  # execute tracks no gradient


def test_torch_tensor_layouts_offsets_and_alignment(cpu, caplog):
    dim = [2, 3, 4, 5]
    g, x, y, out = _add_graph(cpu, fs.DataType.FLOAT, dim, fs.strides(dim, "NHWC"), name="torch_layouts")
    a = torch.randn(dim).to(memory_format=torch.channels_last)
    # A storage offset of one element: not 64-byte aligned, so one staging copy (logged).
    base = torch.zeros(1 + a.numel())
    shifted = base[1:].view(2, 4, 5, 3).permute(0, 3, 1, 2)
    shifted.copy_(a)
    assert shifted.stride() == a.stride() and shifted.storage_offset() == 1
    result = torch.empty(dim).to(memory_format=torch.channels_last)
    with caplog.at_level(logging.INFO, logger="fusilli"):
        g.execute({x: a, y: shifted, out: result})
    torch.testing.assert_close(result, 2 * a)
    staged = [r.getMessage() for r in caplog.records if "not 64-byte aligned" in r.getMessage()]
    assert len(staged) == 1 and "'y'" in staged[0], staged
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fusilli"):
        g.execute({x: a, y: a, out: result})  # aligned: no copy
    assert not [r for r in caplog.records if "aligned" in r.getMessage()]
    wrong = torch.empty(dim)  # contiguous, not channels-last
    with pytest.raises(fs.FusilliError) as e:
        g.execute({x: a, y: a, out: wrong})
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR and "'out'" in str(e.value)


def test_fast_path_notices_a_torch_tensor_whose_storage_changed(cpu):
    g, x, y, out = _add_graph(cpu, fs.DataType.FLOAT, [16], name="torch_setstorage")
    a, b, result = torch.ones(16), torch.ones(16), torch.zeros(16)
    pack = {x: a, y: b, out: result}
    g.execute(pack)
    result.set_(torch.zeros(16))  # same object, new memory
    a.fill_(3)
    g.execute(pack)
    torch.testing.assert_close(result, torch.full([16], 4.0))
    result.set_(a.view(16))  # now the output aliases an input
    with pytest.raises(fs.FusilliError) as e:
        g.execute(pack)
    assert "shares memory with input tensor 'x'" in str(e.value)


def test_fresh_torch_outputs_are_bound_without_the_general_checks(cpu, monkeypatch):
    """A new output tensor per call (as every fusilli.torch op allocates) in the tensor's
    layout is viewed by ``Tensor.numpy`` and bound by one comparison, and so is an input that
    requires grad (its detached alias); a misaligned one (a storage offset of one element)
    takes the general checks and a staging copy, on every call that rebinds."""
    g, x, y, out = _add_graph(cpu, fs.DataType.FLOAT, [3, 8], name="torch_fresh")
    cg = g._compiled
    checked = []
    real_check = cg._check_array
    monkeypatch.setattr(
        cg, "_check_array", lambda t, a, is_output: checked.append(t.name) or real_check(t, a, is_output)
    )
    a = torch.randn(3, 8, requires_grad=True)
    b = torch.zeros(25)[1:].view(3, 8).normal_()
    assert b.data_ptr() % 64
    for _ in range(3):
        result = torch.empty(3, 8)
        g.execute({x: a, y: b, out: result})
        torch.testing.assert_close(result, a.detach() + b, rtol=0, atol=0)
    assert checked == ["y"] * 3
    assert a.grad is None and a.requires_grad  # execute tracks no gradient


def test_torch_tensors_on_other_devices_or_dtypes_are_refused(cpu):
    g, x, y, out = _add_graph(cpu, fs.DataType.FLOAT, [4], name="torch_refused")
    with pytest.raises(fs.FusilliError) as e:
        g.execute({x: torch.ones(4, dtype=torch.float64), y: torch.ones(4), out: torch.zeros(4)})
    assert e.value.code == fs.ErrorCode.VARIANT_PACK_ERROR and "'x'" in str(e.value) and "dtype" in str(e.value)
    with pytest.raises(fs.FusilliError) as e:
        g.execute({x: torch.ones(4, device="meta"), y: torch.ones(4), out: torch.zeros(4)})
    assert "device 'meta'" in str(e.value)


# ---------------------------------------------------------------- the ops against PyTorch
def _conv_inputs(dtype, channels_last, requires_grad, k=8, groups=1):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 6, 6, generator=g).to(dtype)
    w = torch.randn(k, 4 // groups, 3, 3, generator=g).to(dtype)
    b = torch.randn(k, generator=g).to(dtype)
    if channels_last:
        x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
    return [t.requires_grad_(requires_grad) for t in (x, w, b)]


def _opcheck_cases():
    """(op, args) for every torch.ops.fusilli op, f32 and bf16, contiguous and channels-last
    (for linear and layer_norm a channels-last 4-D input), with and without requires_grad."""
    for dtype in (torch.float32, torch.bfloat16):
        for cl in (False, True):
            for rg in (False, True):
                tag = f"{str(dtype)[6:]}-{'cl' if cl else 'contig'}-{'grad' if rg else 'nograd'}"
                gen = torch.Generator().manual_seed(1)

                def rand(*shape, gen=gen, dtype=dtype, rg=rg, cl=cl):
                    t = torch.randn(*shape, generator=gen).to(dtype)
                    if cl and t.dim() == 4:
                        t = t.to(memory_format=torch.channels_last)
                    return t.requires_grad_(rg)

                x, w, b = _conv_inputs(dtype, cl, rg)
                yield f"conv2d-{tag}", torch.ops.fusilli.conv2d, (x, w, b, [1, 1], [1, 1], [1, 1], 1, "relu")
                yield f"linear-{tag}", torch.ops.fusilli.linear, (rand(2, 3, 4, 8), rand(6, 8), rand(6), "silu")
                yield (
                    f"layer_norm-{tag}",
                    torch.ops.fusilli.layer_norm,
                    (rand(2, 4, 3, 3), [4, 3, 3], rand(4, 3, 3), rand(4, 3, 3), 1e-5),
                )
                q = rand(1, 2, 8, 16)
                yield (
                    f"scaled_dot_product_attention-{tag}",
                    torch.ops.fusilli.scaled_dot_product_attention,
                    (q, rand(1, 2, 8, 16), rand(1, 2, 8, 16), None, True, None),
                )
                chain = '[["mul", [["in", 0], ["in", 1]]], ["gelu", [["step", 0]]], ["sub", [["scalar", 1.0], ["step", 1]]]]'
                yield f"pointwise-{tag}", torch.ops.fusilli.pointwise, ([rand(3, 4), rand(4)], chain)
                if not rg:  # the backward ops (what autograd calls)
                    y = torch.ops.fusilli.conv2d(x, w, b, [1, 1], [1, 1], [1, 1], 1, "gelu")
                    yield (
                        f"conv2d_backward-{tag}",
                        torch.ops.fusilli.conv2d_backward,
                        (torch.ones_like(y), x, w, b, y, [1, 1], [1, 1], [1, 1], 1, "gelu"),
                    )
                    lx, lw = rand(5, 8), rand(6, 8)
                    ly = torch.ops.fusilli.linear(lx, lw, None, "relu")
                    yield (
                        f"linear_backward-{tag}",
                        torch.ops.fusilli.linear_backward,
                        (rand(5, 6), lx, lw, None, ly, "relu"),
                    )
                    sq, sk, sv = rand(1, 2, 8, 16), rand(1, 2, 6, 16), rand(1, 2, 6, 16)
                    mask = torch.randn(8, 6).to(dtype)
                    so = torch.ops.fusilli.scaled_dot_product_attention(sq, sk, sv, mask, False, 0.3)
                    yield (
                        f"scaled_dot_product_attention_backward-{tag}",
                        torch.ops.fusilli.scaled_dot_product_attention_backward,
                        (torch.randn_like(so), sq, sk, sv, mask, so, False, 0.3),
                    )
                    nx = rand(2, 4, 3, 3)
                    yield (
                        f"layer_norm_backward-{tag}",
                        torch.ops.fusilli.layer_norm_backward,
                        (rand(2, 4, 3, 3), nx, [4, 3, 3], rand(4, 3, 3), 1e-5),
                    )


_OPCHECK = list(_opcheck_cases())


@pytest.mark.parametrize("op, args", [c[1:] for c in _OPCHECK], ids=[c[0] for c in _OPCHECK])
def test_opcheck(op, args):
    torch.library.opcheck(op, args)


def test_every_fusilli_op_is_opchecked():
    registered = {name for name in dir(torch.ops.fusilli) if not name.startswith("_")} - {"name"}
    checked = {case[0].split("-")[0] for case in _OPCHECK}
    assert registered == checked, (registered, checked)


# Every activation in f32 NCHW; the other layout and dtype with one activation of each
# backward kind (from the result: relu; recomputed from the input: gelu).
_CONV_CASES = [(torch.float32, act, False) for act in (None, "relu", "gelu", "silu", "sigmoid", "tanh")]
_CONV_CASES += [(dtype, act, True) for dtype in (torch.float32, torch.bfloat16) for act in ("relu", "gelu")]


@pytest.mark.parametrize(
    "dtype, activation, channels_last",
    _CONV_CASES,
    ids=[f"{str(d)[6:]}-{a}-{'cl' if cl else 'contig'}" for d, a, cl in _CONV_CASES],
)
def test_conv2d_matches_pytorch(dtype, activation, channels_last):
    x, w, b = _conv_inputs(dtype, channels_last, True, k=6, groups=2)
    ref_fn = {None: lambda t: t, "relu": F.relu, "gelu": F.gelu, "silu": F.silu, "sigmoid": torch.sigmoid}.get(
        activation, torch.tanh
    )
    got = ft.conv2d(x, w, b, stride=1, padding=1, groups=2, activation=activation)
    want = ref_fn(F.conv2d(x.float(), w.float(), b.float(), padding=1, groups=2))
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(got.float(), want, rtol=tol, atol=tol)
    assert got.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    got.float().square().sum().backward()
    grads = [t.grad.float() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    xr, wr, br = (t.detach().float().requires_grad_() for t in (x, w, b))
    ref_fn(F.conv2d(xr, wr, br, padding=1, groups=2)).square().sum().backward()
    for got_grad, t in zip(grads, (xr, wr, br)):
        scale = max(1.0, t.grad.abs().max().item())
        torch.testing.assert_close(got_grad / scale, t.grad / scale, rtol=tol, atol=tol)


def test_gradcheck_f64():
    gen = torch.Generator().manual_seed(2)

    def rand(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64, requires_grad=True)

    # (f64 erf/tanh do not compile in IREE's CPU backend, so gelu/tanh are checked in f32 above.)
    cases = [
        (lambda x, w, b: ft.conv2d(x, w, b, stride=2, padding=1), (rand(1, 2, 5, 5), rand(3, 2, 3, 3), rand(3))),
        (
            lambda x, w, b: ft.conv2d(x, w, b, padding=1, activation="relu"),
            (rand(1, 2, 4, 4), rand(3, 2, 3, 3), rand(3)),
        ),
        (lambda x, w, b: ft.linear(x, w, b, activation="silu"), (rand(2, 3, 4), rand(5, 4), rand(5))),
        (lambda x, w, b: ft.linear(x, w, b, activation="sigmoid"), (rand(3, 4), rand(5, 4), rand(5))),
        (lambda x, w, b: ft.layer_norm(x, [2, 3], w, b), (rand(4, 2, 3), rand(2, 3), rand(2, 3))),
    ]
    for fn, args in cases:
        assert torch.autograd.gradcheck(fn, args)


def test_layer_norm_and_sdpa_match_pytorch():
    x = torch.randn(3, 5, 16)
    w, b = torch.randn(16), torch.randn(16)
    torch.testing.assert_close(ft.layer_norm(x, 16, w, b), F.layer_norm(x, [16], w, b), rtol=1e-5, atol=1e-5)
    xc = torch.randn(2, 4, 3, 3).to(memory_format=torch.channels_last)
    got = ft.layer_norm(xc, [4, 3, 3])
    assert got.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(got, F.layer_norm(xc, [4, 3, 3]), rtol=1e-5, atol=1e-5)
    q, k, v = torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16)
    mask = torch.rand(8, 8) > 0.3
    mask[:, 0] = True
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(ft.scaled_dot_product_attention(q, k, v, attn_mask=mask), want, rtol=1e-5, atol=1e-5)


def test_repeated_calls_reuse_the_compiled_graph():
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    ft.linear(x, w)
    size = runner.memo_size()
    for _ in range(3):
        torch.testing.assert_close(ft.linear(x, w), x @ w.T, rtol=1e-5, atol=1e-4)
    assert runner.memo_size() == size
    ft.linear(x[:32], w)  # another shape: another graph
    assert runner.memo_size() == size + 1


def test_bad_arguments_are_fusilli_errors():
    x, w = torch.randn(2, 4, 5, 5), torch.randn(3, 4, 3, 3)
    with pytest.raises(fs.FusilliError) as e:
        ft.conv2d(x, w, activation="softmax")
    assert e.value.code == fs.ErrorCode.INVALID_ARGUMENT and "'softmax'" in str(e.value)
    with pytest.raises(fs.FusilliError) as e:
        ft.conv2d(x, torch.randn(3, 3, 3, 3))
    assert "input channels (4)" in str(e.value)
    with pytest.raises(fs.FusilliError) as e:
        ft.linear(torch.randn(2, 5), torch.randn(3, 4))
    assert "do not fit" in str(e.value)


# ---------------------------------------------------------------- whole models
class _Block(nn.Module):
    """A channels-last conv block, an MLP block and a layernorm, with a graph break."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, stride=2))
        self.mlp = nn.Sequential(nn.Linear(8 * 4 * 4, 32), nn.GELU(), nn.Linear(32, 10))
        self.norm = nn.LayerNorm(10)

    def forward(self, x):
        y = F.silu(self.conv(x))
        y = self.mlp(y.flatten(1))
        if y.sum() > 1e9:  # data-dependent branch: a graph break under torch.compile
            y = y * 0
        return self.norm(y)


def _outputs_and_grads(model, x, call=None):
    out = (model if call is None else call)(x)
    out.square().sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    return out.detach(), grads


@pytest.fixture
def block_and_input():
    torch.manual_seed(3)
    return _Block(), torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)


def _assert_same(got, want):
    out, grads = got
    want_out, want_grads = want
    torch.testing.assert_close(out, want_out, rtol=1e-4, atol=1e-5)
    for name, g in want_grads.items():
        torch.testing.assert_close(grads[name], g, rtol=1e-4, atol=1e-5, msg=name)


def test_replace_modules_gives_pytorchs_outputs_and_gradients(block_and_input):
    model, x = block_and_input
    want = _outputs_and_grads(model, x)
    params = dict(model.named_parameters())
    swapped = ft.replace_modules(copy.deepcopy(model))
    assert isinstance(swapped.conv[0], ft.FusilliConv2d) and swapped.conv[0].activation == "relu"
    assert isinstance(swapped.conv[1], nn.Identity) and isinstance(swapped.mlp[0], ft.FusilliLinear)
    assert swapped.mlp[0].activation == "gelu" and isinstance(swapped.norm, ft.FusilliLayerNorm)
    _assert_same(_outputs_and_grads(swapped, x), want)
    same = ft.replace_modules(model)  # in place: the very same parameters
    assert all(p is params[n] for n, p in same.named_parameters())


def test_torch_compile_backend_gives_pytorchs_outputs_and_gradients(block_and_input, caplog):
    model, x = block_and_input
    want = _outputs_and_grads(model, x)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusilli", fullgraph=False)
    with caplog.at_level(logging.INFO, logger="fusilli"):
        got = _outputs_and_grads(model, x, call=compiled)
    _assert_same(got, want)
    lines = [r.getMessage() for r in caplog.records if "torch.compile backend" in r.getMessage()]
    taken = [line for line in lines if ": took " in line]
    assert any("conv2d" in t and "+ relu" in t for t in taken), lines
    assert any("linear" in t and "+ gelu" in t for t in taken), lines
    assert any("layer_norm" in t for t in taken), lines
    assert any("subgraph(s) to fusilli" in line for line in lines), lines


def test_torch_compile_backend_leaves_what_it_cannot_take_to_eager(caplog):
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding="same"), nn.ReLU())
    x = torch.randn(1, 3, 6, 6)
    torch._dynamo.reset()
    with caplog.at_level(logging.INFO, logger="fusilli"):
        got = torch.compile(model, backend="fusilli")(x)
    torch.testing.assert_close(got, model(x))
    assert any("left conv2d" in line and "padding='same'" in line for line in compile_backend.last_report)


class _PointwiseChains(nn.Module):
    """x*a+b -> relu -> *0.5 + x (a, b broadcast), a cumsum (no elementwise op), then
    1 - sigmoid -> exp, gelu(tanh) and maximum with the first chain's result."""

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.randn(8))
        self.b = nn.Parameter(torch.randn(4, 1))

    def forward(self, x):
        y = torch.relu(x * self.a + self.b) * 0.5 + x
        z = torch.cumsum(y, -1)
        return torch.maximum((1.0 - torch.sigmoid(z)).exp(), F.gelu(z, approximate="tanh")) / y.abs().add(1)


def test_torch_compile_backend_fuses_pointwise_chains_split_by_other_ops(caplog):
    torch.manual_seed(5)
    model, x = _PointwiseChains(), torch.randn(3, 4, 8, requires_grad=True)
    want_out = model(x)
    want = torch.autograd.grad(want_out.square().sum(), [x, *model.parameters()])
    torch._dynamo.reset()
    before = runner.memo_size()
    compiled = torch.compile(model, backend="fusilli", fullgraph=False)
    with caplog.at_level(logging.INFO, logger="fusilli"):
        out = compiled(x)
    got = torch.autograd.grad(out.square().sum(), [x, *model.parameters()])
    torch.testing.assert_close(out, want_out, rtol=1e-4, atol=1e-5)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    taken = [line for line in compile_backend.last_report if line.startswith("took pointwise")]
    # The cumsum splits the graph's elementwise ops in two chains; y feeds both the cumsum
    # and the tail, so the first chain ends at y and the tail reads it as an input.
    assert len(taken) == 2, compile_backend.last_report
    assert "(5 ops)" in taken[0] and "relu" in taken[0] and "cumsum" not in taken[0]
    assert "sigmoid" in taken[1] and "gelu" in taken[1] and "maximum" in taken[1]
    assert any("took pointwise" in r.getMessage() for r in caplog.records)
    assert runner.memo_size() == before + 2
    chains = [c.graph for key, c in runner._memo.items() if key[0] == "pointwise"]
    assert chains and all(g.compile_stats.dispatch_count == 1 for g in chains)  # one fused kernel each
    assert all(g.compile_stats.transient_memory_bytes == 0 for g in chains)
    compiled(x)  # memoized: no new graph
    assert runner.memo_size() == before + 2


def test_torch_compile_backend_leaves_unfusible_pointwise_ops_to_eager():
    def f(x, n):
        return (x.to(torch.float64) * 2.0 + 1.0).relu() + n.float().relu()  # a lone op stays eager too

    x, n = torch.randn(5, 6), torch.arange(6)
    torch._dynamo.reset()
    got = torch.compile(f, backend="fusilli", fullgraph=False)(x, n)
    torch.testing.assert_close(got, f(x, n))
    report = compile_backend.last_report
    assert any(line.startswith("took pointwise") and "(3 ops)" in line for line in report), report
    assert any("a lone elementwise op" in line for line in report), report
    assert any(line.startswith("left pointwise") and "dtype" in line for line in report), report


def test_pointwise_op_rejects_a_bad_program():
    with pytest.raises(fs.FusilliError, match="step 0 reads in 3"):
        torch.ops.fusilli.pointwise([torch.ones(2)], '[["add", [["in", 0], ["in", 3]]]]')


def test_threads_call_one_compiled_op_at_once():
    """fusilli.torch ops from several threads (a multi-threaded server): each call runs in its
    thread's own workspace, with no lock around the graph call (there was one per op)."""
    import threading

    gen = torch.Generator().manual_seed(5)
    w = torch.randn(16, 8, 3, 3, generator=gen).to(memory_format=torch.channels_last)
    xs = [torch.randn(2, 8, 12, 12, generator=gen).to(memory_format=torch.channels_last) for _ in range(3)]
    ft.conv2d(xs[0], w, padding=1)  # compiled once, before the threads
    problems: list = []

    def calls(x: torch.Tensor) -> None:
        want = F.conv2d(x, w, padding=1)
        for _ in range(10):
            got = ft.conv2d(x, w, padding=1)
            if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
                problems.append(float((got - want).abs().max()))

    threads = [threading.Thread(target=calls, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and problems == []
