"""Compile targets: the Backend enum, compiler flags per target, AMD GPU arch detection."""

from __future__ import annotations

import enum
import functools
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from fusilli.errors import ErrorCode, fail
from fusilli.log import logger


class Backend(enum.Enum):
    CPU = "cpu"  # IREE llvm-cpu, run on the local-task driver
    AMDGPU = "amdgpu"  # IREE rocm / HIP

    @classmethod
    def coerce(cls, value: Any) -> Backend:
        if isinstance(value, Backend):
            return value
        if isinstance(value, str):
            for b in cls:
                if value.lower() in (b.value, b.name.lower()):
                    return b
        raise fail(ErrorCode.INVALID_ARGUMENT, f"unknown backend {value!r}; expected 'cpu' or 'amdgpu'")


CPU_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
    "--iree-torch-externalize-transients",
    # IREE demotes f64 to f32 by default, which would read f64 buffers as f32.
    "--iree-input-demote-f64-to-f32=false",
)

AMDGPU_FLAGS = (
    "--iree-hal-target-device=hip",
    "--iree-opt-level=O3",
    "--iree-preprocessing-pass-pipeline=builtin.module(iree-preprocessing-backward-data-conv-pipeline)",
    "--iree-flow-enable-pad-handling",
    "--iree-global-opt-propagate-transposes-through-conv",
    "--iree-global-opt-enable-sink-transpose-through-pad",
    "--iree-dispatch-creation-enable-aggressive-reshape-movement",
    "--iree-dispatch-creation-enable-split-reduction",
    "--iree-torch-externalize-transients",
    "--iree-input-demote-f64-to-f32=false",
)

# CPU flags per op class, chosen from measurements on this 2-core machine
# against PyTorch eager (BENCHMARKS.md, fusilli-benchmark --compare torch).
# They apply to an op only when it does at least CPU_HEAVY_MIN_FLOPS of
# arithmetic: data tiling packs operands in dispatches of their own, which
# pays off on large problems (matmul 1024^3: ratio 1.16 -> 1.56) and loses on
# small ones (batched matmul 8x256x64x256, 67 MFLOP: 0.94 -> 0.16), and it
# keeps small fused graphs at one dispatch. A graph gets the union of the
# flags of its heavy ops, after CPU_FLAGS and before caller /
# FUSILLI_EXTRA_COMPILER_FLAGS flags (so users override them). They feed
# Target.flags, hence the cache key.
CPU_HEAVY_MIN_FLOPS = 1 << 28

_CPU_MATMUL_FLAGS = (
    "--iree-opt-level=O3",
    "--iree-opt-data-tiling=true",
    "--iree-llvmcpu-enable-ukernels=all",
)


@dataclass(frozen=True)
class CpuFlagRule:
    kind: str
    flags: tuple[str, ...]
    elements: tuple[str, ...] | None = None  # DataType names it applies to (None: all)
    min_flops: int = CPU_HEAVY_MIN_FLOPS  # the smallest workload it applies to


# LayerNorm (memory bound) at O3: IREE then fuses the training form's stats
# reduction and Y into one dispatch (x read once; 2 -> 1 dispatch) and the
# one-dispatch code is faster too. 4096x768 affine, training forward, against
# torch.native_layer_norm: f32 ratio ~0.4 -> ~0.9-1.1, bf16 ~0.3 -> ~1.1-1.3.
# From 1 MFLOP (~128K elements, where x stops fitting in L2 twice over).
CPU_LAYERNORM_MIN_FLOPS = 1 << 20

# Convs take the im2col + data-tiled path from 1 MFLOP: IREE's direct conv
# (what the base flags give) is slow at every size measured. 3x3 NHWC conv +
# bias + relu, pad 1, fusilli-benchmark --iter 30, min ms direct -> im2col:
# 1x16x16x16->16 (1.2 MFLOP) 0.122 -> 0.054; 1x32x28x28->32 (14 MFLOP)
# 2.09 -> 0.18; 1x64x28x28->64 (58 MFLOP) 8.2 -> 0.50; 1x64x56x56->64
# (231 MFLOP) 33 -> 1.8 (PyTorch 1.1). Smaller convs (unit tests, tiny
# fused graphs) keep one dispatch with their epilogue.
CPU_CONV_MIN_FLOPS = 1 << 20

