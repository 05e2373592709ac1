"""Compile targets: what fusilli compiles for, and the base compiler flags of each.

A ``Target`` is a backend plus the hardware facts lowering rules are chosen by
(fusilli/backend/rules.py): for the CPU the LLVM CPU name and the ISA features
it implies (from this machine's /proc/cpuinfo for ``"host"``, from LLVM's own
table in cpu_table.py for a named CPU), for an AMD GPU the gfx arch and its
matrix units. The target is part of every cache key, is recorded with every
artifact, and an artifact whose CPU features this machine lacks is refused at
load (it would die of SIGILL at execute). CPU names and features are checked
here, before LLVM sees them: LLVM ends the process on some bad ones.
"""

from __future__ import annotations

import difflib
import enum
import functools
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from typing import Any

from fusilli.backend.cpu_table import CPU_FEATURES, KNOWN_FEATURES
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


# ---------------------------------------------------------------- AMD GPU archs


@dataclass(frozen=True)
class AmdGpuArch:
    """What a gfx arch brings to lowering: its matrix instructions and their operand types."""

    gfx: str
    matrix_unit: str | None  # "mfma" (CDNA), "wmma" (RDNA 3/4), None (no matrix unit known)
    matrix_types: tuple[str, ...] = ()  # element types the matrix unit multiplies

    @property
    def features(self) -> frozenset[str]:
        unit = () if self.matrix_unit is None else (self.matrix_unit,)
        return frozenset(unit + tuple(f"{self.matrix_unit}-{t}" for t in self.matrix_types))


# From the AMD ISA manuals (CDNA 1-4, RDNA 3-4) as IREE's ROCm target table
# (KnownTargets.cpp) records them.
_AMDGPU_ARCHS = {
    a.gfx: a
    for a in (
        AmdGpuArch("gfx908", "mfma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx90a", "mfma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx940", "mfma", ("f16", "bf16", "i8", "f8e4m3fnuz", "f8e5m2fnuz")),
        AmdGpuArch("gfx941", "mfma", ("f16", "bf16", "i8", "f8e4m3fnuz", "f8e5m2fnuz")),
        AmdGpuArch("gfx942", "mfma", ("f16", "bf16", "i8", "f8e4m3fnuz", "f8e5m2fnuz")),
        AmdGpuArch("gfx950", "mfma", ("f16", "bf16", "i8", "f8e4m3fn", "f8e5m2")),
        AmdGpuArch("gfx1100", "wmma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx1101", "wmma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx1102", "wmma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx1103", "wmma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx1150", "wmma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx1151", "wmma", ("f16", "bf16", "i8")),
        AmdGpuArch("gfx1200", "wmma", ("f16", "bf16", "i8", "f8e4m3fn", "f8e5m2")),
        AmdGpuArch("gfx1201", "wmma", ("f16", "bf16", "i8", "f8e4m3fn", "f8e5m2")),
    )
}
# IREE target SKUs -> their gfx arch.
_GFX_BY_SKU = {
    "mi355x": "gfx950",
    "mi350x": "gfx950",
    "mi325x": "gfx942",
    "mi308x": "gfx942",
    "mi300x": "gfx942",
    "mi300a": "gfx942",
    "mi250x": "gfx90a",
    "mi250": "gfx90a",
    "mi210": "gfx90a",
    "mi100": "gfx908",
    "w7900": "gfx1100",
    "w7800": "gfx1100",
    "w7700": "gfx1101",
    "v710": "gfx1101",
    "rx7900xtx": "gfx1100",
    "rx7900xt": "gfx1100",
    "rx7800xt": "gfx1101",
    "rx7700xt": "gfx1101",
    "rx9070xt": "gfx1201",
    "rx9070": "gfx1201",
    "rx9060xt": "gfx1200",
    "r9700": "gfx1201",
}


def amdgpu_arch_info(arch: str) -> AmdGpuArch:
    """The gfx arch behind ``arch`` (a gfx name or an IREE SKU) and its matrix units."""
    gfx = _GFX_BY_SKU.get(arch, arch)
    return _AMDGPU_ARCHS.get(gfx) or AmdGpuArch(gfx, None)


# ---------------------------------------------------------------- CPUs

