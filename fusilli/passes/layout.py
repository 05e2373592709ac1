"""Layout passes: undo what naive (upstream-style) emission leaves between ops.

``fusilli-layout`` composes chained ``torch.aten.permute`` ops, drops identity
permutes, and sinks permutes below elementwise ops whose tensor operands are
all permuted the same way (or are broadcast scalars), so that pairs of inverse
permutes meet and cancel. After it, a graph stored channels-last has one
layout change per graph input and output at most.
"""

from __future__ import annotations

from fusilli import ir
from fusilli.ir.elementwise import ELEMENTWISE_BODIES
from fusilli.ir.rewrite import block_ops, defining_op, erase_dead, func_blocks, permutation_of
from fusilli.passes import Pass, register_pass
from fusilli.tensor import is_identity


def _compose(first: list[int], second: list[int]) -> list[int]:
    """permute(permute(x, first), second) == permute(x, result)."""
    return [first[i] for i in second]


@register_pass
class FoldPermutesPass(Pass):
    name: str = "fusilli-layout"
    description = "fold inverse/identity permutes and sink permutes through elementwise ops"

    def run(self, module: ir.Module) -> None:
        with module.context:
            for block in func_blocks(module):
                changed = True
                while changed:
                    changed = self._fold(block) or self._sink(block)

    # Each rewrite returns right after changing the block: ops of the old
    # snapshot may have been erased, and touching an erased op crashes.
    def _fold(self, block) -> bool:
        for op in block_ops(block):
            perm = permutation_of(op)
            if perm is None:
                continue
            src = op.operands[0]
            inner = defining_op(src)
            inner_perm = permutation_of(inner)
            if inner is not None and inner_perm is not None:
                perm = _compose(inner_perm, perm)
                src = inner.operands[0]
            if is_identity(perm):
                op.results[0].replace_all_uses_with(src)
                erase_dead([op] + ([inner] if inner_perm is not None else []))
                return True
            elif inner_perm is not None:
                with ir.InsertionPoint(op), op.location:
                    new = ir.TorchBuilder().permute(src, perm)
                op.results[0].replace_all_uses_with(new)
                erase_dead([op, inner])
                return True
        return False

    def _sink(self, block) -> bool:
        """op(permute(a, p), permute(b, p)) -> permute(op(a, b), p) for elementwise ops."""
        for op in block_ops(block):
            if op.name not in ELEMENTWISE_BODIES or len(op.results) != 1:
                continue
            result_tt = ir.TensorType.of(op.results[0])
            perm = None
            sources: list[ir.Value | None] = []
            ok = True
            for v in op.operands:
                if not _is_tensor(v):
                    sources.append(None)
                    continue
                tt = ir.TensorType.of(v)
                producer = defining_op(v)
                p = permutation_of(producer)
                if producer is not None and p is not None and tt.rank == result_tt.rank:
                    if perm is not None and p != perm:
                        ok = False
                        break
                    perm = p
                    sources.append(producer.operands[0])
                elif all(d == 1 for d in tt.dims):
                    sources.append(v)  # a broadcast scalar is layout-free
                else:
                    ok = False
                    break
            if not ok or perm is None:
                continue
            src_dims = [0] * len(perm)
            for i, d in enumerate(result_tt.dims):
                src_dims[perm[i]] = d
            with ir.InsertionPoint(op), op.location:
                operands = [s if s is not None else v for s, v in zip(sources, op.operands)]
                new_type = result_tt.with_dims(src_dims).to_type()
                new_op = ir.Operation.create(op.name, results=[new_type], operands=operands)
                permuted = ir.TorchBuilder().permute(new_op.result, perm)
            op.results[0].replace_all_uses_with(permuted)
            erase_dead([op] + [defining_op(v) for v in op.operands if permutation_of(defining_op(v)) is not None])
            return True
        return False


def _is_tensor(v: ir.Value) -> bool:
    return str(v.type).startswith("!torch.vtensor")
