"""fusilli-opt, called in process through ``fusilli.tools.opt.main``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import fusilli as fs
from fusilli.passes import PASSES
from fusilli.tools.opt import DUMP_AFTER, DUMP_BEFORE, main

NHWC_RELU_MLIR = """
func.func @nhwc_relu(%x: !torch.vtensor<[1,2,2,3],f32>) -> !torch.vtensor<[1,2,2,3],f32> {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %int2 = torch.constant.int 2
  %int3 = torch.constant.int 3
  %to_nchw = torch.prim.ListConstruct %int0, %int3, %int1, %int2 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %to_nhwc = torch.prim.ListConstruct %int0, %int2, %int3, %int1 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %0 = torch.aten.permute %x, %to_nchw : !torch.vtensor<[1,2,2,3],f32>, !torch.list<int> -> !torch.vtensor<[1,3,2,2],f32>
  %1 = torch.aten.relu %0 : !torch.vtensor<[1,3,2,2],f32> -> !torch.vtensor<[1,3,2,2],f32>
  %2 = torch.aten.permute %1, %to_nhwc : !torch.vtensor<[1,3,2,2],f32>, !torch.list<int> -> !torch.vtensor<[1,2,2,3],f32>
  return %2 : !torch.vtensor<[1,2,2,3],f32>
}
"""


def add_relu_graph() -> fs.Graph:
    g = fs.Graph(name="add_relu")
    a = g.tensor(name="a", dim=[2, 3, 4])
    b = g.tensor(name="b", dim=[1, 3, 1])
    y = g.relu(g.add(a, b, name="add"), name="relu")
    y.set_output(True).set_name("y")
    return g


@pytest.fixture
def graph_json(tmp_path: Path) -> Path:
    path = tmp_path / "add_relu.json"
    path.write_text(add_relu_graph().to_json())
    return path


@pytest.fixture
def mlir_file(tmp_path: Path) -> Path:
    path = tmp_path / "nhwc_relu.mlir"
    path.write_text(NHWC_RELU_MLIR)
    return path


def test_list_passes_names_every_fusilli_pass(capsys):
    assert main(["--list-passes"]) == 0
    out = capsys.readouterr().out
    for name, cls in PASSES.items():
        assert name in out
        assert cls.description in out


def test_json_input_prints_the_emitted_module(graph_json, capsys):
    assert main([str(graph_json)]) == 0
    out = capsys.readouterr().out
    assert out == add_relu_graph().emit_mlir() + "\n"
    assert "torch.aten.add.Tensor" in out and "torch.aten.relu" in out


def test_json_input_default_pipeline_matches_graph_optimized_stage(graph_json, capsys):
    assert main([str(graph_json), "--pass-pipeline=default"]) == 0
    out = capsys.readouterr().out
    assert out == add_relu_graph().mlir("optimized") + "\n"
    assert out.count("linalg.generic") == 1


def test_json_from_stdin(graph_json, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(graph_json.read_text()))
    assert main(["-", "--pass-pipeline=fusilli-epilogue-fusion"]) == 0
    assert "linalg.generic" in capsys.readouterr().out


def test_mlir_input_runs_fusilli_and_upstream_passes(mlir_file, capsys):
    assert main([str(mlir_file), "--pass-pipeline=fusilli-layout,canonicalize"]) == 0
    out = capsys.readouterr().out
    assert "torch.aten.permute" not in out
    assert "torch.aten.relu %arg0" in out


def test_print_ir_after_all_dumps_each_pass_in_order(mlir_file, capsys):
    assert main([str(mlir_file), "--pass-pipeline=fusilli-layout,fusilli-epilogue-fusion", "--print-ir-after-all"]) == 0
    out = capsys.readouterr().out
    first = out.index(DUMP_AFTER.format("fusilli-layout"))
    second = out.index(DUMP_AFTER.format("fusilli-epilogue-fusion"))
    assert first < second
    assert "linalg.generic" not in out[first:second]
    assert "linalg.generic" in out[second:]


def test_output_file(mlir_file, tmp_path, capsys):
    out_path = tmp_path / "out.mlir"
    assert main([str(mlir_file), "-o", str(out_path)]) == 0
    assert capsys.readouterr().out == ""
    assert "func.func @nhwc_relu" in out_path.read_text()


def test_stats_on_json(graph_json, capsys):
    assert main([str(graph_json), "--pass-pipeline=default", "--stats"]) == 0
    out = capsys.readouterr().out
    assert "dispatch-count: 1\n" in out
    assert "transient-memory-bytes: " in out
    assert "copy-count: 0\n" in out


def test_compile_to_input_phase(graph_json, capsys):
    assert main([str(graph_json), "--compile-to=input"]) == 0
    out = capsys.readouterr().out
    assert "util.func public @main" in out
    assert "torch." not in out


def test_bad_mlir_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    assert main([str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"fusilli-opt: INVALID_ARGUMENT: {bad} is not a valid MLIR module")
    assert "Traceback" not in captured.err


def test_bad_json_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "g"')
    assert main([str(bad)]) == 1
    assert capsys.readouterr().err.startswith("fusilli-opt: INVALID_ARGUMENT: graph JSON does not parse")


def test_missing_input_file(tmp_path, capsys):
    assert main([str(tmp_path / "missing.mlir")]) == 1
    assert capsys.readouterr().err.startswith("fusilli-opt: FILE_SYSTEM_FAILURE: cannot read input")


def test_unknown_pass(mlir_file, capsys):
    assert main([str(mlir_file), "--pass-pipeline=no-such-pass"]) == 1
    assert "INVALID_ARGUMENT: unknown pass or bad pipeline 'no-such-pass'" in capsys.readouterr().err


def test_no_input_reads_stdin(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(NHWC_RELU_MLIR))
    assert main(["--pass-pipeline=fusilli-layout"]) == 0
    out = capsys.readouterr().out
    assert "func.func @nhwc_relu" in out and "torch.aten.permute" not in out


SPLIT_INPUT = """func.func @first(%x: !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32> {
  %0 = torch.aten.relu %x : !torch.vtensor<[2],f32> -> !torch.vtensor<[2],f32>
  return %0 : !torch.vtensor<[2],f32>
}
// -----
func.func @second(%x: !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32> {
  %0 = torch.aten.neg %x : !torch.vtensor<[2],f32> -> !torch.vtensor<[2],f32>
  return %0 : !torch.vtensor<[2],f32>
}
// -----
func.func @third( {
"""


def test_split_input_file_processes_each_chunk_and_names_bad_lines(tmp_path, capsys):
    path = tmp_path / "split.mlir"
    path.write_text(SPLIT_INPUT)
    assert main([str(path), "--split-input-file"]) == 1  # the third chunk does not parse
    captured = capsys.readouterr()
    first, second = captured.out.split("// -----\n")
    assert "@first" in first and "@second" not in first and "@second" in second
    # The error names the file and the line in the whole file (chunk 3 is on line 11).
    assert f"{path} is not a valid MLIR module" in captured.err and f"{path}:11:" in captured.err
    assert main([str(path)]) == 1  # without splitting, the markers are comments and @third breaks the module


def test_parse_error_names_input_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad_line.mlir"
    bad.write_text("func.func @f() {\n  bogus.op\n}\n")
    assert main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2:" in err and '"-"' not in err


def test_debuginfo_prints_node_locations(graph_json, capsys):
    assert main([str(graph_json), "--mlir-print-debuginfo"]) == 0
    out = capsys.readouterr().out
    assert 'loc("add")' in out and 'loc("relu")' in out
    assert main([str(graph_json)]) == 0
    assert "loc(" not in capsys.readouterr().out


def test_print_ir_before_and_after_named_passes(mlir_file, capsys):
    pipeline = "--pass-pipeline=fusilli-layout,canonicalize,fusilli-epilogue-fusion"
    args = [str(mlir_file), pipeline, "--mlir-print-ir-before=canonicalize", "--mlir-print-ir-after=fusilli-layout"]
    assert main(args) == 0
    out = capsys.readouterr().out
    after_layout = out.index(DUMP_AFTER.format("fusilli-layout"))
    before_canon = out.index(DUMP_BEFORE.format("canonicalize"))
    assert after_layout < before_canon
    assert DUMP_AFTER.format("canonicalize") not in out and DUMP_BEFORE.format("fusilli-layout") not in out
    assert DUMP_AFTER.format("fusilli-epilogue-fusion") not in out


def test_print_ir_for_a_pass_not_in_the_pipeline_is_an_error(mlir_file, capsys):
    assert main([str(mlir_file), "--pass-pipeline=fusilli-layout", "--mlir-print-ir-after=cse"]) == 1
    assert "--mlir-print-ir-after: cse not in the pipeline" in capsys.readouterr().err


def test_whole_pipeline_is_checked_before_anything_runs(mlir_file, capsys):
    # The bad pass is last: nothing may have run (no dump) when the error is reported.
    args = [str(mlir_file), "--pass-pipeline=fusilli-layout,no-such-pass", "--print-ir-after-all"]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "unknown pass or bad pipeline 'no-such-pass'" in captured.err


def test_verify_each_catches_a_pass_that_breaks_the_ir(mlir_file, capsys, monkeypatch):
    from fusilli.passes import Pass, register_pass

    @register_pass
    class BreakIR(Pass):
        name: str = "test-break-ir"
        description = "erases the function's return (test only)"

        def run(self, module):
            func = module.body.operations[0]
            list(func.regions[0].blocks[0].operations)[-1].erase()

    monkeypatch.setitem(PASSES, BreakIR.name, BreakIR)
    assert main([str(mlir_file), "--pass-pipeline=test-break-ir"]) == 1
    assert "does not verify after pass 'test-break-ir'" in capsys.readouterr().err
    assert main([str(mlir_file), "--pass-pipeline=test-break-ir", "--verify-each=false"]) == 0
    capsys.readouterr()


def test_default_pipeline_leaves_no_dead_constants(tmp_path, capsys):
    g = fs.Graph(name="conv_nhwc")
    x = g.tensor(name="x", dim=[1, 4, 6, 6], stride=fs.strides([1, 4, 6, 6], "NHWC"))
    w = g.tensor(name="w", dim=[8, 4, 3, 3], stride=fs.strides([8, 4, 3, 3], "NHWC"))
    g.relu(g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1], dilation=[1, 1], name="conv"), name="relu").set_output(
        True
    )
    path = tmp_path / "conv.json"
    path.write_text(g.to_json())
    assert main([str(path), "--pass-pipeline=default"]) == 0
    out = capsys.readouterr().out
    for line in out.splitlines():
        if "= torch.constant." in line or "= torch.prim.ListConstruct" in line or "= arith.constant" in line:
            value = line.split("=")[0].strip()
            assert out.count(value) >= 2, f"dead constant after the default pipeline: {line.strip()}"


def test_arch_without_backend_is_an_error(mlir_file, capsys):
    assert main([str(mlir_file), "--arch=gfx942", "--stats"]) == 1
    assert "--arch needs --backend" in capsys.readouterr().err
    # An arch is checked against its backend before anything runs: gfx942 is no CPU.
    assert main([str(mlir_file), "--backend=cpu", "--arch=gfx942"]) == 1
    err = capsys.readouterr().err
    assert "INVALID_ARGUMENT" in err and "gfx942" in err


def test_bad_backend_choice_is_a_usage_error(mlir_file, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(mlir_file), "--backend=tpu"])
    assert exc.value.code == 2


def test_explain_prints_each_nodes_rule_for_the_target(graph_json, capsys):
    assert main([str(graph_json), "--explain", "--backend=amdgpu", "--arch=gfx942"]) == 0
    out = capsys.readouterr().out
    g = fs.Graph.from_json(graph_json.read_text())
    assert out.startswith("target: amdgpu gfx942 (mfma)")
    assert out == g.explain(fs.Backend.AMDGPU, "gfx942") + "\n"
    assert main([str(graph_json), "--explain", "--backend=cpu", "--arch=x86-64-v3"]) == 0
    assert "target: cpu x86-64-v3" in capsys.readouterr().out


def test_explain_needs_a_graph(mlir_file, capsys):
    assert main([str(mlir_file), "--explain"]) == 1
    assert "--explain needs a graph JSON" in capsys.readouterr().err
