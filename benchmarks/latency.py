"""Latency of fusilli's compile/execute path on a tiny graph (4x4 f32 add).

Measures, each in a fresh Python process (so nothing is warm):

* ``import``: ``import fusilli`` alone;
* ``compile``: ``Graph.compile(handle)`` of a graph found in the disk cache
  (the first process compiles it and fills the cache; it is reported apart);
* ``first exec`` / ``later exec``: the first ``execute`` and the min of the next
  ones (same arrays);
* ``overhead``: steady-state Python overhead of ``execute`` = min over repeats of
  the mean time of ``Graph.execute(pack)`` minus the min over repeats of the mean
  time of the raw ``VmContext.invoke`` on the same prepared argument list
  (short blocks of the two loops alternate, so both see the same machine load).

``build`` is building the graph, which imports the ops and with them the MLIR
bindings (``iree.compiler``); ``compile`` reports whether it imported
``iree.compiler`` or whether fusilli's compiler module is loaded after it (neither should be on a hit).

Usage: python benchmarks/latency.py [--runs 5] [--iters 200] [--repeats 50]
Timings are min-of-repeats; on a shared machine expect run-to-run noise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DIM = [4, 4]


def _child(iters: int, repeats: int) -> dict:
    t0 = time.perf_counter()
    import fusilli as fs

    t_import = time.perf_counter() - t0
    import numpy as np

    handle = fs.Handle(fs.Backend.CPU)
    t0 = time.perf_counter()
    g = fs.Graph(name="latency_add")
    x = g.tensor(name="x", dim=DIM)
    y = g.tensor(name="y", dim=DIM)
    out = g.add(x, y, name="add").set_output(True).set_name("out")
    t_build = time.perf_counter() - t0
    compiler_loaded = "iree.compiler" in sys.modules
    t0 = time.perf_counter()
    g.compile(handle)
    t_compile = time.perf_counter() - t0
    compile_imported_compiler = (not compiler_loaded and "iree.compiler" in sys.modules) or (
        "fusilli.backend.compiler" in sys.modules
    )
    hit = g._compiled.artifact.from_cache

    xa = fs.empty(x)
    ya = fs.empty(y)
    oa = fs.empty(out)
    xa[...] = np.arange(16, dtype=np.float32).reshape(DIM)
    ya[...] = 1.0
    pack = {x: xa, y: ya, out: oa}
    t0 = time.perf_counter()
    g.execute(pack)
    t_first = time.perf_counter() - t0
    assert np.array_equal(oa, xa + ya), "wrong result"
    later = []
    for _ in range(20):
        t0 = time.perf_counter()
        g.execute(pack)
        later.append(time.perf_counter() - t0)

    # Raw IREE call on the very argument list fusilli bound for this pack.
    cg = g._compiled
    binding = cg._binding
    invoke, fn, args = cg._context.invoke, cg._main, binding.args
    import iree.runtime as rt

    empty = rt.VmVariantList(0)
    execute = g.execute
    rng = range(iters)
    fus, raw = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in rng:
            invoke(fn, args, empty)
        raw.append((time.perf_counter() - t0) / iters)
        t0 = time.perf_counter()
        for _ in rng:
            execute(pack)
        fus.append((time.perf_counter() - t0) / iters)
    return {
        "import_ms": t_import * 1e3,
        "build_ms": t_build * 1e3,
        "compile_ms": t_compile * 1e3,
        "cache_hit": hit,
        "compile_imported_iree_compiler": compile_imported_compiler,
        "first_exec_ms": t_first * 1e3,
        "later_exec_ms": min(later) * 1e3,
        "execute_us": min(fus) * 1e6,
        "raw_invoke_us": min(raw) * 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="fresh processes that hit the cache")
    ap.add_argument("--iters", type=int, default=200, help="calls per timed block")
    ap.add_argument("--repeats", type=int, default=50, help="timed blocks per process and loop (min is kept)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(_child(a.iters, a.repeats)))
        return
    env = dict(os.environ)
    env.setdefault("FUSILLI_CACHE_DIR", tempfile.mkdtemp(prefix="fusilli-latency-"))
    env.pop("FUSILLI_DISABLE_CACHE", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--iters", str(a.iters), "--repeats", str(a.repeats)]
    rows = []
    for i in range(a.runs + 1):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode:
            sys.exit(f"child failed:\n{proc.stdout}\n{proc.stderr}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        label = ("cache hit" if r["cache_hit"] else "cold (compiles)") + f" {i}"
        rows.append((label, r))
    print(
        "| process | import fusilli | build graph | compile() | first execute | later execute | execute | "
        "raw invoke | overhead |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, r in rows:
        print(
            f"| {label} | {r['import_ms']:.1f} ms | {r['build_ms']:.1f} ms | {r['compile_ms']:.1f} ms | "
            f"{r['first_exec_ms']:.2f} ms | "
            f"{r['later_exec_ms'] * 1e3:.0f} µs | {r['execute_us']:.1f} µs | {r['raw_invoke_us']:.1f} µs | "
            f"{r['execute_us'] - r['raw_invoke_us']:.1f} µs |"
        )
    hits = [r for _, r in rows if r["cache_hit"]]
    if hits:

        def med(k):
            v = sorted(r[k] for r in hits)
            return v[len(v) // 2]

        print(
            f"\ncache hits ({len(hits)} processes), median: compile {med('compile_ms'):.1f} ms, "
            f"first - later execute {med('first_exec_ms') - med('later_exec_ms'):.2f} ms, "
            f"overhead {med('execute_us') - med('raw_invoke_us'):.1f} µs; "
            f"compiler module loaded after compile() in {sum(r['compile_imported_iree_compiler'] for r in hits)} of them"
        )


if __name__ == "__main__":
    main()
