"""fusilli-benchmark: argument parsing, suite files, CSV/JSON output (no timing assertions)."""

from __future__ import annotations

import csv
import io
import json
import time

import pytest

import fusilli as fs
from fusilli.backend import rules
from fusilli.backend.targets import CPU_FLAGS, Target
from fusilli.tools import benchmark as bm

CONV = "conv -F 1 -n 1 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 --in_layout NHWC --out_layout NHWC --fil_layout NHWC".split()
MATMUL = "matmul -M 8 -N 8 -K 8".split()


def test_parse_conv_upstream_flags():
    ns = bm.parse_command(["--iter", "3", "--warmup", "0"] + CONV + ["--bias", "--fp16"])
    assert ns.subcommand == "conv" and ns.iter == 3 and ns.warmup == 0
    assert (ns.batchsize, ns.in_channels, ns.in_h, ns.in_w, ns.out_channels) == (1, 4, 6, 6, 4)
    assert (ns.fil_h, ns.fil_w, ns.pad_h, ns.pad_w, ns.conv_stride_h, ns.dilation_w) == (3, 3, 1, 1, 1, 1)
    assert ns.bias and ns.fp16 and not ns.bf16 and ns.in_layout == "NHWC"


def test_parse_rejects_bad_commands():
    with pytest.raises(bm.BenchmarkError):
        bm.parse_command(["--iter", "0"] + MATMUL)
    with pytest.raises(bm.BenchmarkError):
        bm.parse_command(["--iter", "1"])  # no subcommand
    with pytest.raises(bm.BenchmarkError):
        bm.parse_command(CONV + ["--fp16", "--bf16"])  # mutually exclusive
    with pytest.raises(bm.BenchmarkError):
        bm.parse_command(["--output-format", "xml"] + MATMUL)


def test_parse_layernorm_sdpa_pointwise():
    ns = bm.parse_command("layernorm -X 4x8 -t bf16 --elementwise_affine".split())
    assert ns.input == [4, 8] and ns.type == "bf16" and ns.elementwise_affine and ns.eps == 1e-5
    ns = bm.parse_command("sdpa -B 1 --heads_q 2 --heads_kv 2 --seq_q 4 --seq_kv 4 -d 8 -t f32 --causal".split())
    assert ns.causal and ns.head_dim == 8
    ns = bm.parse_command("pointwise -N 64".split())
    assert ns.elements == 64 and ns.type == "f32"


def test_read_suite(tmp_path):
    path = tmp_path / "suite.txt"
    path.write_text(
        "# a comment\n\n--iter 1 matmul -M 8 -N 8 -K 8  # trailing comment\n"
        '[SKIP] conv -F 2 ...\n--label "my row" pointwise -N 16\n'
    )
    rows = bm.read_suite(str(path))
    assert [argv for _, argv in rows] == [
        ["--iter", "1", "matmul", "-M", "8", "-N", "8", "-K", "8"],
        None,
        ["--label", "my row", "pointwise", "-N", "16"],
    ]


def _run(capsys, argv):
    rc = bm.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_matmul_csv(capsys):
    rc, out, _ = _run(capsys, ["--iter", "1", "--warmup", "0", "--output-format", "csv"] + MATMUL)
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1 and list(rows[0]) == list(bm.COLUMNS + bm.HOST_COLUMNS)
    r = rows[0]
    assert r["host_cpu"] and "iree" not in r["host_cpu"] and r["iree_version"] == "3.13.0"
    assert r["fusilli_version"].startswith(fs.__version__) and float(r["fusilli_stdev_ms"]) == 0.0
    assert r["status"] == "ok" and r["iter"] == "1" and int(r["dispatch_count"]) >= 1
    assert float(r["fusilli_median_ms"]) > 0 and float(r["gflops"]) > 0


def test_conv_bias_relu_json(capsys):
    rc, out, _ = _run(capsys, ["--iter", "1", "--warmup", "0", "--output-format", "json"] + CONV + ["--bias", "--relu"])
    assert rc == 0
    data = json.loads(out)
    (row,) = data["rows"]
    assert row["status"] == "ok" and row["dispatch_count"] >= 1
    assert row["fusilli_min_ms"] <= row["fusilli_median_ms"] <= row["fusilli_max_ms"]
    assert data["peak_gflops"] == bm.PEAK_GFLOPS_DEFAULT
    assert data["host"]["cpu"] and data["host"]["versions"]["iree-base-compiler"] == "3.13.0"
    assert isinstance(data["host"]["cpu_features"], list)
    # The lowering the target's rules chose (g.explain's algorithm and flag rules) is in every row:
    # this small channels-last conv is IREE's linalg conv.
    assert row["lowering"] == "cpu-conv-channels-last-linalg"
    # ... and where it ran (Graph.executor): this small graph inline.
    assert row["executor"] == "local-sync"


