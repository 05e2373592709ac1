"""benchmarks/conv_backward_split.py (BENCHMARKS.md's conv backward graphs, pool against auto) runs
end to end: both executors' results agree, it prints a line per shape with the executor auto chose
(no timing asserted)."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "conv_backward_split.py")


def test_a_small_backward_graph_runs_on_both_executors():
    # 2x16x8x8, 3x3: below the inline threshold, so auto runs it inline (no CPU count assumed).
    argv = [sys.executable, SCRIPT, "2,16,8,16,3", "1,16,8,16,1", "--blocks", "2", "--calls", "1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert lines[0].startswith("3x3 2x16x8x8->16") and "local-task" in lines[0] and "(auto: local-sync)" in lines[0]
    assert lines[1].startswith("1x1 1x16x8x8->16")


def test_a_bad_shape_is_refused():
    done = subprocess.run([sys.executable, SCRIPT, "2,16,8"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "'2,16,8': expected N,C,H,K,R (five ints)" in done.stderr
