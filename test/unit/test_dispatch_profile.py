"""benchmarks/dispatch_profile.py (BENCHMARKS.md's per-dispatch times) runs end to end: the
graph's own dispatches, each with its time, and the time between them (no timing asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "dispatch_profile.py")


def test_reports_each_dispatch_of_the_graph(tmp_path):
    # A 3x3 conv + bias + relu forced to the im2col GEMM: the filter's copy, the patch gather and
    # the GEMM with its epilogue, 3 dispatches.
    suite = tmp_path / "suite.txt"
    suite.write_text(
        '--label "tiny conv" conv -F 1 -n 1 -c 16 -H 12 -W 12 -k 16 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 '
        "--in_layout NHWC --out_layout NHWC --fil_layout NHWC --spatial_dim 2 --bias --relu\n"
    )
    run = subprocess.run(
        [sys.executable, SCRIPT, str(suite), "--lowering", "gemm", "--repetitions", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "== tiny conv" in out and "FUSILLI_CONV_LOWERING=gemm forces the conv lowering" in out, out
    assert "3 dispatches, whole call median" in out, out
    rows = re.findall(r"^   (\d+)_(\S+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+%$", out, re.M)
    assert [int(r[0]) for r in rows] == [0, 1, 2], out
    assert any("matmul" in r[1] for r in rows) and all(float(r[2]) >= float(r[3]) > 0 for r in rows), out
    assert "(between and around dispatches)" in out, out


def test_variants_alternate_per_row(tmp_path):
    # --variant (table_ab.py's syntax): each row profiled once per variant per round, the variants'
    # tables patched while the IR is built; a variant without assignments is the tables as they stand.
    suite = tmp_path / "suite.txt"
    suite.write_text(
        '--label "tiny 1x1" conv -F 1 -n 1 -c 16 -H 8 -W 8 -k 32 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 '
        "--in_layout NHWC --out_layout NHWC --fil_layout NHWC --spatial_dim 2\n"
    )
    variant = "wide:fusilli.passes.gemm_config.CONV_GEMM_TILES={'avx2': GemmTile((8, 32), (2, 32), 4)}"
    run = subprocess.run(
        [sys.executable, SCRIPT, str(suite), "--lowering", "gemm", "--repetitions", "1", "--rounds", "2"]
        + ["--arch", "x86-64-v3", "--variant", "tables", "--variant", variant],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert re.findall(r"^== tiny 1x1 \[(\w+)\]$", run.stdout, re.M) == ["tables", "wide", "tables", "wide"], run.stdout
