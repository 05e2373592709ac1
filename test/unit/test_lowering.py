"""The IR-free node layer and the lowering registry: lowerings per node class and
target, every elementwise torch op a lowering emits has a scalar body (so epilogue
fusion can cross it), and building / validating / serializing a graph never
imports the MLIR bindings."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import run_python

import fusilli as fs
from fusilli.backend.targets import Backend
from fusilli.ir.elementwise import ELEMENTWISE_BODIES
from fusilli.ir.rewrite import block_ops, func_blocks
from fusilli.lowering import emit_module, lowering_for, registry
from fusilli.lowering.pointwise import MODE_EMITTERS
from fusilli.ops import NODE_TYPES, Node
from fusilli.ops.matmul import MatmulNode
from fusilli.ops.pointwise import MODES

PACKAGE = Path(fs.__file__).parent
M = fs.PointwiseMode
R = fs.ReductionMode
P = fs.NormPhase

# Torch ops the lowerings emit that are not elementwise (anchors, reductions,
# shape and layout changes, generators): fusion never folds them into a region.
# An emitted torch op must be here or have a scalar body in ELEMENTWISE_BODIES.
NOT_ELEMENTWISE = {
    "torch.aten.amax",
    "torch.aten.amin",
    "torch.aten.any.dim",
    "torch.aten.arange",
    "torch.aten.cat",
    "torch.aten.convolution",
    "torch.aten.convolution_backward",
    "torch.aten.empty.memory_format",
    "torch.aten.expand",
    "torch.aten.flip",
    "torch.aten.layer_norm",
    "torch.aten.matmul",
    "torch.aten.mean.dim",
    "torch.aten.native_batch_norm",
    "torch.aten.permute",
    "torch.aten.prod.dim_int",
    "torch.aten.reshape",
    "torch.aten.rms_norm",
    "torch.aten.scaled_dot_product_attention",
    "torch.aten.slice.Tensor",
    "torch.aten.squeeze.dim",
    "torch.aten.sum.dim_IntList",
    "torch.aten.transpose.int",
    "torch.aten.unsqueeze",
    "torch.aten.view",
    "torch.prims.prod",
}


# ---- registry ---------------------------------------------------------------------
def test_every_node_type_has_a_lowering_for_every_target():
    for cls in NODE_TYPES.values():
        assert (cls, None) in registry.LOWERINGS, cls.__name__


def test_every_pointwise_mode_has_an_emitter():
    assert set(MODE_EMITTERS) == set(MODES) == set(M)


class _ProbeNode(Node):
    kind = "probe"
    input_slots = ()
    output_slots = ()


def test_a_target_specific_lowering_wins_and_others_fall_back(monkeypatch):
    monkeypatch.setattr(registry, "LOWERINGS", dict(registry.LOWERINGS))
    node = _ProbeNode("probe", {}, {}, attrs=None)  # type: ignore[arg-type]
    with pytest.raises(fs.FusilliError) as e:
        lowering_for(node, Backend.CPU)
    assert e.value.code == fs.ErrorCode.NOT_IMPLEMENTED and "_ProbeNode" in str(e.value)

    @registry.register_lowering(_ProbeNode)
    def generic(node, ctx):
        pass

    @registry.register_lowering(_ProbeNode, backend=Backend.AMDGPU)
    def amdgpu(node, ctx):
        pass

    assert lowering_for(node, Backend.AMDGPU) is amdgpu
    assert lowering_for(node, Backend.CPU) is generic
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.register_lowering(_ProbeNode, backend=Backend.AMDGPU)(amdgpu)


def test_lowerings_receive_the_target(monkeypatch):
    monkeypatch.setattr(registry, "LOWERINGS", dict(registry.LOWERINGS))
    seen = []
    generic = registry.LOWERINGS[(MatmulNode, None)]

    @registry.register_lowering(MatmulNode, backend=Backend.AMDGPU)
    def record(node, ctx):
        seen.append((ctx.target.backend, ctx.target.arch))
        generic(node, ctx)

    g = fs.Graph(name="target_probe")
    g.matmul(g.tensor(name="a", dim=[4, 8]), g.tensor(name="b", dim=[8, 2])).set_output(True)
    cpu_ir = g.emit_mlir()
    assert seen == []
    assert g.emit_mlir(backend=fs.Backend.AMDGPU, arch="gfx942") == cpu_ir
    assert seen == [(Backend.AMDGPU, "gfx942")]


# ---- every emitted elementwise op has a scalar body ---------------------------------
def _pointwise_graphs():
    for dt in (fs.DataType.FLOAT, fs.DataType.INT32):
        g = fs.Graph(name=f"pointwise_{dt.name}")
        x, y, z = (g.tensor(name=n, dim=[2, 3], data_type=dt) for n in ("x", "y", "z"))
        for m, spec in MODES.items():
            if dt.is_integer and spec.domain == "float":
                continue
            g.pointwise(*(x, y, z)[: spec.arity], mode=m, name=f"op_{m.value}").set_output(True)
        yield g


def _reduction_graphs():
    for dt in (fs.DataType.FLOAT, fs.DataType.INT32):
        for dynamic in ((), (0,)):
            g = fs.Graph(name=f"reduction_{dt.name}_{len(dynamic)}")
            x = g.tensor(name="x", dim=[4, 6], data_type=dt, dynamic_dims=dynamic)
            for m in R:
                if m == R.AVG and dt.is_integer:
                    continue
                g.reduction(x, mode=m, axes=[1], name=f"r_{m.value}").set_output(True)
            yield g


def _norm_graphs():
    for phase in P:
        for dynamic in ((), (0,)):
            g = fs.Graph(name=f"norms_{phase.name}_{len(dynamic)}")
            x = g.tensor(name="x", dim=[2, 4, 3, 3], dynamic_dims=dynamic)
            c = [g.tensor(name=n, dim=[4]) for n in ("scale", "bias", "mean", "var")]
            affine = [g.tensor(name=n, dim=[1, 4, 3, 3]) for n in ("ln_scale", "ln_bias")]
            outs = [
                *g.batchnorm(x, *c, epsilon=1e-5, momentum=0.1, phase=phase, name="bn"),
                *g.layernorm(x, *affine, epsilon=1e-5, phase=phase, name="ln"),
                *g.rmsnorm(x, affine[0], epsilon=1e-5, phase=phase, name="rms"),
            ]
            for t in outs:
                if t is not None:
                    t.set_output(True)
            yield g


def _conv_matmul_graphs():
    g = fs.Graph(name="convs")
    x = g.tensor(name="x", dim=[2, 8, 6, 6], stride=fs.strides([2, 8, 6, 6], "NHWC"))
    w = g.tensor(name="w", dim=[8, 4, 3, 3])
    dy = g.tensor(name="dy", dim=[2, 8, 4, 4])
    dy2 = g.tensor(name="dy2", dim=[2, 8, 2, 2])
    g.conv_fprop(x, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="fprop").set_output(True)
    g.conv_dgrad(dy, w, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="dgrad").set_output(True).set_dim(
        [2, 8, 6, 6]
    )
    g.conv_dgrad(dy2, w, padding=[0, 0], stride=[2, 2], dilation=[1, 1], name="dgrad_s2").set_output(True).set_dim(
        [2, 8, 6, 6]
    )
    g.conv_wgrad(dy, x, padding=[0, 0], stride=[1, 1], dilation=[1, 1], name="wgrad").set_output(True).set_dim(
        [8, 4, 3, 3]
    )
    a = g.tensor(name="a", dim=[2, 4, 8], data_type=fs.DataType.HALF)
    b = g.tensor(name="b", dim=[8, 5])
    g.matmul(a, b, name="mm").set_output(True)
    yield g


def _sdpa_graphs():
    # (name, q/k/v dims, causal, mask, gqa): fused, decomposed, causal (blocked and
    # constant-mask), masked and grouped-query forms.
    cases = [
        ("tiny", [1, 2, 8, 4], [1, 2, 8, 4], False, False),
        ("decomposed", [1, 2, 64, 32], [1, 2, 64, 32], False, True),
        ("causal_small", [1, 2, 8, 4], [1, 2, 8, 4], True, False),
        ("causal_decomposed", [1, 2, 64, 32], [1, 2, 64, 32], True, False),
        ("causal_blocked", [1, 1, 256, 16], [1, 1, 256, 16], True, False),
        ("gqa_causal", [1, 4, 64, 32], [1, 2, 64, 32], True, False),
        ("gqa_mask", [1, 4, 8, 4], [1, 2, 8, 4], False, True),
    ]
    for name, qd, kd, causal, masked in cases:
        g = fs.Graph(name=f"sdpa_{name}")
        q = g.tensor(name="q", dim=qd)
        k = g.tensor(name="k", dim=kd)
        v = g.tensor(name="v", dim=kd)
        mask = g.tensor(name="mask", dim=[1, 1, qd[2], kd[2]], data_type=fs.DataType.BOOLEAN) if masked else None
        g.sdpa(q, k, v, mask=mask, is_causal=causal, enable_gqa=qd[1] != kd[1], name="attn").set_output(True)
        yield g


GRAPHS = [
    *_pointwise_graphs(),
    *_reduction_graphs(),
    *_norm_graphs(),
    *_conv_matmul_graphs(),
    *_sdpa_graphs(),
]


def _emitted_torch_ops(g: fs.Graph) -> set[str]:
    module = emit_module(g.validate(), g.target())
    return {
        op.name
        for block in func_blocks(module)
        for op in block_ops(block)
        if op.name.startswith(("torch.aten.", "torch.prims."))
    }


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: g.name)
def test_every_emitted_elementwise_op_has_a_scalar_body(g):
    ops = _emitted_torch_ops(g)
    unclassified = ops - NOT_ELEMENTWISE - set(ELEMENTWISE_BODIES)
    assert not unclassified, f"elementwise torch ops without a scalar body: {sorted(unclassified)}"


def test_the_graphs_cover_the_scalar_operand_ops():
    """The ops whose bodies were missing (fusion stopped at the norms' var + eps)."""
    emitted = set().union(*(_emitted_torch_ops(g) for g in GRAPHS))
    assert {"torch.aten.add.Scalar", "torch.aten.remainder.Scalar", "torch.aten.mul.Scalar"} <= emitted


def test_norm_fusion_crosses_var_plus_eps():
    g = fs.Graph(name="bn_fusion")
    x = g.tensor(name="x", dim=[2, 4, 3, 3])
    for t in g.batchnorm(x, epsilon=1e-5, momentum=0.1, phase=P.TRAINING, name="bn"):
        if t is not None:
            t.set_output(True)
    assert "torch.aten.add.Scalar" in g.emit_mlir()
    assert "torch.aten.add.Scalar" not in g.mlir("optimized")


# ---- the node layer is IR-free -------------------------------------------------------
def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the file (function-level too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "ops").glob("*.py")), ids=lambda p: p.name)
def test_op_modules_import_no_ir(path):
    forbidden = ("fusilli.ir", "fusilli.lowering", "fusilli.passes", "fusilli.graph", "iree")
    bad = sorted(m for m in _imported_modules(path) if m.startswith(forbidden))
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", sorted((PACKAGE / "ir").glob("*.py")), ids=lambda p: p.name)
def test_ir_modules_know_no_ops(path):
    forbidden = ("fusilli.ops", "fusilli.lowering", "fusilli.passes", "fusilli.graph", "fusilli.backend")
    bad = sorted(m for m in _imported_modules(path) if m.startswith(forbidden))
    assert not bad, f"{path.name} imports {bad}"


