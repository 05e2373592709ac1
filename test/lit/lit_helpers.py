"""Helpers for lit graph scripts: a ``run`` decorator that prints the case name.

    @run
    def conv_nhwc():
        g = ...
        print(g.emit_mlir())

prints ``TEST: conv_nhwc`` then the IR, so each case starts with
``CHECK-LABEL: TEST: conv_nhwc``. ``print_stats(g)`` compiles for CPU and prints
``dispatch-count: N`` and ``transient-memory-bytes: N`` for ``STATS`` checks.
"""

from __future__ import annotations

import fusilli as fs


def run(fn):
    print(f"TEST: {fn.__name__}", flush=True)
    fn()
    print(flush=True)
    return fn


def print_stats(g: fs.Graph, backend: fs.Backend = fs.Backend.CPU) -> None:
    g.compile(fs.Handle(backend))
    stats = g.compile_stats
    print(f"dispatch-count: {stats.dispatch_count}")
    print(f"transient-memory-bytes: {stats.transient_memory_bytes}")
