"""``fusilli-opt``: run fusilli's (and upstream MLIR's) passes over a module, like ``mlir-opt``.

The input is a graph JSON (``Graph.to_json``), whose emitted torch-dialect module
is the starting IR, or an MLIR file; stdin when no file (or ``-``) is given.
Passes run only when ``--pass-pipeline`` is given, so ``fusilli-opt graph.json``
prints what the graph emits and ``--pass-pipeline=default`` runs what
``Graph.compile`` runs. As in mlir-opt: ``--split-input-file`` treats each
``// -----`` separated chunk as its own module, the IR is verified after every
pass (``--verify-each``, on by default), the whole pipeline is checked before
any pass runs, and ``--mlir-print-debuginfo`` prints each op's location (the
graph node it was emitted for).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from fusilli import ir
from fusilli.backend import Target, compile_module, compile_module_to_phase
from fusilli.backend.compiler import PHASES
from fusilli.errors import ErrorCode, FusilliError, fail
from fusilli.passes import DEFAULT_PIPELINE, PASSES, Pass, Pipeline

from .. import add_version_argument

if TYPE_CHECKING:
    from fusilli.graph import Graph

PROG = "fusilli-opt"
DUMP_AFTER = "// -----// IR Dump After {} //----- //"
DUMP_BEFORE = "// -----// IR Dump Before {} //----- //"
SPLIT_MARKER = "// -----"
_SPLIT_RE = re.compile(r"^// -----\s*$", re.MULTILINE)
_BUFFER_LOCATION = re.compile(r'"-":(\d+):(\d+)')


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Print a fusilli graph's IR, or an MLIR module, after fusilli and upstream MLIR passes.",
        epilog="No pass runs unless --pass-pipeline is given; --pass-pipeline=default runs the pipeline "
        f"Graph.compile uses ({DEFAULT_PIPELINE}).",
    )
    add_version_argument(parser)
    parser.add_argument(
        "input",
        nargs="?",
        default="-",
        help="a graph JSON file (*.json), an MLIR file, or '-' for stdin (the default; JSON when it starts with '{')",
    )
    parser.add_argument("-o", dest="output", metavar="OUT", help="write the result to OUT instead of stdout")
    parser.add_argument(
        "--pass-pipeline",
        metavar="PIPELINE",
        help="comma-separated passes: fusilli passes (see --list-passes) and upstream MLIR/IREE passes "
        "by name, e.g. 'fusilli-layout,canonicalize'; 'default' is fusilli's default pipeline",
    )
    parser.add_argument(
        "--split-input-file",
        action="store_true",
        help=f"split the (MLIR) input at '{SPLIT_MARKER}' lines and process each chunk as its own module; "
        f"the results are joined with '{SPLIT_MARKER}'",
    )
    parser.add_argument(
        "--verify-each",
        type=_flag,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="verify the IR after each pass (default true; --verify-each=false to skip)",
    )
    dumps = parser.add_argument_group(
        "IR printing (dumps go to stdout, not stderr as in mlir-opt, so FileCheck sees them in order)"
    )
    dumps.add_argument(
        "--print-ir-after-all",
        "--mlir-print-ir-after-all",
        action="store_true",
        help="print '// -----// IR Dump After <pass> //----- //' and the module after each pass",
    )
    dumps.add_argument(
        "--print-ir-before-all",
        "--mlir-print-ir-before-all",
        action="store_true",
        help="print the module before each pass",
    )
    dumps.add_argument(
        "--mlir-print-ir-after",
        action="append",
        default=[],
        metavar="PASS",
        help="print the module after PASS (repeatable, or comma-separated)",
    )
    dumps.add_argument(
        "--mlir-print-ir-before",
        action="append",
        default=[],
        metavar="PASS",
        help="print the module before PASS (repeatable, or comma-separated)",
    )
    dumps.add_argument(
        "--mlir-print-debuginfo",
        action="store_true",
        help='print each op\'s location: the graph node it was emitted for (loc("conv"))',
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
        help="after the pass pipeline, compile fully and print 'dispatch-count: N', 'transient-memory-bytes: N' and 'copy-count: N'",
    )
    parser.add_argument("--backend", choices=("cpu", "amdgpu"), help="compile target (default cpu)")
    parser.add_argument(
        "--arch",
        help="target arch (needs --backend): an LLVM CPU name for cpu (default FUSILLI_CPU_ARCH or 'host'; e.g. "
        "znver4, x86-64-v3, sapphirerapids), a gfx arch or SKU for amdgpu (e.g. gfx942)",
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


@dataclass
class Chunk:
    """One module's text, where it came from and the line it starts on."""

    text: str
    name: str
    first_line: int
    is_json: bool