def test_lowering_column_names_the_conv_rule(capsys):
    # 3x3 stride 1, 4x64x56x56: Winograd F(4x4) on an AVX2 target; a generic x86-64 CPU has no
    # tuned path (IREE's linalg conv) and says so.
    args = ["--iter", "1", "--warmup", "0", "--compile-only", "--output-format", "json"]
    winograd = ["conv", "-F", "1", "-n", "4", "-c", "64", "-H", "56", "-W", "56", "-k", "64", "-y", "3", "-x", "3"]
    winograd += ["-p", "1", "-q", "1", "--in_layout", "NHWC", "--out_layout", "NHWC", "--fil_layout", "NHWC"]
    rc, out, _ = _run(capsys, ["--arch", "x86-64-v3", *args, *winograd])
    assert rc == 0
    (row,) = json.loads(out)["rows"]
    assert row["lowering"].startswith("cpu-conv-winograd F(4x4)")
    rc, out, _ = _run(capsys, ["--arch", "x86-64", *args, *winograd])
    (row,) = json.loads(out)["rows"]
    assert "winograd" not in row["lowering"] and "cpu-conv-im2col-data-tiling" in row["lowering"]


def test_pointwise_text(capsys):
    rc, out, _ = _run(capsys, ["--iter", "1", "--warmup", "0", "pointwise", "-N", "64"])
    assert rc == 0
    host, blank, *table = out.strip().splitlines()
    assert host.startswith("host: ") and "iree-base-compiler 3.13.0" in host and blank == ""
    assert table[0].startswith("| benchmark |") and len(table) == 3


def test_compare_torch(capsys):
    pytest.importorskip("torch")
    rc, out, _ = _run(
        capsys,
        ["--iter", "2", "--warmup", "0", "--compare", "torch", "--output-format", "json"]
        + MATMUL
        + ["--bias", "--activation", "relu"],
    )
    assert rc == 0
    (row,) = json.loads(out)["rows"]
    assert row["ratio"] > 0 and row["max_abs_err"] < 1e-4


def test_compare_torch_missing(capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("no torch")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    rc, out, _ = _run(capsys, ["--iter", "1", "--compare", "torch", "--output-format", "json"] + MATMUL)
    assert rc == 1
    (row,) = json.loads(out)["rows"]
    assert row["status"] == "error" and "pip install '.[bench]'" in row["error"]


def test_suite_csv_with_progress_and_errors(capsys, tmp_path):
    path = tmp_path / "suite.txt"
    path.write_text(
        "matmul -M 8 -N 8 -K 8\n[SKIP] matmul -M 9 -N 9 -K 9\nconv -F 1 -n 1 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -g 3\n"
    )
    rc, out, err = _run(capsys, ["--iter", "1", "--warmup", "0", "--output-format", "csv", "--suite", str(path)])
    assert rc == 1  # the conv row is an error: -c 4 is not divisible by -g 3
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["status"] for r in rows] == ["ok", "skipped", "error"]
    assert rows[0]["iter"] == "1"
    assert "[1/3]" in err and "[3/3]" in err


def _matmul_graph(n: int) -> fs.Graph:
    g = fs.Graph(f"mm{n}")
    g.matmul(g.tensor("a", [n, n]), g.tensor("b", [n, n]), name="mm").set_output(True).set_name("c")
    g.validate()
    return g


def test_per_op_class_cpu_flags(monkeypatch):
    monkeypatch.delenv("FUSILLI_EXTRA_COMPILER_FLAGS", raising=False)
    base = Target.resolve("cpu").flags
    assert base[: len(CPU_FLAGS)] == CPU_FLAGS and base[-1].startswith("--iree-llvmcpu-target-cpu=")
    heavy = _matmul_graph(1024)  # 2^31 FLOP >= CPU_MATMUL_MIN_FLOPS
    assert 2 * 1024**3 >= rules.CPU_MATMUL_MIN_FLOPS
    mm = heavy.target("cpu")
    assert mm.flags[: len(base)] == base
    assert mm.flags[len(base) :] == rules.CPU_MATMUL_FLAGS
    assert rules.compile_flags(heavy.nodes + heavy.nodes, mm) == list(rules.CPU_MATMUL_FLAGS)
    # Small problems keep the base flags (and so their single fused dispatch).
    assert 2 * 256**3 < rules.CPU_MATMUL_MIN_FLOPS
    assert _matmul_graph(256).target("cpu").flags == base
    # User flags come last, so they override the per-op-class defaults.
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", "--iree-opt-data-tiling=false")
    assert heavy.target("cpu").flags[-1] == "--iree-opt-data-tiling=false"


