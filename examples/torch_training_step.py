"""Training with fusilli-backed PyTorch modules: a channels-last conv block and an MLP block.

Each block is trained for a few SGD steps twice from the same initial weights:
once as plain PyTorch, once after ``fusilli.torch.replace_modules`` (Conv2d +
ReLU, Linear + GELU and LayerNorm run as fusilli graphs, forward and backward).
The script checks that the losses and the final parameters agree within f32
tolerance and prints the median time per step of each.

Run: pip install '.[torch]' && python examples/torch_training_step.py
"""

from __future__ import annotations

import copy
import statistics
import time

import torch
from torch import nn

import fusilli.torch as ft

STEPS = 5


def conv_block() -> nn.Module:
    """Two 3x3 conv + relu layers on a channels-last [8, 32, 32, 32] batch, then a pooled head."""
    return nn.Sequential(
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    ).to(memory_format=torch.channels_last)


def conv_input() -> torch.Tensor:
    return torch.randn(8, 32, 32, 32).to(memory_format=torch.channels_last)


def mlp_block() -> nn.Module:
    """Linear + GELU, LayerNorm, Linear on a [64, 256] batch."""
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512), nn.Linear(512, 10))


def mlp_input() -> torch.Tensor:
    return torch.randn(64, 256)


def train(model: nn.Module, x: torch.Tensor, target: torch.Tensor) -> tuple[list[float], list[float]]:
    """``STEPS`` SGD steps; the loss and wall time of each."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses, times = [], []
    for _ in range(STEPS):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    return losses, times


def compare(name: str, make_model, make_input) -> None:
    torch.manual_seed(0)
    reference = make_model()
    swapped = ft.replace_modules(copy.deepcopy(reference))
    x, target = make_input(), torch.randint(0, 10, (make_input().shape[0],))
    train(copy.deepcopy(swapped), x, target)  # first steps compile (or load from the disk cache)
    ref_losses, ref_times = train(reference, x, target)
    losses, times = train(swapped, x, target)
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), rtol=1e-4, atol=1e-5)
    for (pname, p), q in zip(swapped.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=f"{name}: parameter {pname}")
    ms, ref_ms = statistics.median(times) * 1e3, statistics.median(ref_times) * 1e3
    print(
        f"{name}: losses {losses[0]:.4f} -> {losses[-1]:.4f} (PyTorch {ref_losses[0]:.4f} -> {ref_losses[-1]:.4f}); "
        f"step {ms:.2f} ms with fusilli, {ref_ms:.2f} ms PyTorch eager"
    )


def main() -> None:
    compare("conv block", conv_block, conv_input)
    compare("mlp block", mlp_block, mlp_input)


if __name__ == "__main__":
    main()
