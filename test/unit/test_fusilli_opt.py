"""fusilli-opt, called in process through ``fusilli.tools.opt.main``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import fusilli as fs
from fusilli.passes import PASSES
from fusilli.tools.opt import DUMP_HEADER, main

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
    first = out.index(DUMP_HEADER.format("fusilli-layout"))
    second = out.index(DUMP_HEADER.format("fusilli-epilogue-fusion"))
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


def test_no_input(capsys):
    assert main([]) == 1
    assert "no input given" in capsys.readouterr().err


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
    assert main([str(graph_json), "--explain", "--arch=x86-64-v3"]) == 0
    assert "target: cpu x86-64-v3" in capsys.readouterr().out


def test_explain_needs_a_graph(mlir_file, capsys):
    assert main([str(mlir_file), "--explain"]) == 1
    assert "--explain needs a graph JSON" in capsys.readouterr().err
