"""fusilli.torch against PyTorch eager on the example's blocks, plus small-call latency.

For the conv block and the MLP block of examples/torch_training_step.py, times a
forward (no grad) and a forward + backward step of the model swapped by
``fusilli.torch.replace_modules`` and of the same model in PyTorch eager, in
alternating blocks of iterations in one process (so both see the same machine
load), and prints the best block median of each and the ratio PyTorch / fusilli
(above 1: fusilli is faster).

Then the small-call latency: the median ``Graph.execute`` of a 4-element add on
64-byte aligned arrays, and a repeated ``fusilli.torch.linear`` on 64x64 against
the raw invoke of its compiled kernel on the same bound arguments (the difference
is what fusilli.torch adds on top of the kernel).

Usage: python benchmarks/torch_model.py [--iters 10] [--blocks 3] [--threads N]
Prints Markdown table rows for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import pathlib
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

import fusilli as fs
import fusilli.torch as ft
from fusilli.torch import runner

_EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "torch_training_step.py"


def _example():
    spec = importlib.util.spec_from_file_location("torch_training_step", _EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _median_us(fn: Callable[[], object], iters: int) -> float:
    times = []
    for _ in range(iters):
        start = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e3


def _steps(model: nn.Module, x: torch.Tensor) -> dict[str, Callable[[], object]]:
    def forward():
        with torch.no_grad():
            return model(x)

    def forward_backward():
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()

    return {"forward": forward, "forward+backward": forward_backward}


def compare_blocks(iters: int, blocks: int) -> None:
    example = _example()
    print("| block | step | fusilli ms | PyTorch eager ms | PyTorch / fusilli |")
    print("|---|---|---|---|---|")
    for name, make_model, make_input in (
        ("conv block (channels-last 8x32x32x32, 2x conv3x3+relu)", example.conv_block, example.conv_input),
        ("MLP block (64x256, linear+gelu, layernorm, linear)", example.mlp_block, example.mlp_input),
    ):
        torch.manual_seed(0)
        eager = make_model()
        swapped = ft.replace_modules(copy.deepcopy(eager))
        x = make_input()
        for step, (fusilli_fn, eager_fn) in zip(
            _steps(swapped, x), zip(_steps(swapped, x).values(), _steps(eager, x).values())
        ):
            fusilli_fn(), eager_fn()  # compile / warm up
            best = {"fusilli": float("inf"), "eager": float("inf")}
            for _ in range(blocks):
                best["fusilli"] = min(best["fusilli"], _median_us(fusilli_fn, iters))
                best["eager"] = min(best["eager"], _median_us(eager_fn, iters))
            print(
                f"| {name} | {step} | {best['fusilli'] / 1e3:.2f} | {best['eager'] / 1e3:.2f} | "
                f"{best['eager'] / best['fusilli']:.2f} |"
            )


def small_call_latency(iters: int) -> None:
    g = fs.Graph(name="latency_add4", io_data_type=fs.DataType.FLOAT)
    a, b = g.tensor(name="a", dim=[4]), g.tensor(name="b", dim=[4])
    out = g.add(a, b, name="add").set_output(True)
    g.compile(fs.Handle(fs.Backend.CPU))
    pack = {a: fs.empty(a), b: fs.empty(b), out: fs.empty(out)}
    g.execute(pack)
    tiny = min(_median_us(lambda: g.execute(pack), iters) for _ in range(5))
    print(f"\n4-element add, Graph.execute median: {tiny:.2f} us (runs on {g._compiled.executor})")

    x, w = torch.randn(64, 64), torch.randn(64, 64)
    ft.linear(x, w)
    compiled = next(op for key, op in runner._memo.items() if key[0] == "linear" and key[3][0] == x.shape)
    kernel_graph = compiled.graph._compiled
    bound = kernel_graph._binding
    assert bound is not None
    linear_us = kernel_us = torch_us = float("inf")
    for _ in range(5):
        linear_us = min(linear_us, _median_us(lambda: ft.linear(x, w), iters))
        kernel_us = min(kernel_us, _median_us(lambda: kernel_graph._invoke(bound.args), iters))
        torch_us = min(torch_us, _median_us(lambda: nn.functional.linear(x, w), iters))
    print(
        f"fusilli.torch.linear 64x64 median: {linear_us:.1f} us; its kernel alone {kernel_us:.1f} us "
        f"(overhead {linear_us - kernel_us:.1f} us); torch.nn.functional.linear {torch_us:.1f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--latency-iters", type=int, default=2000)
    args = parser.parse_args()
    np.random.seed(0)
    compare_blocks(args.iters, args.blocks)
    small_call_latency(args.latency_iters)


if __name__ == "__main__":
    main()