# /proc/cpuinfo flag -> LLVM feature, for the ISA extensions compiled code may
# use (and die of SIGILL without). Only these features are compared when an
# artifact is loaded: the others (tuning, system instructions) never appear in
# tensor code, and a hypervisor hides some of them anyway.
_LINUX_CPU_FLAGS = {
    "x86_64": {
        "sse": "sse",
        "sse2": "sse2",
        "pni": "sse3",
        "ssse3": "ssse3",
        "sse4_1": "sse4.1",
        "sse4_2": "sse4.2",
        "sse4a": "sse4a",
        "popcnt": "popcnt",
        "avx": "avx",
        "avx2": "avx2",
        "fma": "fma",
        "fma4": "fma4",
        "xop": "xop",
        "f16c": "f16c",
        "bmi1": "bmi",
        "bmi2": "bmi2",
        "abm": "lzcnt",
        "movbe": "movbe",
        "aes": "aes",
        "pclmulqdq": "pclmul",
        "sha_ni": "sha",
        "gfni": "gfni",
        "vaes": "vaes",
        "vpclmulqdq": "vpclmulqdq",
        "avx512f": "avx512f",
        "avx512bw": "avx512bw",
        "avx512cd": "avx512cd",
        "avx512dq": "avx512dq",
        "avx512vl": "avx512vl",
        "avx512ifma": "avx512ifma",
        "avx512vbmi": "avx512vbmi",
        "avx512_vbmi2": "avx512vbmi2",
        "avx512_vnni": "avx512vnni",
        "avx512_bitalg": "avx512bitalg",
        "avx512_vpopcntdq": "avx512vpopcntdq",
        "avx512_bf16": "avx512bf16",
        "avx512_fp16": "avx512fp16",
        "avx512_vp2intersect": "avx512vp2intersect",
        "avx_vnni": "avxvnni",
        "avx_ifma": "avxifma",
        "avx_vnni_int8": "avxvnniint8",
        "avx_vnni_int16": "avxvnniint16",
        "avx_ne_convert": "avxneconvert",
        "amx_tile": "amx-tile",
        "amx_bf16": "amx-bf16",
        "amx_int8": "amx-int8",
        "amx_fp16": "amx-fp16",
    },
    "aarch64": {
        "fp": "fp-armv8",
        "asimd": "neon",
        "aes": "aes",
        "sha2": "sha2",
        "crc32": "crc",
        "atomics": "lse",
        "asimdhp": "fullfp16",
        "asimdrdm": "rdm",
        "asimddp": "dotprod",
        "asimdfhm": "fp16fml",
        "sve": "sve",
        "sve2": "sve2",
        "svebitperm": "sve-bitperm",
        "i8mm": "i8mm",
        "bf16": "bf16",
        "sme": "sme",
        "sme2": "sme2",
    },
}
# (implementer, part) from /proc/cpuinfo -> LLVM CPU name, for the aarch64 server cores.
_ARM_PARTS = {
    ("0x41", "0xd0c"): "neoverse-n1",
    ("0x41", "0xd40"): "neoverse-v1",
    ("0x41", "0xd49"): "neoverse-n2",
    ("0x41", "0xd4f"): "neoverse-v2",
    ("0x41", "0xd84"): "neoverse-v3",
    ("0x41", "0xd8e"): "neoverse-n3",
    ("0xc0", "0xac3"): "ampere1",
    ("0x61", "0x022"): "apple-m1",
}


def checked_features(machine: str) -> frozenset[str]:
    """The features compared between an artifact and the machine that loads it."""
    return frozenset(_LINUX_CPU_FLAGS.get(machine, {}).values())


@dataclass(frozen=True)
class Cpu:
    """A CPU to compile for: the LLVM name and the ISA features it implies."""

    machine: str  # CPU architecture: "x86_64" or "aarch64"
    name: str  # LLVM CPU name ("host" is resolved to the detected one)
    features: frozenset[str]
    # What IREE is told: "host" lets LLVM read this machine's CPUID (the
    # features a hypervisor hides stay off); otherwise the name.
    llvm_cpu: str


# LLVM's names of AMD x86 CPUs begin with these; every other named x86 CPU is Intel's
# (the generic x86-64 levels have no vendor).
_AMD_X86_NAME_PREFIXES = ("znver", "bdver", "btver", "amdfam", "athlon", "opteron", "barcelona", "k8", "k6", "geode")


