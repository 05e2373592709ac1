"""Where a CPU graph's time goes on IREE's worker pool, against running it inline.

For one benchmark command (``fusilli-benchmark`` syntax, default the suite's 1x1 conv) it
measures, in one process:

* ``inline``: the graph on ``local-sync`` in the calling thread (one core);
* ``two inline``: two copies of the graph, each on ``local-sync`` in a thread of its own, at
  once (both cores, no pool: how well the kernels themselves scale);
* ``pool``: the graph on ``local-task`` (IREE's worker pool, a worker per core), with the CPU
  time each thread spends per call (``/proc/self/task/*/stat``: the workers, the waiting
  helper, the caller);
* ``pool, tiny``: a 64-element pointwise graph on the pool (the cost of a call itself);
* ``wake-up``: a pipe round trip between two threads pinned to two cores, the peer idle
  in between (what waking an idle core costs; on a VM, an idle vCPU is halted), and on one.

Usage: python benchmarks/cpu_pool_scaling.py [--seconds 3] [COMMAND...]
"""

from __future__ import annotations

import argparse
import glob
import os
import threading
import time

import numpy as np

import fusilli as fs
from fusilli.backend import runtime
from fusilli.tools.benchmark import parse_command
from fusilli.tools.benchmark.ops import SUBCOMMANDS

DEFAULT = (
    "conv -F 1 -n 4 -c 256 -H 28 -W 28 -k 128 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 "
    "--in_layout NHWC --out_layout NHWC --fil_layout NHWC --spatial_dim 2"
)


def _graph(argv: list[str], executor: str):
    os.environ["FUSILLI_CPU_EXECUTOR"] = executor
    ns = parse_command(argv)
    problem = SUBCOMMANDS[ns.subcommand].build(ns)
    problem.graph.compile(fs.Handle(ns.backend, arch=ns.arch))  # reads FUSILLI_CPU_EXECUTOR
    return lambda: problem.graph.execute(problem.pack)


def _median_ms(fn, seconds: float) -> float:
    for _ in range(5):
        fn()
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def _thread_cpu() -> dict[str, float]:
    out = {}
    for task in glob.glob(f"/proc/{os.getpid()}/task/*"):
        try:
            stat, name = open(f"{task}/stat").read(), open(f"{task}/comm").read().strip()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        out[f"{name}[{os.path.basename(task)}]"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def _round_trip_us(cpu_a: int, cpu_b: int, n: int = 2000) -> float:
    """Median pipe round trip to a thread pinned to ``cpu_b``, which idles 0.5 ms in between."""
    to_peer, from_caller = os.pipe()
    to_caller, from_peer = os.pipe()

    def peer() -> None:
        os.sched_setaffinity(0, {cpu_b})
        while os.read(to_peer, 1) == b"x":
            os.write(from_peer, b"x")

    thread = threading.Thread(target=peer)
    thread.start()
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu_a})
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        os.write(from_caller, b"x")
        os.read(to_caller, 1)
        times.append(time.perf_counter() - t0)
        time.sleep(0.0005)
    os.write(from_caller, b"q")
    thread.join()
    os.sched_setaffinity(0, own)
    for fd in (to_peer, from_caller, to_caller, from_peer):
        os.close(fd)
    return float(np.median(times)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.command or DEFAULT.split()
    inline = _graph(argv, "local-sync")
    print(f"inline:        {_median_ms(inline, args.seconds):.3f} ms")
    second = _graph(argv, "local-sync")
    results: list[float] = []
    threads = [
        threading.Thread(target=lambda f=f: results.append(_median_ms(f, args.seconds))) for f in (inline, second)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"two inline:    {results[0]:.3f} / {results[1]:.3f} ms (each, at once)")
    pool = _graph(argv, "local-task")
    _median_ms(pool, 0.5)
    calls, before, t0 = 0, _thread_cpu(), time.perf_counter()
    while time.perf_counter() < t0 + args.seconds:
        pool()
        calls += 1
    wall, after = (time.perf_counter() - t0) / calls * 1e3, _thread_cpu()
    print(f"pool:          {wall:.3f} ms per call (wait mode {runtime.cpu_wait_mode()}); CPU per call:")
    for name, seconds in after.items():
        used = (seconds - before.get(name, 0.0)) / calls * 1e3
        if used >= 0.005:
            print(f"  {name:28} {used:.3f} ms")
    tiny = _graph(["pointwise", "-N", "64", "-t", "f32"], "local-task")
    print(f"pool, tiny:    {_median_ms(tiny, args.seconds):.3f} ms (inline: ", end="")
    print(f"{_median_ms(_graph(['pointwise', '-N', '64', '-t', 'f32'], 'local-sync'), args.seconds):.3f} ms)")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        across, same = _round_trip_us(cpus[0], cpus[1]), _round_trip_us(cpus[0], cpus[0])
        print(f"wake-up:       {across:.1f} us round trip to an idle core ({same:.1f} us on one)")


if __name__ == "__main__":
    main()
