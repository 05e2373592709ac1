"""fusilli's default IR pass pipeline by name, and the fingerprint of it that joins cache keys.

IR-free on purpose (DESIGN.md floors: below ``passes``): computing a cache key, which
is all a cache hit does, must not load the MLIR bindings. fusilli/passes builds the
runnable pipeline from these names and checks at import that each one is registered.
"""

from __future__ import annotations

import os
from collections.abc import Callable

DEFAULT_PASSES = (
    "fusilli-layout",
    "fusilli-conv-layout",
    "fusilli-epilogue-fusion",
    "fusilli-dead-constants",
)

# How fusilli-conv-layout computes the convs it rewrites: "auto" (what the target's
# lowering rules choose, fusilli/backend/rules.py) or, for measuring, "linalg",
# "im2col", "gemm", "winograd[2|4|6]" (3x3 stride-1 convs), "polyphase[2|4]" (Winograd over
# the input's phases, 3x3 stride-2 convs) or "rowblocks" (weight gradients as GEMMs over X's
# row phases) forced on every conv it applies to. Read once from
# FUSILLI_CONV_LOWERING; it changes the IR, so it is part of every cache key.
CONV_LOWERING = os.environ.get("FUSILLI_CONV_LOWERING", "auto")
CONV_LOWERINGS = (
    "auto",
    "linalg",
    "im2col",
    "gemm",
    "winograd",
    "winograd2",
    "winograd4",
    "winograd6",
    "polyphase",
    "polyphase2",
    "polyphase4",
    "rowblocks",
)

# Settings outside the IR that change what a pass emits, by pass name.
PASS_OPTIONS: dict[str, Callable[[], str]] = {
    "fusilli-conv-layout": lambda: f"lowering={CONV_LOWERING}",
}


def pass_options(name: str) -> str:
    option = PASS_OPTIONS.get(name)
    return option() if option is not None else ""


def default_pipeline_fingerprint() -> str:
    """The default pipeline with each pass's options: what a compiled artifact depends on."""
    return ",".join(f"{name}{{{pass_options(name)}}}" for name in DEFAULT_PASSES)