def test_graph_key_depends_on_op_class_flags():
    g = fs.Graph("k")
    a = g.tensor("a", [1024, 1024])
    b = g.tensor("b", [1024, 1024])
    g.matmul(a, b, name="mm").set_output(True).set_name("c")
    g.validate()
    (w,) = g.workloads()
    assert w.kind == "matmul" and w.flops == 2 * 1024**3
    assert g.key("cpu") != g._cache_key(Target.resolve("cpu"))  # the graph's rules add flags


def test_xiree_flags_apply_to_their_row_only(capsys, monkeypatch, tmp_path):
    # A suite row's --Xiree-compile flags must not leak into later rows.
    monkeypatch.setenv("FUSILLI_EXTRA_COMPILER_FLAGS", "--iree-opt-level=O1")
    suite = tmp_path / "suite.txt"
    suite.write_text(
        "--iter 1 --warmup 0 --Xiree-compile=--iree-opt-level=O2 --label flagged pointwise -N 32\n"
        "--iter 1 --warmup 0 --dump --label plain pointwise -N 48\n"
    )
    rc, out, _ = _run(capsys, ["--suite", str(suite), "--no-progress"])
    assert rc == 0
    plain_dump = out[out.index("=== ") :]
    assert "--iree-opt-level=O1" in plain_dump and "--iree-opt-level=O2" not in plain_dump
    import os

    assert os.environ["FUSILLI_EXTRA_COMPILER_FLAGS"] == "--iree-opt-level=O1"


def _conv_mode(mode: str) -> list[str]:
    return ["conv", "-F", mode] + CONV[3:]


@pytest.mark.parametrize("mode, graph_kind", [("2", "dgrad"), ("4", "wgrad")])
def test_conv_gradient_modes_with_bias_gradient(capsys, mode, graph_kind):
    # upstream's driver: -F 2 is dgrad, -F 4 wgrad; --bias adds the bias gradient (DY summed).
    argv = ["--iter", "1", "--warmup", "0", "--output-format", "json", "--dump"]
    rc, out, _ = _run(capsys, argv + _conv_mode(mode) + ["-u", "2", "-v", "2", "--bias"])
    assert rc == 0
    (row,) = json.loads(out[out.index('{\n  "peak_gflops"') :])["rows"]
    assert row["status"] == "ok" and row["dispatch_count"] >= 1
    assert row["graph"].startswith(f"benchmark_conv_{graph_kind}_") and "_u2_v2_" in row["graph"]
    # --dump printed the optimized IR: @main writes two outputs, the gradient and the bias gradient.
    signature = out.split("--- optimized IR", 1)[1].split("func.func @main(", 1)[1].split(")", 1)[0]
    assert signature.count("!torch.tensor<") == 2


def test_conv_relu_is_fprop_only(capsys):
    rc, out, _ = _run(
        capsys, ["--iter", "1", "--warmup", "0", "--output-format", "json"] + _conv_mode("2") + ["--relu"]
    )
    assert rc == 1
    (row,) = json.loads(out)["rows"]
    assert "--relu applies to -F 1" in row["error"]


# --------------------------------------------------------------------------- the installed script
def _script(name: str = "fusilli-benchmark") -> str:
    import os
    import shutil
    import sys

    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.path.exists(here) else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed in this environment (pip install -e .)")
    return found


def _tool(argv, code=0, env=None, timeout=300):
    import os
    import subprocess

    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    assert proc.returncode == code, f"{argv}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.parametrize("args", [["--help"], ["conv", "--help"], ["convbfp16", "--help"]])
def test_help_exits_zero(args):
    proc = _tool([_script()] + args)
    assert proc.stdout.startswith("usage: fusilli-benchmark") and "cannot parse" not in proc.stderr


MIOPEN_CONV = "-n 1 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1 --in_layout NHWC --out_layout NHWC --fil_layout NHWC"