def read_input(path: str, split: bool) -> list[Chunk]:
    """The input's module texts: one, or one per ``// -----`` chunk with ``split``."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise fail(ErrorCode.FILE_SYSTEM_FAILURE, f"cannot read input {name!r}: {e}") from None
    is_json = path.endswith(".json") if path != "-" else text.lstrip().startswith("{")
    if not split or is_json:
        return [Chunk(text, name, 1, is_json)]
    chunks, line, start = [], 1, 0
    for marker in _SPLIT_RE.finditer(text):
        chunks.append(Chunk(text[start : marker.start()], name, line, False))
        line += text.count("\n", start, marker.end())
        start = marker.end()
    chunks.append(Chunk(text[start:], name, line, False))
    return chunks


def _relocate(text: str, chunk: Chunk, quoted: bool = True) -> str:
    """MLIR names the parsed buffer "-": point at the input and the line in it instead
    (quoted as in a ``loc(...)``, or bare as in a diagnostic, ``file.mlir:3:7``)."""
    name = f'"{chunk.name}"' if quoted else chunk.name
    return _BUFFER_LOCATION.sub(lambda m: f"{name}:{int(m.group(1)) + chunk.first_line - 1}:{m.group(2)}", text)


def load_graph(chunk: Chunk) -> Graph:
    from fusilli.graph import Graph

    graph = Graph.from_json(chunk.text)
    graph.validate()
    return graph


def load_module(chunk: Chunk, graph: Graph | None, target: Target) -> ir.Module:
    """The module to transform: a graph's module emitted for ``target``, or the parsed MLIR."""
    if graph is not None:
        from fusilli.lowering import emit_module

        return emit_module(graph, target)
    try:
        return ir.parse_module(chunk.text)
    except Exception as e:  # the bindings' MLIRError, which fusilli.ir does not re-export
        message = _relocate(str(e), chunk, quoted=False)
        raise fail(ErrorCode.INVALID_ARGUMENT, f"{chunk.name} is not a valid MLIR module: {message}") from None


def verify(module: ir.Module, after: str) -> None:
    try:
        module.operation.verify()
    except Exception as e:  # MLIRError, as in load_module
        raise fail(ErrorCode.INTERNAL_ERROR, f"the module does not verify after {after}: {e}") from None


def _names(values: list[str]) -> set[str]:
    return {name.strip() for value in values for name in value.split(",") if name.strip()}


class Printer:
    """Prints the module as the options ask, with or without locations."""

    def __init__(self, args: argparse.Namespace, out: TextIO):
        self.debuginfo = args.mlir_print_debuginfo
        self.out = out
        self.chunk: Chunk | None = None  # the input being processed: locations point into it

    def text(self, module: ir.Module) -> str:
        if not self.debuginfo:
            return module.operation.get_asm()
        # Locations inline (loc("conv") on the op, not #loc3 aliases), the parser's buffer
        # name "-" replaced by the input's name and line.
        text = module.operation.get_asm(enable_debug_info=True, use_local_scope=True)
        return _relocate(text, self.chunk) if self.chunk is not None else text

    def dump(self, header: str, module: ir.Module) -> None:
        print(header, file=self.out)
        print(self.text(module), file=self.out, flush=True)


