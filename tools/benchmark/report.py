"""What fusilli-benchmark prints: rows as they finish (text table, CSV or JSON, all
carrying the host CPU, its features and the versions measured), and the ratio plot."""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any, TextIO

from .. import host_cpu, versions
from .problem import BenchmarkError

F32_FLOP_PER_CYCLE = 32  # two 256-bit FMA pipes per core (Zen 3/4, and AVX2/AVX-512 Intel cores alike)


def nominal_peak_gflops() -> float:
    """f32 peak at the nominal clock: cores x 32 FLOP/cycle x the clock /proc/cpuinfo
    reports. Turbo clocks run above it, so well-tuned kernels can exceed 100%."""
    mhz = []
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            mhz = [float(line.split(":", 1)[1]) for line in f if line.startswith("cpu MHz")]
    except (OSError, ValueError):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ghz = (max(mhz) / 1e3) if mhz else 2.45
    return round(cores * F32_FLOP_PER_CYCLE * ghz, 1)


PEAK_GFLOPS_DEFAULT = nominal_peak_gflops()

COLUMNS = (
    "command",
    "status",
    "iter",
    "fusilli_min_ms",
    "fusilli_median_ms",
    "fusilli_max_ms",
    "fusilli_stdev_ms",
    "torch_min_ms",
    "torch_median_ms",
    "torch_max_ms",
    "torch_stdev_ms",
    "ratio",
    "gflops",
    "pct_peak",
    "dispatch_count",
    "lowering",
    "executor",
    "compile_ms",
    "max_abs_err",
    "graph",
    "error",
)
# Where and with what the rows were measured: the same on every CSV row, once in JSON.
HOST_COLUMNS = ("host_cpu", "host_cpu_features", "fusilli_version", "iree_version", "torch_version")


def host_record(with_torch: bool) -> dict[str, Any]:
    model, features = host_cpu()
    found = versions(with_torch=with_torch)
    return {
        "cpu": model,
        "cpu_features": features,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "versions": found,
    }


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.{digits}g}" if abs(v) < 1e-3 and v != 0 else f"{v:.{digits}f}"
    return str(v)