def test_miopen_command_lines_run_verbatim(capsys, tmp_path):
    rc, out, _ = _run(
        capsys, ["--iter", "1", "--warmup", "0", "--output-format", "json", "convbfp16"] + MIOPEN_CONV.split()
    )
    assert rc == 0
    (row,) = json.loads(out)["rows"]
    assert row["status"] == "ok" and row["graph"].endswith("_bf16")
    commands = tmp_path / "commands.txt"
    commands.write_text(f"MIOpenDriver convfp16 {MIOPEN_CONV}\niree-boo-driver conv {MIOPEN_CONV}\n")
    rc, out, err = _run(
        capsys, ["--iter", "1", "--warmup", "0", "--output-format", "json", "--commands-file", str(commands)]
    )
    assert rc == 0, err
    rows = json.loads(out)["rows"]
    assert [r["graph"].rsplit("_", 1)[1] for r in rows] == ["f16", "f32"]
    assert "ETA" in err and "[2/2]" in err


def test_driver_options_before_the_subcommand_only(capsys):
    # -j is --jobs before the subcommand and conv's dilation after it.
    argv = ["--iter", "1", "--warmup", "0", "-j", "1", "--output-format", "json", "conv", "-F", "1"]
    rc, out, _ = _run(capsys, argv + CONV[3:] + ["-j", "2", "-l", "2"])
    (row,) = json.loads(out)["rows"]
    assert rc == 0 and "_l2_j2_" in row["graph"]


def test_mixed_type_matmul_compares_with_torch(capsys):
    pytest.importorskip("torch")
    argv = "--iter 2 --warmup 0 --compare torch --output-format json matmul -M 64 -N 32 -K 16 -B 10 --a_type f32 --b_type bf16 --out_type f32"
    rc, out, _ = _run(capsys, argv.split())
    (row,) = json.loads(out)["rows"]
    assert rc == 0 and row["status"] == "ok", row
    assert row["ratio"] > 0 and row["max_abs_err"] < 1e-3 and row["torch_stdev_ms"] >= 0
    assert json.loads(out)["host"]["versions"]["torch"].startswith("2.")


def test_compile_only_jobs_fill_the_cache(tmp_path):
    from fusilli.backend import cache

    suite = tmp_path / "suite.txt"
    suite.write_text("matmul -M 8 -N 8 -K 8\npointwise -N 64\n[SKIP] pointwise -N 65\nmatmul -M 8 -N 16 -K 8\n")
    env = {"FUSILLI_CACHE_DIR": str(tmp_path / "cache")}
    proc = _tool([_script(), "--compile-only", "-j", "2", "--output-format", "csv", "--suite", str(suite)], env=env)
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert sorted(r["status"] for r in rows) == ["compiled", "compiled", "compiled", "skipped"]
    assert len(cache.entries(str(tmp_path / "cache"))) == 3
    # A timed run afterwards compiles nothing: every row is a cache hit.
    timed = _tool(
        [_script(), "--iter", "1", "--warmup", "0", "--suite", str(suite), "--output-format", "json"],
        env={**env, "FUSILLI_LOG_INFO": "1", "FUSILLI_LOG_FILE": "stderr"},
    )
    assert "cache miss" not in timed.stderr and timed.stderr.count("cache hit") == 3


def test_interrupted_suite_keeps_its_rows(tmp_path):
    import os
    import signal
    import subprocess

    suite = tmp_path / "suite.txt"
    suite.write_text("--iter 1 --warmup 0 pointwise -N 64\n" + "--iter 3000000 --warmup 0 pointwise -N 4096\n")
    proc = subprocess.Popen(
        [_script(), "--output-format", "json", "--suite", str(suite)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, FUSILLI_CACHE_DIR=str(tmp_path / "cache")),
        # A test runner started in the background ignores SIGINT, and children inherit that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines = []
    while True:  # the first row arrives while the second is still running
        line = proc.stdout.readline()
        assert line, "no row before the end of the output"
        lines.append(line)
        if '"status": "ok"' in line:
            break
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=120) == 130, err
    data = json.loads("".join(lines) + rest)  # still one valid JSON document
    assert [r["status"] for r in data["rows"]] == ["ok"] and "interrupted after 1 row" in err


def test_plot_draws_the_ratios(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    suite = tmp_path / "suite.txt"
    suite.write_text('--label "mm 8" matmul -M 8 -N 8 -K 8\n--label "pw 64" pointwise -N 64\n')
    png = tmp_path / "ratios.png"
    _tool([_script(), "--iter", "2", "--warmup", "0", "--compare", "torch", "--suite", str(suite), "--plot", str(png)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    proc = _tool([_script(), "--plot", str(tmp_path / "x.png"), "matmul", "-M", "8", "-N", "8", "-K", "8"], code=2)
    assert "add --compare torch" in proc.stderr