def test_build_validate_serialize_imports_no_mlir_bindings():
    code = """
        import json, sys
        import fusilli as fs

        g = fs.Graph(name="conv_no_ir")
        x = g.tensor(name="x", dim=[2, 8, 6, 6], stride=fs.strides([2, 8, 6, 6], "NHWC"))
        w = g.tensor(name="w", dim=[16, 8, 3, 3], stride=fs.strides([16, 8, 3, 3], "NHWC"))
        b = g.tensor(name="b", dim=[1, 16, 1, 1])
        y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv")
        g.relu(g.add(y, b, name="bias"), name="relu").set_output(True)
        g.validate()
        text = g.to_json()
        g2 = fs.Graph.from_json(text).validate()
        print(json.dumps({
            "round_trip": g2.canonical_json() == g.canonical_json(),
            "workloads": len(g.workloads()),
            "loaded": sorted(m for m in sys.modules if m.startswith(("iree", "fusilli.ir", "fusilli.lowering"))),
        }))
    """
    # PYTHONPROFILEIMPORTTIME=1 is ``python -X importtime``: every import is logged to stderr.
    proc = run_python(textwrap.dedent(code), env={"PYTHONPROFILEIMPORTTIME": "1"})
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"round_trip": True, "workloads": 1, "loaded": []}
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "fusilli.ops.conv" in imported  # the log is on
    assert not [m for m in imported if m.startswith(("iree", "fusilli.ir", "fusilli.lowering"))]


