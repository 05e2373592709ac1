"""fusilli's IR pass framework: ``Pass``, a registry by name, and ``Pipeline``.

A pipeline string is a comma-separated list of elements; an element that names
a registered fusilli pass runs that Python pass, anything else is handed to
MLIR's ``PassManager`` as an upstream pass (``canonicalize``, ``cse``,
``func.func(linalg-fuse-elementwise-ops)``, ...), so both mix freely.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeVar

from fusilli import ir
from fusilli.errors import ErrorCode, fail
from fusilli.log import logger
from fusilli.pipeline import DEFAULT_PASSES, default_pipeline_fingerprint, pass_options

if TYPE_CHECKING:
    from fusilli.backend.targets import Target

PASSES: dict[str, type[Pass]] = {}


PassT = TypeVar("PassT", bound="Pass")


def register_pass(cls: type[PassT]) -> type[PassT]:
    PASSES[cls.name] = cls
    return cls


class Pass:
    """A transformation of a module in place. Subclasses set ``name`` and ``description``."""

    # Class-level for registered fusilli passes; per instance for upstream passes.
    name: str
    description: ClassVar[str]
    # What the module is lowered for; passes whose rewrites depend on the hardware
    # ask its lowering rules (None: the host CPU).
    target: Target | None = None

    def lowering_target(self) -> Target:
        if self.target is None:
            from fusilli.backend.targets import Target

            self.target = Target.resolve("cpu")
        return self.target

    def run(self, module: ir.Module) -> None:
        raise NotImplementedError

    @classmethod
    def options(cls) -> str:
        """Settings outside the IR that change what the pass emits (part of cache keys)."""
        return pass_options(cls.name)


def split_pipeline(text: str) -> list[str]:
    """Splits at top-level commas (not inside parentheses or braces)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return [p for p in parts if p]


class _UpstreamPass(Pass):
    description = "an MLIR/IREE/torch-mlir pass run through PassManager"

    def __init__(self, spec: str):
        self.name = spec
        self.spec = spec

    def parsed(self):
        """The ``PassManager`` for this pass in the current context (an error naming it if it does not parse)."""
        try:
            return ir.PassManager.parse(f"builtin.module({self.spec})")
        except ValueError as e:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"unknown pass or bad pipeline {self.spec!r}: {e}") from None

    def check(self) -> None:
        with ir.fusilli_context():
            self.parsed()

    def run(self, module: ir.Module) -> None:
        with module.context:
            pm = self.parsed()
            try:
                pm.run(module.operation)
            except Exception as e:
                raise fail(ErrorCode.COMPILE_FAILURE, f"pass {self.spec!r} failed: {e}") from None


class Pipeline:
    def __init__(self, passes: list[Pass]):
        self.passes = passes

    @staticmethod
    def parse(text: str, target: Target | None = None) -> Pipeline:
        text = text.strip()
        if text.startswith("builtin.module(") and text.endswith(")"):
            text = text[len("builtin.module(") : -1]
        passes: list[Pass] = []
        for element in split_pipeline(text):
            cls = PASSES.get(element)
            passes.append(cls() if cls is not None else _UpstreamPass(element))
        for p in passes:
            p.target = target
        return Pipeline(passes)

    def check(self) -> None:
        """Raises for the first element that does not name a fusilli pass or parse as an upstream one,
        before any pass has run."""
        for p in self.passes:
            if isinstance(p, _UpstreamPass):
                p.check()

    def run(self, module: ir.Module, after_each: Callable[[Pass, ir.Module], None] | None = None) -> None:
        for p in self.passes:
            logger.debug("running pass %s", p.name)
            p.run(module)
            if after_each is not None:
                after_each(p, module)


from fusilli.passes import cleanup, conv_layout, fusion, layout  # noqa: E402,F401  (registration)

DEFAULT_PIPELINE = ",".join(DEFAULT_PASSES)
_unregistered = [name for name in DEFAULT_PASSES if name not in PASSES]
if _unregistered:
    raise RuntimeError(f"fusilli.pipeline.DEFAULT_PASSES names unregistered passes: {_unregistered}")


def default_pipeline(target: Target | None = None) -> Pipeline:
    """fusilli's passes, lowering for ``target`` (None: the host CPU)."""
    return Pipeline.parse(DEFAULT_PIPELINE, target)


__all__ = [
    "DEFAULT_PIPELINE",
    "default_pipeline_fingerprint",
    "PASSES",
    "Pass",
    "Pipeline",
    "default_pipeline",
    "register_pass",
]