class RowWriter:
    """Writes each row when it finishes (flushed), so an interrupted run keeps its rows;
    ``end`` closes the document (the JSON stays valid after an interrupt)."""

    def __init__(self, out: TextIO, fmt: str, peak: float, host: dict[str, Any]):
        self.out, self.fmt, self.peak, self.host = out, fmt, peak, host
        self.count = 0
        self.with_torch = False

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def begin(self, with_torch: bool) -> None:
        self.with_torch = with_torch
        versions = self.host["versions"]
        if self.fmt == "csv":
            self._csv_host = {
                "host_cpu": self.host["cpu"],
                "host_cpu_features": " ".join(self.host["cpu_features"]),
                "fusilli_version": f"{versions['fusilli']}+{versions['fusilli-sources']}",
                "iree_version": versions["iree-base-compiler"],
                "torch_version": versions.get("torch", ""),
            }
            self._csv = csv.DictWriter(self.out, fieldnames=list(COLUMNS + HOST_COLUMNS), lineterminator="\n")
            self._csv.writeheader()
            self.out.flush()
        elif self.fmt == "text":
            described = ", ".join(f"{k} {v}" for k, v in versions.items() if k != "fusilli-sources")
            self._write(f"host: {self.host['cpu']}, {self.host['cores']} cores; {described}\n\n")
            head = ["benchmark", "fusilli ms (min/med/max)"]
            if with_torch:
                head += ["PyTorch ms (med)", "ratio (torch/fusilli)"]
            head += ["GFLOP/s", f"% of {self.peak:g} GFLOP/s", "dispatches", "lowering (g.explain)", "executor"]
            self._head = head
            self._write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")

    def row(self, r: dict[str, Any]) -> None:
        if self.fmt == "json":
            if self.count == 0:  # written with the first row, so a --dump before it stays outside the JSON
                header = json.dumps({"peak_gflops": self.peak, "host": self.host}, indent=2)
                self._write(header[: header.rindex("}")].rstrip() + ',\n  "rows": [\n')
            # Each row is a whole line as soon as it is measured (a leading comma joins it to the last).
            self._write(("    , " if self.count else "      ") + json.dumps(r) + "\n")
        elif self.fmt == "csv":
            self._csv.writerow({**{k: r.get(k, "") for k in COLUMNS}, **self._csv_host})
            self.out.flush()
        else:
            self._write(self._text_row(r))
        self.count += 1

    def _text_row(self, r: dict[str, Any]) -> str:
        label = r["command"]
        if r["status"] == "compiled":
            cells = [label, f"compiled in {r['compile_ms']:.0f} ms"]
        elif r["status"] != "ok":
            cells = [label, r["status"] + (": " + r.get("error", "") if r.get("error") else "")]
        else:
            cells = [label, f"{r['fusilli_min_ms']:.3f} / {r['fusilli_median_ms']:.3f} / {r['fusilli_max_ms']:.3f}"]
            if self.with_torch:
                cells += [_fmt(r.get("torch_median_ms")), _fmt(r.get("ratio"), 2)]
            cells += [
                f"{r['gflops']:.1f}",
                f"{r['pct_peak']:.1f}",
                str(r["dispatch_count"]),
                r.get("lowering", ""),
                r.get("executor", ""),
            ]
        cells += [""] * (len(self._head) - len(cells))
        return "| " + " | ".join(c.replace("|", "/") for c in cells) + " |\n"

    def end(self) -> None:
        if self.fmt == "json":
            if self.count == 0:
                self._write(json.dumps({"peak_gflops": self.peak, "host": self.host, "rows": []}, indent=2) + "\n")
            else:
                self._write("  ]\n}\n")


def plot_ratios(rows: list[dict[str, Any]], path: str) -> None:
    """A horizontal bar per measured row: PyTorch median / fusilli median (right of 1: fusilli faster),
    with each library's min..max range folded into the ratio's spread."""
    measured = [r for r in rows if r.get("ratio") is not None]
    if not measured:
        raise BenchmarkError("--plot: no row has a torch/fusilli ratio")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise BenchmarkError("--plot needs matplotlib: pip install 'fusilli[plot]'") from None
    labels = [r["command"] for r in measured][::-1]
    ratios = [r["ratio"] for r in measured][::-1]
    # The spread: the ratio if PyTorch's and fusilli's medians were at the ends of their ranges.
    low = [r["torch_min_ms"] / r["fusilli_max_ms"] for r in measured][::-1]
    high = [r["torch_max_ms"] / r["fusilli_min_ms"] for r in measured][::-1]
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(measured) + 1.6))
    colors = ["#2a9d8f" if v >= 1 else "#e76f51" for v in ratios]
    ax.barh(range(len(ratios)), ratios, color=colors, height=0.65)
    ax.errorbar(
        ratios,
        range(len(ratios)),
        xerr=[[max(v - lo, 0) for v, lo in zip(ratios, low)], [max(hi - v, 0) for v, hi in zip(ratios, high)]],
        fmt="none",
        ecolor="#444444",
        elinewidth=0.8,
        capsize=2,
    )
    for y, v in enumerate(ratios):
        ax.text(v, y, f" {v:.2f}", va="center", fontsize=8)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}" if v >= 1 else f"1/{1 / v:g}"))
    ax.set_xlabel("PyTorch median / fusilli median (log scale; > 1: fusilli faster; whiskers: min/max spread)")
    host = host_record(with_torch=True)
    ax.set_title(
        f"fusilli vs PyTorch eager on {host['cpu']} ({host['cores']} cores), "
        f"IREE {host['versions']['iree-base-compiler']}, torch {host['versions'].get('torch', '?')}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
