"""benchmarks/table_ab.py (BENCHMARKS.md's A/Bs of table values) runs end to end: each variant
compiles with its assignments in force (its dispatch count shows it), they are undone after, and a
bad assignment is refused (no timing asserted)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

pytest.importorskip("torch")  # the peer it measures against ('.[torch]', which CI installs)

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "table_ab.py")
# A 1x1 data gradient writing 512 DX channels over 144 rows: its filter is copied with padded rows
# (gemm_config.padded_b_columns, from B_ROW_PAD_COPY_MIN_ROWS rows), a dispatch before the GEMM's.
DGRAD = (
    '--label "tiny dgrad" conv -F 2 -n 1 -c 512 -H 12 -W 12 -k 16 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 '
    "--in_layout NHWC --out_layout NHWC --fil_layout NHWC --spatial_dim 2\n"
)


def _run(tmp_path, *variants: str) -> subprocess.CompletedProcess[str]:
    suite = tmp_path / "suite.txt"
    suite.write_text(DGRAD)
    argv = [sys.executable, SCRIPT, str(suite), "--blocks", "1", "--iters", "1"]
    for variant in variants:
        argv += ["--variant", variant]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def test_each_variant_compiles_with_its_assignments(tmp_path):
    from fusilli.tools.benchmark import parse_command
    from fusilli.tools.benchmark.ops import SUBCOMMANDS

    ns = parse_command(shlex.split(DGRAD))
    if "the filter written in rows of 528" not in SUBCOMMANDS[ns.subcommand].build(ns).graph.explain():
        pytest.skip("this CPU's rules copy no padded filter for this dgrad (Intel AVX-512, no AVX2)")
    # "nocopy" raises the rows a padded copy needs past this GEMM's: one dispatch fewer.
    run = _run(tmp_path, "tables", "nocopy:fusilli.passes.gemm_config.B_ROW_PAD_COPY_MIN_ROWS=10**9", "again")
    assert run.returncode == 0, run.stderr
    line = next(li for li in run.stdout.splitlines() if li.startswith("tiny dgrad"))
    counts = {name: int(n) for name, n in re.findall(r"(\w+) [\d.]+ ms \([\d.]+, (\d+) dispatches\)", line)}
    assert counts == {"tables": 2, "nocopy": 1, "again": 2}, line  # undone after "nocopy"
    assert "torch" in line, line


def test_a_bad_assignment_is_refused(tmp_path):
    run = _run(tmp_path, "x:fusilli.passes.gemm_config.NO_SUCH_TABLE=1")
    assert run.returncode != 0 and "has no attribute 'NO_SUCH_TABLE'" in run.stderr, run.stderr
