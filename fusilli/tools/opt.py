"""``fusilli-opt``: run fusilli's (and upstream MLIR's) passes over a module, like ``mlir-opt``.

The input is a graph JSON (``Graph.to_json``), whose emitted torch-dialect module
is the starting IR, or an MLIR file. Passes run only when ``--pass-pipeline`` is
given, so ``fusilli-opt graph.json`` prints what the graph emits and
``--pass-pipeline=default`` runs what ``Graph.compile`` runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from fusilli import ir
from fusilli.backend import Target, compile_module, compile_module_to_phase
from fusilli.backend.compiler import PHASES
from fusilli.errors import ErrorCode, FusilliError, fail
from fusilli.passes import DEFAULT_PIPELINE, PASSES, Pass, Pipeline

PROG = "fusilli-opt"
DUMP_HEADER = "// -----// IR Dump After {} //----- //"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Print a fusilli graph's IR, or an MLIR module, after fusilli and upstream MLIR passes.",
        epilog="No pass runs unless --pass-pipeline is given; --pass-pipeline=default runs the pipeline "
        f"Graph.compile uses ({DEFAULT_PIPELINE}).",
    )
    parser.add_argument(
        "input",
        nargs="?",
        help="a graph JSON file (*.json), an MLIR file, or '-' for stdin (JSON when it starts with '{')",
    )
    parser.add_argument("-o", dest="output", metavar="OUT", help="write the result to OUT instead of stdout")
    parser.add_argument(
        "--pass-pipeline",
        metavar="PIPELINE",
        help="comma-separated passes: fusilli passes (see --list-passes) and upstream MLIR/IREE passes "
        "by name, e.g. 'fusilli-layout,canonicalize'; 'default' is fusilli's default pipeline",
    )
    parser.add_argument(
        "--print-ir-after-all",
        action="store_true",
        help="print '// -----// IR Dump After <pass> //----- //' and the module after each pass; "
        "the dumps go to stdout (not stderr as in mlir-opt) so FileCheck sees them in order",
    )
    result = parser.add_mutually_exclusive_group()
    result.add_argument(
        "--compile-to",
        metavar="PHASE",
        choices=PHASES,
        help=f"after the pass pipeline, compile with IREE up to PHASE and print that IR ({', '.join(PHASES)})",
    )
    result.add_argument(
        "--stats",
        action="store_true",
        help="after the pass pipeline, compile fully and print 'dispatch-count: N' and 'transient-memory-bytes: N'",
    )
    parser.add_argument("--backend", default="cpu", choices=("cpu", "amdgpu"), help="compile target (default cpu)")
    parser.add_argument(
        "--arch",
        help="target arch: an LLVM CPU name for cpu (default FUSILLI_CPU_ARCH or 'host'; e.g. znver4, "
        "x86-64-v3, sapphirerapids), a gfx arch or SKU for amdgpu (e.g. gfx942)",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="for a graph JSON: print one line per node with the lowering rule chosen for the target and why",
    )
    parser.add_argument("--list-passes", action="store_true", help="list fusilli's passes and exit")
    return parser


def list_passes() -> str:
    width = max(len(name) for name in PASSES)
    lines = [f"{name:<{width}}  {PASSES[name].description}" for name in sorted(PASSES)]
    lines.append("(any other name is run as an upstream MLIR/IREE/torch-mlir pass)")
    return "\n".join(lines) + "\n"


def read_input(path: str) -> tuple[str, bool]:
    """The input's text and whether it is a graph JSON."""
    if path == "-":
        text = sys.stdin.read()
        return text, text.lstrip().startswith("{")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise fail(ErrorCode.FILE_SYSTEM_FAILURE, f"cannot read input {path!r}: {e}") from None
    return text, path.endswith(".json")


def load_graph(text: str):
    from fusilli.graph import Graph

    graph = Graph.from_json(text)
    graph.validate()
    return graph


def load_module(path: str, text: str, graph: Any, target: Target) -> ir.Module:
    """The module to transform: a graph's module emitted for ``target``, or the parsed MLIR file."""
    name = "<stdin>" if path == "-" else path
    if graph is not None:
        from fusilli.lowering import emit_module

        return emit_module(graph, target)
    try:
        module = ir.parse_module(text)
    except Exception as e:  # the bindings' MLIRError, which fusilli.ir does not re-export
        raise fail(ErrorCode.INVALID_ARGUMENT, f"{name} is not a valid MLIR module: {e}") from None
    return module


def verify(module: ir.Module, after: str) -> None:
    try:
        module.operation.verify()
    except Exception as e:  # MLIRError, as in load_module
        raise fail(ErrorCode.INTERNAL_ERROR, f"the module does not verify after {after}: {e}") from None


def run_pipeline(module: ir.Module, text: str, dump: TextIO | None, target: Target) -> None:
    pipeline = Pipeline.parse(DEFAULT_PIPELINE if text.strip() == "default" else text, target)

    def after_each(p: Pass, m: ir.Module) -> None:
        verify(m, f"pass {p.name!r}")
        if dump is not None:
            print(DUMP_HEADER.format(p.name), file=dump)
            print(m, file=dump, flush=True)

    pipeline.run(module, after_each)


def run(args: argparse.Namespace) -> str:
    """The tool's result for ``args`` (IR, statistics or the pass list)."""
    if args.list_passes:
        return list_passes()
    if args.input is None:
        raise fail(ErrorCode.INVALID_ARGUMENT, "no input given (a graph JSON, an MLIR file or '-')")
    text, is_json = read_input(args.input)
    graph = load_graph(text) if is_json else None
    # A graph's target carries the flags its lowering rules add; an MLIR file gets the base flags.
    target = graph.target(args.backend, args.arch) if graph is not None else Target.resolve(args.backend, args.arch)
    if args.explain:
        if graph is None:
            raise fail(ErrorCode.INVALID_ARGUMENT, "--explain needs a graph JSON input (rules are chosen per node)")
        return graph.explain(args.backend, args.arch) + "\n"
    module = load_module(args.input, text, graph, target)
    verify(module, "loading the input")
    if args.pass_pipeline:
        run_pipeline(module, args.pass_pipeline, sys.stdout if args.print_ir_after_all else None, target)
    if not (args.stats or args.compile_to):
        return f"{module}\n"
    if args.compile_to:
        return compile_module_to_phase(module, target.flags, args.compile_to)
    _, stats = compile_module(module, target.flags)
    return f"dispatch-count: {stats.dispatch_count}\ntransient-memory-bytes: {stats.transient_memory_bytes}\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = run(args)
        if args.output:
            try:
                with open(args.output, "w", encoding="utf-8") as f:
                    f.write(result)
            except OSError as e:
                raise fail(ErrorCode.FILE_SYSTEM_FAILURE, f"cannot write output {args.output!r}: {e}") from None
        else:
            sys.stdout.write(result)
            sys.stdout.flush()
    except FusilliError as e:
        sys.stdout.flush()
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