def cpu_vendor(cpu: Cpu | None) -> str | None:
    """``"amd"`` or ``"intel"`` for a named x86 CPU; None for a generic level (``x86-64-v3``)
    or another architecture. Lowering rules that differ by vendor (measured: the same
    ISA, different cores) key on it; it follows from the CPU name, which is in the cache key."""
    if cpu is None or cpu.machine != "x86_64" or cpu.name in ("generic", "x86-64") or cpu.name.startswith("x86-64-"):
        return None
    return "amd" if cpu.name.startswith(_AMD_X86_NAME_PREFIXES) else "intel"


def cpu_core(cpu: Cpu | None) -> str | None:
    """The LLVM name of a named x86 CPU (``"znver5"``), for the few lowering choices measured to
    differ between cores of one vendor and ISA; None where ``cpu_vendor`` is None."""
    return cpu.name if cpu is not None and cpu_vendor(cpu) is not None else None


def host_machine() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def read_cpuinfo() -> dict[str, str]:
    """The first processor's /proc/cpuinfo fields (empty where there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError as e:
        logger.info("cannot read /proc/cpuinfo: %s", e)
    return fields


def _amd_zen_name(family: int, model: int) -> str | None:
    """LLVM's name for an AMD family 17h/19h/1Ah core (as llvm::sys::getHostCPUName decides)."""
    if family == 0x17:
        return "znver2" if model >= 0x30 else "znver1"
    if family == 0x19:
        return "znver4" if 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF else "znver3"
    if family == 0x1A:
        return "znver5"
    return None


def _best_named_cpu(machine: str, features: frozenset[str]) -> str:
    """The LLVM CPU whose checked features are the largest subset of ``features``."""
    checked = checked_features(machine)
    best, best_n = "", -1
    for name, implied in CPU_FEATURES.get(machine, {}).items():
        need = frozenset(implied.split()) & checked
        if need <= features and len(need) > best_n:
            best, best_n = name, len(need)
    return best or "generic"


@functools.lru_cache(maxsize=1)
def host_cpu() -> Cpu:
    """This machine's CPU: its LLVM name and its ISA features (from /proc/cpuinfo)."""
    machine = host_machine()
    info = read_cpuinfo()
    linux_flags = (info.get("flags") or info.get("Features") or "").split()
    mapping = _LINUX_CPU_FLAGS.get(machine, {})
    features = frozenset(mapping[f] for f in linux_flags if f in mapping)
    name = None
    if machine == "x86_64" and info.get("vendor_id") in ("AuthenticAMD", "HygonGenuine"):
        try:
            name = _amd_zen_name(int(info.get("cpu family", "0")), int(info.get("model", "0")))
        except ValueError:
            name = None
    elif machine == "aarch64":
        name = _ARM_PARTS.get((info.get("CPU implementer", ""), info.get("CPU part", "")))
    if name is None or name not in CPU_FEATURES.get(machine, {}):
        name = _best_named_cpu(machine, features)
    return Cpu(machine, name, features, "host")


def named_cpu(name: str, what: str = "CPU arch") -> Cpu:
    """The CPU LLVM calls ``name`` (this machine's architecture first), or INVALID_ARGUMENT."""
    if name in ("host", "native"):
        return host_cpu()
    here = host_machine()
    for machine in [here] + [m for m in CPU_FEATURES if m != here]:
        implied = CPU_FEATURES[machine].get(name)
        if implied is not None:
            return Cpu(machine, name, frozenset(implied.split()), name)
    known = CPU_FEATURES.get(here, {})
    close = difflib.get_close_matches(name, list(known), n=4)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise fail(
        ErrorCode.INVALID_ARGUMENT,
        f"unknown {what} {name!r}: not a CPU LLVM knows for {here}{hint} (use 'host', an LLVM CPU name such as "
        f"'znver4', 'x86-64-v3', 'sapphirerapids', 'neoverse-v2', or FUSILLI_CPU_ARCH)",
    )