def checked_pipeline(args: argparse.Namespace, target: Target) -> Pipeline | None:
    """The pipeline, parsed and checked (every pass exists, every --mlir-print-ir-* name is in it)."""
    if not args.pass_pipeline:
        if args.mlir_print_ir_after or args.mlir_print_ir_before:
            raise fail(ErrorCode.INVALID_ARGUMENT, "--mlir-print-ir-after/--mlir-print-ir-before need --pass-pipeline")
        return None
    text = args.pass_pipeline
    pipeline = Pipeline.parse(DEFAULT_PIPELINE if text.strip() == "default" else text, target)
    if not pipeline.passes:
        raise fail(ErrorCode.INVALID_ARGUMENT, f"--pass-pipeline {text!r} names no pass")
    pipeline.check()
    names = {p.name for p in pipeline.passes}
    for flag, asked in (("after", args.mlir_print_ir_after), ("before", args.mlir_print_ir_before)):
        unknown = sorted(_names(asked) - names)
        if unknown:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"--mlir-print-ir-{flag}: {', '.join(unknown)} not in the pipeline ({', '.join(p.name for p in pipeline.passes)})",
            )
    return pipeline


def run_pipeline(pipeline: Pipeline, module: ir.Module, args: argparse.Namespace, printer: Printer) -> None:
    after = _names(args.mlir_print_ir_after)
    before = _names(args.mlir_print_ir_before)
    for p in pipeline.passes:
        if args.print_ir_before_all or p.name in before:
            printer.dump(DUMP_BEFORE.format(p.name), module)

        def after_each(done: Pass, m: ir.Module) -> None:
            if args.verify_each:
                verify(m, f"pass {done.name!r}")
            if args.print_ir_after_all or done.name in after:
                printer.dump(DUMP_AFTER.format(done.name), m)

        Pipeline([p]).run(module, after_each)


def check_target(args: argparse.Namespace) -> Target:
    """The target the passes lower for (an MLIR input compiles with its flags too)."""
    if args.arch and args.backend is None:
        raise fail(ErrorCode.INVALID_ARGUMENT, "--arch needs --backend (cpu or amdgpu): an arch names a CPU or a GPU")
    return Target.resolve(args.backend or "cpu", args.arch)


def process(
    chunk: Chunk, pipeline: Pipeline | None, pipeline_target: Target, args: argparse.Namespace, printer: Printer
) -> str:
    """The tool's result for one module."""
    graph = load_graph(chunk) if chunk.is_json else None
    if args.explain:
        if graph is None:
            raise fail(ErrorCode.INVALID_ARGUMENT, "--explain needs a graph JSON input (rules are chosen per node)")
        return graph.explain(args.backend or "cpu", args.arch) + "\n"
    # A graph's target also carries the compiler flags its nodes' lowering rules add.
    target = graph.target(args.backend or "cpu", args.arch) if graph is not None else pipeline_target
    module = load_module(chunk, graph, target)
    verify(module, "loading the input")
    if pipeline is not None:
        run_pipeline(pipeline, module, args, printer)
    if not (args.stats or args.compile_to):
        return printer.text(module) + "\n"
    if args.compile_to:
        return compile_module_to_phase(module, target.flags, args.compile_to)
    _, stats = compile_module(module, target.flags)
    return (
        f"dispatch-count: {stats.dispatch_count}\ntransient-memory-bytes: {stats.transient_memory_bytes}\n"
        f"copy-count: {stats.copy_count}\n"
    )


def write(result: str, output: str | None) -> None:
    if output:
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(result)
        except OSError as e:
            raise fail(ErrorCode.FILE_SYSTEM_FAILURE, f"cannot write output {output!r}: {e}") from None
    else:
        sys.stdout.write(result)
        sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.list_passes:
            write(list_passes(), args.output)
            return 0
        target = check_target(args)
        pipeline = checked_pipeline(args, target)  # all of it, before reading the input or running anything
        chunks = read_input(args.input, args.split_input_file)
    except FusilliError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    printer = Printer(args, sys.stdout)
    results, failed = [], False
    for chunk in chunks:
        printer.chunk = chunk
        try:
            results.append(process(chunk, pipeline, target, args, printer))
        except FusilliError as e:  # as mlir-opt: report, go on with the next chunk, fail at the end
            sys.stdout.flush()
            print(f"{PROG}: {e}", file=sys.stderr)
            failed = True
    try:
        write(f"{SPLIT_MARKER}\n".join(results), args.output)
    except FusilliError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 1 if failed else 0