CPU_FLAG_RULES = (
    CpuFlagRule("matmul", _CPU_MATMUL_FLAGS),
    CpuFlagRule("layernorm", ("--iree-opt-level=O3",), min_flops=CPU_LAYERNORM_MIN_FLOPS),
    # Below that size: the fusion alone, which keeps LayerNorm's two row reductions
    # (fusilli/lowering/norm.py) and Y one dispatch (2 without it).
    CpuFlagRule("layernorm", ("--iree-dispatch-creation-enable-aggressive-fusion",), min_flops=0),
    # Conv as im2col + data-tiled ukernel matmul: 3x3 NHWC conv ~4x faster than
    # IREE's direct conv. im2col on an f16/bf16 conv fails to compile in IREE
    # 3.13 ('arith.addf' op requires the same type), but fusilli-conv-layout
    # (fusilli/passes/conv_layout.py) computes every f16/bf16 fprop conv in f32,
    # so they take the f32 path too.
    CpuFlagRule(
        "conv_fprop",
        ("--iree-global-opt-use-im2col-for-convs",) + _CPU_MATMUL_FLAGS,
        ("FLOAT", "HALF", "BFLOAT16"),
        min_flops=CPU_CONV_MIN_FLOPS,
    ),
)


def cpu_flags_for_workloads(workloads: Any) -> list[str]:
    """Per-op-class CPU flags for a graph's heavy ops (deduplicated, stable order)."""
    out: list[str] = []
    for rule in CPU_FLAG_RULES:
        if any(
            w.kind == rule.kind
            and w.flops >= rule.min_flops
            and (rule.elements is None or w.element.name in rule.elements)
            for w in workloads or ()
        ):
            out += [f for f in rule.flags if f not in out]
    return out


# Refused on the CPU backend. Fused padding produced CPU code that segfaulted
# when run (a padded NHWC conv + epilogue, seen before fusilli aligned every
# buffer to 64 bytes) and fails to compile realistic convs (1x64x56x56 3x3:
# "failed to run translation of source executable"); it gains nothing here.
CPU_CRASHING_FLAGS = ("--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops",)

# Flag pairs seen to crash IREE 3.13 in process (segfault): refused up front.
CRASHING_FLAG_PAIRS = (
    (
        "--iree-global-opt-enable-sink-transpose-through-pad",
        "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops",
    ),
)

# Marketing names (amd-smi) -> IREE target SKUs, as upstream Fusilli maps them.
_SKU_BY_MARKET_NAME = (
    ("MI355X", "mi355x"),
    ("MI350X", "mi350x"),
    ("MI325X", "mi325x"),
    ("MI308X", "mi308x"),
    ("MI300X", "mi300x"),
    ("MI300A", "mi300a"),
    ("MI250X", "mi250x"),
    ("MI250", "mi250"),
    ("MI210", "mi210"),
    ("MI100", "mi100"),
    ("W7900", "w7900"),
    ("W7800", "w7800"),
    ("W7700", "w7700"),
    ("V710", "v710"),
    ("RX 7900 XTX", "rx7900xtx"),
    ("RX 7900 XT", "rx7900xt"),
    ("RX 7800 XT", "rx7800xt"),
    ("RX 7700 XT", "rx7700xt"),
    ("RX 9070 XT", "rx9070xt"),
    ("RX 9070", "rx9070"),
    ("RX 9060 XT", "rx9060xt"),
    ("R9700", "r9700"),
)
_KNOWN_SKUS = {sku for _, sku in _SKU_BY_MARKET_NAME}
_GFX_RE = re.compile(r"^gfx(9(0[0-9a-f]|4[0-9a-f]|5[0-9a-f])|1[012][0-9a-f]{2})$")


def is_known_amdgpu_target(arch: str) -> bool:
    return bool(_GFX_RE.match(arch)) or arch in _KNOWN_SKUS


def detect_amdgpu_arch() -> str | None:
    """The local GPU's IREE target from amd-smi or rocm_agent_enumerator, if present."""
    amd_smi = os.environ.get("FUSILLI_EXTERNAL_AMD_SMI") or shutil.which("amd-smi")
    if amd_smi:
        try:
            out = subprocess.run(
                [amd_smi, "static", "--gpu", "0", "--json"], capture_output=True, text=True, timeout=20
            ).stdout
            text = json.dumps(json.loads(out)).upper()
            for market, sku in _SKU_BY_MARKET_NAME:
                if market in text:
                    return sku
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            logger.info("amd-smi probe failed: %s", e)
    enumerator = os.environ.get("FUSILLI_EXTERNAL_ROCM_AGENT_ENUMERATOR") or shutil.which("rocm_agent_enumerator")
    if enumerator:
        try:
            out = subprocess.run([enumerator], capture_output=True, text=True, timeout=20).stdout
            for line in out.split():
                if line.startswith("gfx") and line != "gfx000":
                    return line
        except (OSError, subprocess.SubprocessError) as e:
            logger.info("rocm_agent_enumerator probe failed: %s", e)
    return None


def resolve_amdgpu_arch(arch: str | None) -> str:
    arch = arch or os.environ.get("FUSILLI_AMDGPU_ARCH") or detect_amdgpu_arch()
    if not arch:
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            "no AMD GPU target known: pass arch= (e.g. 'gfx942'), set FUSILLI_AMDGPU_ARCH, or install "
            "amd-smi / rocm_agent_enumerator",
        )
    if not is_known_amdgpu_target(arch):
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown AMD GPU target {arch!r}; expected a gfx arch such as 'gfx942' or a SKU such as 'mi300x'",
        )
    return arch


