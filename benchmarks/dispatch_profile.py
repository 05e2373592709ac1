"""Where a graph's time goes: each dispatch's wall time, measured by IREE's HAL profiler.

For each command of a suite (``fusilli-benchmark`` syntax), builds the graph's optimized IR
(fusilli's passes for the target, ``FUSILLI_CONV_LOWERING`` as set or ``--lowering``),
compiles it in process with the target's flags, less ``--iree-torch-externalize-transients``
(the module then allocates its transients itself), and runs its ``main`` under
``iree-benchmark-module`` (a runtime tool of the iree-base-runtime package) on random
normal inputs with ``--device_profiling_mode=host-execution``; ``iree-profile dispatch``
then gives each dispatch's wall time, averaged over every call of the run. Printed per row:
the whole call's median, each dispatch's mean and minimum, and its share of the whole call's
median (what is left is the runtime between dispatches: on ``local-task`` the pool's
wake-ups, see BENCHMARKS.md).

Why this and not ``--iree-hal-dump-executable-benchmarks-to``: a dumped executable runs on an
uninitialized buffer shared by all its bindings, with none of the graph's data or memory
placement; measured on the Zen 5 VM, the polyphase input transform of 3x3 s2 1x128x56x56 took
325 us there against 51-71 us in the graph. Glibc is told to keep freed memory
(``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``), so that the module's transients,
allocated per call, do not page-fault each time (fusilli itself reuses one workspace): without
it 3x3 8x512x7x7 under Winograd F(2x2) read 26.9 ms a call against 10.6.

``--variant NAME[@ARCH][:MODULE.ATTR=EXPR;...]`` (``benchmarks/table_ab.py``'s syntax, repeatable)
profiles each row once per variant, the tables patched while its IR is built, in ``--rounds``
rounds that alternate the variants: a tile's cost per dispatch, one thread, without the whole
graph's noise around it.

Usage: python benchmarks/dispatch_profile.py SUITE [--lowering auto] [--device local-sync|local-task]
  [--repetitions 5] [--arch ARCH] [--variant SPEC]... [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile

import numpy as np
from table_ab import _applied, _parse  # benchmarks/, this script's own folder

from fusilli import pipeline
from fusilli.backend.compiler import compile_module
from fusilli.ir import parse_module
from fusilli.tools.benchmark import parse_command, read_suite
from fusilli.tools.benchmark.ops import SUBCOMMANDS

_DTYPES = {
    "f32": np.float32,
    "f16": np.float16,
    "f64": np.float64,
    "si32": np.int32,
    "si64": np.int64,
    "i1": np.bool_,
}
_ARGUMENT = re.compile(r"!torch\.v?tensor<\[([\d,]*)\],(\w+)>")


def _tool(name: str) -> str:
    import iree._runtime_libs

    return os.path.join(os.path.dirname(iree._runtime_libs.__file__), name)


def _inputs(main_signature: str, directory: str, rng: np.random.Generator) -> list[str]:
    """``--input=`` flags for ``main``'s arguments: random normal values (``.npy``; bf16, which
    the tool cannot read from ``.npy``, as a constant)."""
    flags = []
    for i, m in enumerate(_ARGUMENT.finditer(main_signature)):
        shape = [int(d) for d in m.group(1).split(",") if d]
        element = m.group(2)
        if element == "bf16":
            flags.append(f"--input={'x'.join(map(str, shape))}{'x' if shape else ''}bf16=0.5")
            continue
        if element not in _DTYPES:
            raise SystemExit(f"argument {i}: element type {element} not handled")
        path = os.path.join(directory, f"arg{i}.npy")
        np.save(path, rng.standard_normal(shape).astype(_DTYPES[element]))
        flags.append(f"--input=@{path}")
    return flags


def _dispatches(profile_text: str) -> list[tuple[str, float, float]]:
    """(name, mean us, min us) per dispatch group of ``iree-profile dispatch``'s text output."""
    rows = []
    for name, minimum, mean in re.findall(r"\n  (\S+)\n[^\n]*\n\s+time_ns: min=(\d+) avg=([\d.]+)", profile_text):
        rows.append((name, float(mean) / 1e3, int(minimum) / 1e3))
    return rows