def _with_feature_list(cpu: Cpu, text: str, source: str) -> Cpu:
    """``cpu`` with an LLVM feature list (``+avx2,-avx512f``) applied, each name checked."""
    if text == "host":
        return replace(cpu, features=host_cpu().features)
    known = frozenset(KNOWN_FEATURES.get(cpu.machine, "").split())
    features = set(cpu.features)
    for item in text.split(","):
        item = item.strip()
        sign, name = item[:1], item[1:]
        if sign not in ("+", "-") or name not in known:
            close = difflib.get_close_matches(name, list(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"{source}: {item!r} is not '+feature' or '-feature' with a feature LLVM knows for {cpu.machine}{hint}",
            )
        (features.add if sign == "+" else features.discard)(name)
    return replace(cpu, features=frozenset(features))


def normalized_flag(flag: str) -> str:
    """``flag`` with LLVM's optional second dash: ``-iree-x`` and ``--iree-x`` are one option."""
    return "-" + flag if flag.startswith("-") and not flag.startswith("--") else flag


_CPU_FLAG = "--iree-llvmcpu-target-cpu="
_CPU_FEATURES_FLAG = "--iree-llvmcpu-target-cpu-features="
_TRIPLE_FLAG = "--iree-llvmcpu-target-triple="
_TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu"}


def _cpu_from_flags(cpu: Cpu, flags: list[str]) -> Cpu:
    """The CPU ``flags`` (caller / FUSILLI_EXTRA_COMPILER_FLAGS) select, checked: the last
    ``--iree-llvmcpu-target-cpu=`` wins as in LLVM, then its feature lists apply."""
    for flag in flags:
        flag = normalized_flag(flag)
        if flag.startswith(_CPU_FLAG):
            cpu = named_cpu(flag[len(_CPU_FLAG) :], f"CPU in compiler flag {flag!r}")
    for flag in flags:
        flag = normalized_flag(flag)
        if flag.startswith(_CPU_FEATURES_FLAG):
            cpu = _with_feature_list(cpu, flag[len(_CPU_FEATURES_FLAG) :], f"compiler flag {flag!r}")
        elif flag.startswith(_TRIPLE_FLAG):
            triple = flag[len(_TRIPLE_FLAG) :]
            if not triple.startswith(cpu.machine):
                raise fail(
                    ErrorCode.INVALID_ARGUMENT,
                    f"compiler flag {flag!r} targets another CPU architecture than CPU {cpu.name!r} "
                    f"({cpu.machine}); pass arch= for the CPU instead",
                )
    return cpu


def default_cpu_arch() -> str:
    return os.environ.get("FUSILLI_CPU_ARCH") or "host"


# ---------------------------------------------------------------- flags and Target


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
    "--iree-torch-externalize-transients": "true",
    "--iree-input-demote-f64-to-f32": "false",
}

_LLVM_BOOL_SPELLINGS = {"": "true", "true": "true", "1": "true", "false": "false", "0": "false"}


def parse_flag(flag: str) -> tuple[str, str]:
    """``(--option, value)`` of a compiler flag as LLVM's command line reads it: either dash
    spelling, a bare boolean flag meaning ``true``, ``=1``/``=0`` meaning ``true``/``false``."""
    name, _, value = normalized_flag(flag).partition("=")
    return name, _LLVM_BOOL_SPELLINGS.get(value.lower(), value)


def _refuse_crashing_flags(backend: Backend, flags: list[str]) -> None:
    """Refuses flags that crash IREE 3.13, or that negate what fusilli's runtime relies on."""
    options = [parse_flag(f) for f in flags]
    enabled = {name for name, value in options if value == "true"}
    for flag, (name, value) in zip(flags, options):
        required = REQUIRED_FLAG_VALUES.get(name)
        if required is not None and value != required:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"compiler flag {flag} is refused: fusilli's runtime needs {name}={required} "
                "(check FUSILLI_EXTRA_COMPILER_FLAGS)",
            )
    if backend == Backend.CPU:
        for bad in CPU_CRASHING_FLAGS:
            if bad in enabled:
                raise fail(
                    ErrorCode.INVALID_ARGUMENT,
                    f"compiler flag {bad} makes IREE 3.13 emit CPU code that crashes when run; remove it "
                    "(check FUSILLI_EXTRA_COMPILER_FLAGS)",
                )
    for a, b in CRASHING_FLAG_PAIRS:
        if a in enabled and b in enabled:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"compiler flags {a} and {b} together crash IREE 3.13; drop one of them "
                "(check FUSILLI_EXTRA_COMPILER_FLAGS)",
            )


