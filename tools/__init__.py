"""Command-line tools installed with the package: ``fusilli-opt``, ``fusilli-benchmark``,
``fusilli-cache``. Each is a subpackage with a ``__main__`` (``python -m fusilli.tools.opt``).

The sources live in the repository's top-level ``tools/`` directory and are installed
as ``fusilli.tools`` (setuptools ``package-dir``); in a source checkout
``fusilli/__init__.py`` binds ``fusilli.tools`` to this directory.

What every tool's ``--version`` prints is defined here.
"""

from __future__ import annotations

import argparse
import functools
import platform

# The host CPU's feature flags that decide which vector code runs (the rest of /proc/cpuinfo's list is noise here).
_ISA_PREFIXES = ("sse", "ssse", "avx", "fma", "f16c", "amx", "bmi", "vnni", "asimd", "neon", "sve", "fp16", "bf16")


@functools.lru_cache(maxsize=1)
def host_cpu() -> tuple[str, list[str]]:
    """The host CPU's model name and its vector ISA features (from /proc/cpuinfo)."""
    from fusilli.backend.targets import read_cpuinfo

    fields = read_cpuinfo()
    model = fields.get("model name") or fields.get("Model") or platform.processor() or platform.machine()
    flags = (fields.get("flags") or fields.get("Features") or "").split()
    return model, sorted(f for f in flags if f.startswith(_ISA_PREFIXES))


def versions(with_torch: bool = False) -> dict[str, str]:
    """fusilli's and IREE's versions (the ones the cache key uses); PyTorch's when asked and installed."""
    import fusilli
    from fusilli.backend.cache import dist_version
    from fusilli.backend.cache import versions as toolchain

    found = {
        "fusilli": fusilli.__version__,
        "fusilli-sources": toolchain()["sources"],
        "iree-base-compiler": toolchain()["iree-base-compiler"],
        "iree-base-runtime": dist_version("iree-base-runtime"),
    }
    if with_torch:
        try:
            import torch

            found["torch"] = torch.__version__
        except ImportError:
            found["torch"] = "not installed"
    return found


def version_text(prog: str) -> str:
    """What ``--version`` prints: versions, Python, the host CPU and its features."""
    model, features = host_cpu()
    lines = [f"{prog} (fusilli {versions()['fusilli']})"]
    lines += [f"  {name}: {value}" for name, value in versions().items()]
    lines.append(f"  python: {platform.python_version()}")
    lines.append(f"  host cpu: {model} ({platform.machine()})")
    lines.append(f"  host cpu features: {' '.join(features) or 'unknown'}")
    return "\n".join(lines)


class _VersionAction(argparse.Action):
    """``--version``: computed only when asked (it imports IREE's runtime)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text(parser.prog))
        parser.exit()


def add_version_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--version", action=_VersionAction, help="print fusilli's, IREE's and the host CPU's versions and features"
    )