def profile(
    argv: list[str],
    lowering: str,
    device: str,
    repetitions: int,
    arch: str | None,
    variant: tuple[str, tuple[str | None, list]] = ("", (None, [])),
) -> None:
    """Profiles one suite row; ``variant``: ``table_ab._parse``'s (name, (arch, assignments))."""
    ns = parse_command(argv)
    pipeline.CONV_LOWERING = lowering
    name, (variant_arch, assignments) = variant
    arch = variant_arch or arch or ns.arch
    with _applied(assignments):
        graph = SUBCOMMANDS[ns.subcommand].build(ns).graph
        target = graph.target(None, arch)
        text = graph.mlir("optimized", None, arch)
        explained = graph.explain(None, arch)
    flags = tuple(f for f in target.flags if "externalize-transients" not in f)
    vmfb, stats = compile_module(parse_module(text), flags)
    signature = re.search(r"func\.func @main\((.*?)\)\s*(?:->|attributes|\{)", text)
    if signature is None:
        raise SystemExit("no func.func @main in the optimized IR")
    with tempfile.TemporaryDirectory(prefix="fusilli-dispatch-profile-") as directory:
        module = os.path.join(directory, "graph.vmfb")
        with open(module, "wb") as f:
            f.write(vmfb)
        bundle = os.path.join(directory, "profile.ireeprof")
        pool = ["--task_topology_max_group_count=2"] if device == "local-task" else []
        env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 31), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}
        run = subprocess.run(
            [
                _tool("iree-benchmark-module"),
                f"--module={module}",
                f"--device={device}",
                *pool,
                "--function=main",
                *_inputs(signature.group(1), directory, np.random.default_rng(0)),
                f"--benchmark_repetitions={repetitions}",
                "--device_profiling_mode=host-execution",
                f"--device_profiling_output={bundle}",
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        if run.returncode != 0:
            raise SystemExit(f"iree-benchmark-module failed:\n{run.stderr[-2000:]}")
        summary = subprocess.run(
            [_tool("iree-profile"), "dispatch", bundle], capture_output=True, text=True, check=True
        ).stdout
    # One repetition prints the run's time alone; more print their median too.
    median = re.search(r"real_time_median\s+([\d.]+) (ms|us)", run.stdout) or re.search(
        r"/real_time\s+([\d.]+) (ms|us)", run.stdout
    )
    if median is None:
        raise SystemExit(f"no median in iree-benchmark-module's output:\n{run.stdout[-2000:]}")
    whole_us = float(median.group(1)) * (1e3 if median.group(2) == "ms" else 1.0)
    rows = _dispatches(summary)
    print(f"== {ns.label or ' '.join(argv)}" + (f" [{name}]" if name else ""))
    for line in explained.splitlines()[1:]:
        if not line.startswith("execution:"):  # fusilli's executor; here the tool runs the module
            print(f"   {line}")
    print(f"   {device}, lowering {lowering}: {stats.dispatch_count} dispatches, whole call median {whole_us:.1f} us")
    print(f"   {'dispatch':72} {'mean us':>9} {'min us':>9} {'share':>6}")
    for name, mean, minimum in rows:
        short = name.split("_dispatch_", 1)[-1]
        print(f"   {short[:72]:72} {mean:9.1f} {minimum:9.1f} {mean / whole_us:6.1%}")
    between = whole_us - sum(mean for _, mean, _ in rows)
    print(f"   {'(between and around dispatches)':72} {between:9.1f} {'':9} {between / whole_us:6.1%}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite")
    parser.add_argument("--lowering", default=pipeline.CONV_LOWERING, choices=pipeline.CONV_LOWERINGS)
    parser.add_argument("--device", default="local-sync", choices=("local-sync", "local-task"))
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--arch", default=None, help="CPU to compile for (default: the row's or the host)")
    parser.add_argument("--variant", action="append", default=[], help="NAME[@ARCH][:MODULE.ATTR=EXPR;...]")
    parser.add_argument("--rounds", type=int, default=1, help="rounds over the variants, alternating them")
    args = parser.parse_args()
    variants = [_parse(spec) for spec in args.variant] or [("", (None, []))]  # a bad spec fails before any compile
    for _, argv in read_suite(args.suite):
        if argv is None:
            continue
        for _ in range(args.rounds):
            for variant in variants:
                profile(argv, args.lowering, args.device, args.repetitions, args.arch, variant)


if __name__ == "__main__":
    main()