SCALAR_OPS_MODULE = """
func.func @main(%x: !torch.vtensor<[16],si64>, %y: !torch.vtensor<[16],f32>)
    -> (!torch.vtensor<[16],si64>, !torch.vtensor<[16],si64>, !torch.vtensor<[16],f32>, !torch.vtensor<[16],f32>) {
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %intm3 = torch.constant.int -3
  %fm25 = torch.constant.float -2.500000e+00
  %eps = torch.constant.float 1.000000e-01
  %0 = torch.aten.add.Scalar %x, %int3, %int2 : !torch.vtensor<[16],si64>, !torch.int, !torch.int -> !torch.vtensor<[16],si64>
  %1 = torch.aten.remainder.Scalar %0, %int3 : !torch.vtensor<[16],si64>, !torch.int -> !torch.vtensor<[16],si64>
  %2 = torch.aten.remainder.Scalar %x, %intm3 : !torch.vtensor<[16],si64>, !torch.int -> !torch.vtensor<[16],si64>
  %3 = torch.aten.remainder.Scalar %y, %fm25 : !torch.vtensor<[16],f32>, !torch.float -> !torch.vtensor<[16],f32>
  %4 = torch.aten.add.Scalar %y, %eps, %int1 : !torch.vtensor<[16],f32>, !torch.float, !torch.int -> !torch.vtensor<[16],f32>
  return %1, %2, %3, %4 : !torch.vtensor<[16],si64>, !torch.vtensor<[16],si64>, !torch.vtensor<[16],f32>, !torch.vtensor<[16],f32>
}
"""


