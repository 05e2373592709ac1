"""Running a graph as two half-batch calls at once, one per core (the ``split`` CPU executor).

On a 2-core machine IREE's worker pool loses much of what splitting a dispatch across
both cores gains: each call wakes a halted core (~70 us on these VMs), every dispatch
boundary hands work over again, and the pool's workers run a dispatch 8-18% slower than
the calling thread (BENCHMARKS.md, "What the worker pool costs"). PyTorch's OpenMP threads
instead spin between ops and the calling thread does its share. The ``split`` executor
does the same with IREE: the graph is compiled once at half its batch; each call runs one
half inline in the calling thread (``local-sync``) while the other runs on a pool of one
worker that spins for a while after its work (so back-to-back calls find it awake),
started through the module's ``main$async`` and waited for on its fence. Where a half's
working set outgrows the cache (a Winograd conv's transformed tiles), each side runs its half
as ``rounds`` calls one after another (``BatchSplitPlan.rounds``; runtime.SPLIT_ROUNDS says when).

This module decides whether a graph can run that way (``plan_batch_split``), IR-free:
every node says which of its tensors carry the batch along dim 0
(``Node.batch_split_slots``); the graph splits when all nodes can, each tensor is either
split or read whole by every node that touches it, every graph output is split, and
every split tensor has the same even dim 0, outermost in memory, whose halves start
64-byte aligned (IREE's CPU kernels need that; no staging copy). fusilli/backend/runtime.py
runs the plan; ``choose_cpu_executor`` there says when.

A batch-1 graph has no batch to split; ``plan_row_split`` cuts its rows instead (H, dim 2 of
rank-4 NCHW-ordered dims) where every node's output rows each read one input row
(``Node.row_split_slots``: 1x1 unpadded convs, of any stride whose halves line up, and
pointwise ops) and the cut tensors are channels-last, so that each half of the caller's
array is again one dense block. Each cut tensor is halved along its own H: a stride-2 1x1
conv's input has twice the rows of its output.

A graph output that sums over the cut axis (a weight gradient sums over the images and output
positions, a bias gradient is a sum over them: ``Node.summed_split_slots``) is not cut: each half
computes a partial sum of the whole tensor, the calling thread's into the caller's array and the
worker's into a scratch array of fusilli's, and the runtime adds the second into the first once
both halves are done (``BatchSplitPlan.summed``). Such outputs must be f32, so that each partial
sum keeps the precision a sum over the whole would.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from fusilli.tensor import TensorAttr, data_type_of
from fusilli.types import DataType

if TYPE_CHECKING:
    from fusilli.graph import Graph

# The byte alignment each half's first element needs (IREE's CPU kernels).
HALF_ALIGNMENT = 64


@dataclasses.dataclass(frozen=True)
class BatchSplitPlan:
    """How a graph runs as two half-batch calls: the tensors cut along dim 0 (by name) and
    the batch extent they share. Every other tensor is read whole by both halves. A row
    split cuts each tensor along its own H (``half_of``); ``batch`` is then the outputs' H."""

    batch: int  # the extent cut in half: dim 0, or the outputs' H for a row split
    split: frozenset[str]
    # Bytes of the bound tensors cut in half, and of those both halves read whole (work on
    # them, a filter's transform or packing, say, is done by both halves).
    split_bytes: int = 0
    whole_bytes: int = 0
    # The logical dim cut: 0 (the batch), or 2 (H of a batch-1 graph's rank-4 tensors).
    axis: int = 0
    # Calls each side makes one after another (a batch split only): each half runs as this many
    # calls of ``part`` images, so that a call's transformed data stays in cache (runtime's
    # SPLIT_ROUNDS_*). The compiled graph is ``part`` images.
    rounds: int = 1
    # Graph outputs that sum over the cut dim (by name): each half computes a partial sum of the
    # whole tensor, added after both ran; and the bytes they hold.
    summed: frozenset[str] = frozenset()
    summed_bytes: int = 0

    @property
    def half(self) -> int:
        return self.batch // 2

    @property
    def part(self) -> int:
        """The extent one call takes: half the batch over the rounds."""
        return self.batch // (2 * self.rounds)

    def half_of(self, t: TensorAttr) -> int:
        """The extent of a cut tensor's part along the cut dim, one call's (its own: a row
        split's tensors may differ in H)."""
        return t.dim[self.axis] // (2 * self.rounds)

    def half_graph(self, graph: Graph) -> Graph:
        """A validated copy of ``graph`` at one call's part of the batch (half of it over the
        rounds): the split tensors' dim ``axis`` cut so (a row split's half lowered as the whole
        graph, ``rules.lowered_as_parts``).

        Bound tensors keep their strides, but for a row split the batch-1 dim's, which spans
        the whole tensor (the cut dim is outermost after it in memory, so the other strides do
        not depend on it and each half of the caller's array is exactly such a tensor);
        intermediate tensors have theirs inferred again.
        """
        doc = graph.to_dict()
        for t in (*doc["inputs"], *(t for node in doc["nodes"] for t in node["output_tensors"])):
            if t["name"] in self.split:
                half = t["dim"][self.axis] // (2 * self.rounds)
                t["dim"] = [half if i == self.axis else d for i, d in enumerate(t["dim"])]
                if t["is_virtual"]:
                    t["stride"] = None
                elif self.axis:
                    t["stride"] = [half * t["stride"][self.axis], *t["stride"][1:]]
        half = type(graph)._from_dict(doc)
        if self.axis:  # a row split's half is lowered as its whole (rules.lowered_as_parts)
            half._lowered_as_parts = 2 * graph._lowered_as_parts
        half.validate()
        return half

    def parts_line_up(self, graph: Graph) -> bool:
        """Whether every cut tensor of ``graph`` divides into ``2 * rounds`` parts, each starting
        ``HALF_ALIGNMENT``-byte aligned (the plan checked halves)."""
        for t in graph.all_tensors():
            if t.name not in self.split or t.is_virtual:
                continue
            if t.dim[self.axis] % (2 * self.rounds):
                return False
            if self.half_of(t) * t.stride[self.axis] * max(data_type_of(t).bits // 8, 1) % HALF_ALIGNMENT:
                return False
        return True

    def describe(self) -> str:
        summed = (
            f"; the halves' partial sums of {', '.join(repr(name) for name in sorted(self.summed))} added"
            if self.summed
            else ""
        )
        if self.axis:
            return (
                f"two calls of {self.half} of its {self.batch} rows at once ({len(self.split)} tensors split "
                f"along H{summed})"
            )
        rounds = f", {self.rounds} after another on each side" if self.rounds > 1 else ""
        return f"two calls of batch {self.part} at once{rounds} ({len(self.split)} tensors split along dim 0{summed})"

    def physical_axis(self, t: TensorAttr) -> int:
        """Where the cut dim sits in ``t``'s physical (memory-order) view."""
        return t.physical_order.index(self.axis)


def plan_batch_split(graph: Graph) -> tuple[BatchSplitPlan | None, str]:
    """The plan for running a validated ``graph`` as two half-batch calls, or None with the
    reason it cannot (naming the node or tensor); the second item describes the plan."""
    return _plan(graph, 0, lambda node: node.batch_split_slots(), "dim 0")


def plan_row_split(graph: Graph) -> tuple[BatchSplitPlan | None, str]:
    """The plan for running a validated batch-1 ``graph`` as two calls over half its rows (H,
    dim 2 of its rank-4 tensors), or None with the reason it cannot. Only nodes whose output
    rows each read one input row split so (``Node.row_split_slots``: 1x1 unpadded convs whose
    halves line up, 1x1 stride-1 data gradients, pointwise ops), and the cut tensors must have
    dim 0 of 1 with H next outermost in memory (NHWC), so each half of the caller's array is one
    dense block."""
    return _plan(graph, 2, lambda node: node.row_split_slots(), "H")


# How a split treats a tensor: cut in half along the axis, read whole by both halves, or (a graph
# output that sums over the axis) computed by each half as a partial sum.
_CUT, _WHOLE, _SUMMED = "cut", "whole", "summed"


def _plan(graph: Graph, axis: int, slots_of, what: str) -> tuple[BatchSplitPlan | None, str]:
    state: dict[str, str] = {}  # tensor name -> _CUT, _WHOLE or _SUMMED
    tensors: dict[str, TensorAttr] = {}
    for node in graph.nodes:
        slots = slots_of(node)
        if slots is None:
            return None, f"{node.kind} '{node.name}' mixes rows of {what}"
        summed = node.summed_split_slots(axis)
        for slot, t in (*node.inputs.items(), *node.outputs.items()):
            if t is None:
                continue
            how = _CUT if slot in slots and not t.is_scalar else _SUMMED if slot in summed else _WHOLE
            before = state.setdefault(t.name, how)
            if before != how:
                if _SUMMED in (before, how):
                    return None, f"tensor '{t.name}' sums over {what} and another node reads it"
                return None, f"tensor '{t.name}' is cut along {what} by one node and read whole by another"
            tensors[t.name] = t
    for t in graph.output_tensors():
        if state.get(t.name) not in (_CUT, _SUMMED):
            return None, f"output '{t.name}' does not carry the {'batch' if axis == 0 else 'rows'}"
    for name, how in state.items():
        if how == _SUMMED and tensors[name].dynamic_dims:
            return None, f"tensor '{name}' has dynamic dims"
        if how == _SUMMED and data_type_of(tensors[name]) != DataType.FLOAT:
            return None, (
                f"output '{name}' sums over {what} in {data_type_of(tensors[name]).name}: the halves' partial "
                "sums would be rounded before they are added"
            )
    split = {name: how == _CUT for name, how in state.items() if how != _SUMMED}
    extents = {tensors[name].dim[axis] for name, cut in split.items() if cut}
    if not extents:
        return None, f"no tensor is cut along {what}"
    # The batch is one extent; rows may differ from tensor to tensor (a strided 1x1 conv's
    # input has more than its output), each node having checked that its halves line up.
    if axis == 0 and len(extents) != 1:
        return None, f"the split tensors' {what} differ ({sorted(extents)})"
    for extent in sorted(extents):
        if extent < 2 or extent % 2:
            return None, f"{what} is {extent}, not an even number >= 2"
    for name, cut in split.items():
        t = tensors[name]
        if t.dynamic_dims:
            return None, f"tensor '{name}' has dynamic dims"
        if data_type_of(t) == DataType.INT4:
            return None, f"tensor '{name}' is int4 (packed two to a byte)"
        if cut and axis and t.dim[0] != 1:
            return None, f"tensor '{name}' has batch {t.dim[0]}, not 1"
        if not cut or t.is_virtual:
            continue
        if not _outermost(t, axis):
            return None, f"{what} of tensor '{name}' is not outermost in memory (stride {t.stride})"
        offset = t.dim[axis] // 2 * t.stride[axis] * max(data_type_of(t).bits // 8, 1)
        if offset % HALF_ALIGNMENT:
            return (
                None,
                f"the second half of tensor '{name}' starts {offset} bytes in, not {HALF_ALIGNMENT}-byte aligned",
            )
    bound = [(tensors[name], cut) for name, cut in split.items() if not tensors[name].is_virtual]
    summed = frozenset(name for name, how in state.items() if how == _SUMMED)
    # The extent cut: the outputs' (a row split's inputs may have more rows); where every output
    # is summed, the most rows cut (a stride-2 weight gradient's X).
    cut_outputs = [t for t in graph.output_tensors() if t.name not in summed]
    plan = BatchSplitPlan(
        cut_outputs[0].dim[axis] if cut_outputs else max(extents),
        frozenset(name for name, cut in split.items() if cut),
        split_bytes=sum(tensor_bytes(t) for t, cut in bound if cut),
        whole_bytes=sum(tensor_bytes(t) for t, cut in bound if not cut and not t.is_scalar),
        axis=axis,
        summed=summed,
        summed_bytes=sum(tensor_bytes(tensors[name]) for name in summed),
    )
    return plan, plan.describe()


def tensor_bytes(t: TensorAttr) -> int:
    """The bytes a bound tensor of ``t``'s dims holds (int4 counted a byte per element, as bound)."""
    return t.num_elements * max(data_type_of(t).bits // 8, 1)


def _outermost(t: TensorAttr, axis: int) -> bool:
    """Dim ``axis`` is the slowest in memory (for axis > 0: after dims of extent 1, which come
    first), so each half of it is one dense block."""
    order = t.physical_order
    if t.stride[axis] <= 0 or any(t.dim[i] != 1 for i in order[: order.index(axis)]):
        return False
    return t.stride[axis] == math.prod(t.dim[i] for i in order[order.index(axis) + 1 :])