@dataclass(frozen=True)
class Target:
    """What a graph is compiled for, and the compiler flags that say so.

    ``arch`` is the concrete LLVM CPU name on CPU (``"host"`` resolved) and the
    gfx arch / SKU on AMD GPU; ``features`` are the CPU's ISA features or the
    GPU's matrix-unit capabilities (``mfma``, ``mfma-bf16``, ...).
    """

    backend: Backend
    arch: str
    features: frozenset[str]
    flags: tuple[str, ...] = ()
    cpu: Cpu | None = None
    gpu: AmdGpuArch | None = field(default=None)

    @property
    def device_id(self) -> str:
        """Backend, arch and features: part of the cache key."""
        if self.cpu is not None:
            digest = hashlib.sha256(" ".join(sorted(self.features)).encode()).hexdigest()[:16]
            return f"cpu:{self.cpu.machine}:{self.arch}:{self.cpu.llvm_cpu}:{digest}"
        return f"amdgpu:{self.arch}"

    def has(self, *features: str) -> bool:
        """Whether the target has any of ``features``."""
        return any(f in self.features for f in features)

    def describe(self) -> str:
        if self.cpu is not None:
            host = " (host)" if self.cpu.llvm_cpu == "host" else ""
            return f"cpu {self.arch}{host}, {self.cpu.machine}"
        unit = self.gpu.matrix_unit if self.gpu and self.gpu.matrix_unit else "no known matrix unit"
        return f"amdgpu {self.arch} ({unit})"

    def record(self) -> dict[str, Any]:
        """What an artifact stores about its target (``Target.check_runs_here`` reads it)."""
        out: dict[str, Any] = {"backend": self.backend.value, "arch": self.arch, "features": sorted(self.features)}
        if self.cpu is not None:
            out["machine"] = self.cpu.machine
            out["llvm_cpu"] = self.cpu.llvm_cpu
        return out

    @staticmethod
    def from_record(record: dict[str, Any]) -> Target:
        backend = Backend(record["backend"])
        features = frozenset(str(f) for f in record.get("features") or ())
        arch = str(record.get("arch") or "host")
        if backend == Backend.CPU:
            machine = str(record.get("machine") or host_machine())
            cpu = Cpu(machine, arch, features, str(record.get("llvm_cpu") or arch))
            return Target(backend, arch, features, cpu=cpu)
        return Target(backend, arch, features, gpu=amdgpu_arch_info(arch))

    def check_runs_here(self, what: str) -> None:
        """Refuses (INVALID_ARGUMENT) CPU code needing features or an architecture this machine lacks."""
        if self.cpu is None:
            return
        host = host_cpu()
        if self.cpu.machine != host.machine:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"{what} was compiled for a {self.cpu.machine} CPU ({self.arch}); this machine is {host.machine}",
            )
        if not host.features or not self.features:
            logger.warning("%s: CPU features unknown (this machine's or the artifact's); loaded unchecked", what)
            return
        missing = sorted((self.features & checked_features(host.machine)) - host.features)
        if missing:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"{what} was compiled for CPU {self.arch!r}, which has ISA features this CPU ({host.name}) "
                f"lacks: {', '.join(missing)}; running it would fault on an illegal instruction. Compile it "
                f"for this machine (arch='host') or for a CPU it has every feature of",
            )

    @staticmethod
    def resolve(
        backend: Any,
        arch: str | None = None,
        extra_flags: tuple[str, ...] | list[str] = (),
        nodes: Any = (),
        cpu: Cpu | None = None,
    ) -> Target:
        """The target ``backend``/``arch`` names, with its compiler flags: the backend's base
        flags, the lowering rules' flags for the graph's ``nodes`` (fusilli/backend/rules.py),
        then the caller's and FUSILLI_EXTRA_COMPILER_FLAGS (last, so users override).
        ``cpu`` replaces the CPU ``arch`` names (an artifact's recorded one)."""
        backend = Backend.coerce(backend)
        extras = list(extra_flags) + extra_flags_from_environment()
        if backend == Backend.CPU:
            cpu = cpu or named_cpu(arch or default_cpu_arch())
            cpu = _cpu_from_flags(cpu, extras)
            base = list(CPU_FLAGS) + [f"{_CPU_FLAG}{cpu.llvm_cpu}"]
            if cpu.machine != host_machine():
                base.append(f"{_TRIPLE_FLAG}{_TRIPLES[cpu.machine]}")
            target = Target(backend, cpu.name, cpu.features, cpu=cpu)
        else:
            arch = resolve_amdgpu_arch(arch)
            gpu = amdgpu_arch_info(arch)
            base = list(AMDGPU_FLAGS) + [f"--iree-rocm-target={arch}"]
            target = Target(backend, arch, gpu.features, gpu=gpu)
        from fusilli.backend.rules import compile_flags

        flags = base + [f for f in compile_flags(nodes, target) if f not in base] + extras
        _refuse_crashing_flags(backend, flags)
        return replace(target, flags=tuple(flags))