def test_scalar_operand_bodies_compute_torch_semantics():
    """add.Scalar (other * alpha) and remainder.Scalar (the divisor's sign, as Python's %)
    fused, compiled and run: the results are numpy's."""
    import iree.runtime as rt

    from fusilli import ir
    from fusilli.backend.compiler import compile_module
    from fusilli.backend.targets import Target
    from fusilli.passes import Pipeline

    with ir.fusilli_context():
        module = ir.parse_module(SCALAR_OPS_MODULE)
    Pipeline.parse("fusilli-epilogue-fusion").run(module)
    assert "torch.aten.remainder.Scalar" not in str(module) and "torch.aten.add.Scalar" not in str(module)
    # Called directly through iree.runtime, so without the transient-buffer argument.
    flags = tuple(f for f in Target.resolve(Backend.CPU).flags if f != "--iree-torch-externalize-transients")
    vmfb, _ = compile_module(module, flags)
    main = rt.load_vm_flatbuffer(vmfb, driver="local-sync").main
    x = np.arange(-8, 8, dtype=np.int64)
    y = np.linspace(-6.0, 6.0, 16, dtype=np.float32)
    got = [r.to_host() for r in main(x, y)]
    np.testing.assert_array_equal(got[0], np.remainder(x + 6, 3))
    np.testing.assert_array_equal(got[1], np.remainder(x, -3))
    np.testing.assert_allclose(got[2], np.remainder(y, np.float32(-2.5)), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[3], y + np.float32(0.1))


def test_ir_free_pipeline_fingerprint_matches_the_passes():
    # fusilli.pipeline computes cache keys without the bindings; the runnable
    # pipeline in fusilli.passes must be the same passes with the same options.
    from fusilli import pipeline
    from fusilli.passes import default_pipeline

    passes = default_pipeline().passes
    assert tuple(p.name for p in passes) == pipeline.DEFAULT_PASSES
    assert pipeline.default_pipeline_fingerprint() == ",".join(f"{p.name}{{{p.options()}}}" for p in passes)