@functools.lru_cache(maxsize=1)
def host_cpu_id() -> str:
    """What '--iree-llvmcpu-target-cpu=host' bakes in: part of the cache key."""
    model, flags = platform.machine(), ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name") and "name=" not in model:
                    model += " name=" + line.split(":", 1)[1].strip()
                elif line.startswith(("flags", "Features")) and not flags:
                    flags = line.split(":", 1)[1].strip()
    except OSError:
        pass
    import hashlib

    return model + " flags=" + hashlib.sha256(flags.encode()).hexdigest()[:16]


def extra_flags_from_environment() -> list[str]:
    """FUSILLI_EXTRA_COMPILER_FLAGS, split like a shell would (quotes group)."""
    text = os.environ.get("FUSILLI_EXTRA_COMPILER_FLAGS", "")
    try:
        return shlex.split(text)
    except ValueError as e:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"FUSILLI_EXTRA_COMPILER_FLAGS does not parse: {e}") from None


# Options fusilli's runtime depends on, with the one value it works with: the
# transient-workspace argument of every compiled function (Graph.workspace_size) and
# f64 buffers read as f64. A caller flag giving another value is refused.
REQUIRED_FLAG_VALUES = {
    "iree-torch-externalize-transients": "true",
    "iree-input-demote-f64-to-f32": "false",
}

_LLVM_BOOL_SPELLINGS = {"": "true", "true": "true", "1": "true", "false": "false", "0": "false"}


def _option_text(flag: str) -> str:
    """``name[=value]`` of ``-name[=value]`` or ``--name[=value]`` (LLVM reads both spellings alike)."""
    return flag[2:] if flag.startswith("--") else flag[1:] if flag.startswith("-") else flag


def canonical_flag(flag: str) -> str:
    """``flag`` spelled ``--name[=value]``: one spelling per option for the checks and the cache key."""
    return "--" + _option_text(flag) if flag.startswith("-") else flag


def parse_flag(flag: str) -> tuple[str, str]:
    """``(option name, value)`` of a compiler flag as LLVM's command line reads it: a bare
    boolean flag means ``true`` and ``=1``/``=0`` are ``true``/``false``."""
    name, _, value = _option_text(flag).partition("=")
    return name, _LLVM_BOOL_SPELLINGS.get(value.lower(), value)


def check_flags(backend: Backend, flags: list[str]) -> None:
    """Refuses flags that crash IREE 3.13 or break what fusilli's runtime relies on."""
    options = [parse_flag(f) for f in flags]
    enabled = {name for name, value in options if value == "true"}
    for flag, (name, value) in zip(flags, options):
        required = REQUIRED_FLAG_VALUES.get(name)
        if required is not None and value != required:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"compiler flag {flag} is refused: fusilli's runtime needs --{name}={required} "
                "(check FUSILLI_EXTRA_COMPILER_FLAGS)",
            )
    if backend == Backend.CPU:
        for bad in CPU_CRASHING_FLAGS:
            if bad.removeprefix("--") in enabled:
                raise fail(
                    ErrorCode.INVALID_ARGUMENT,
                    f"compiler flag {bad} makes IREE 3.13 emit CPU code that crashes when run; remove it "
                    "(check FUSILLI_EXTRA_COMPILER_FLAGS)",
                )
    for a, b in CRASHING_FLAG_PAIRS:
        if a.removeprefix("--") in enabled and b.removeprefix("--") in enabled:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"compiler flags {a} and {b} together crash IREE 3.13; drop one of them "
                "(check FUSILLI_EXTRA_COMPILER_FLAGS)",
            )


@dataclass(frozen=True)
class Target:
    backend: Backend
    arch: str | None  # AMD GPU target; None on CPU
    flags: tuple[str, ...]

    @property
    def device_id(self) -> str:
        return f"amdgpu:{self.arch}" if self.backend == Backend.AMDGPU else f"cpu:{host_cpu_id()}"

    @staticmethod
    def resolve(
        backend: Any, arch: str | None = None, extra_flags: tuple[str, ...] = (), workloads: Any = ()
    ) -> Target:
        """Flags for ``backend``; on CPU, the graph's heavy ``workloads`` add per-op-class flags."""
        backend = Backend.coerce(backend)
        if backend == Backend.CPU:
            flags = list(CPU_FLAGS) + cpu_flags_for_workloads(workloads)
            arch = None
        else:
            arch = resolve_amdgpu_arch(arch)
            flags = list(AMDGPU_FLAGS) + [f"--iree-rocm-target={arch}"]
        flags += [canonical_flag(f) for f in list(extra_flags) + extra_flags_from_environment()]
        check_flags(backend, flags)
        return Target(backend, arch, tuple(flags))
