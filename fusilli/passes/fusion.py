"""Epilogue fusion: a chain of torch elementwise ops becomes one ``linalg.generic``.

Starting from each elementwise op (one with a scalar body in
``ir.elementwise.ELEMENTWISE_BODIES``), the pass gathers the producers whose
results are used only inside the region, so an anchor (conv, matmul, norm,
attention ...) followed by its single-use pointwise chain ends up as the anchor
plus one elementwise region. The region also absorbs

* leaf ``torch.aten.permute`` / ``torch.aten.expand`` ops (as indexing maps),
* a trailing ``torch.aten.permute`` of the result (as the output map),

so layout changes and broadcasts cost no extra pass over memory. The body
mirrors each torch op's semantics exactly, including its casts, so the region
computes in whatever precision the emitters chose (``compute_data_type``) and
rounds once where they cast to the output type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeGuard

from fusilli import ir
from fusilli.ir.elementwise import ELEMENTWISE_BODIES
from fusilli.ir.rewrite import block_ops, defining_op, erase_dead, func_blocks, op_alive, op_key, permutation_of, users
from fusilli.ir.torch import DYNAMIC, builtin_element_type
from fusilli.passes import Pass, register_pass


def _is_vtensor(v: ir.Value) -> bool:
    return str(v.type).startswith("!torch.vtensor")


def _is_elementwise(op: ir.Operation | None) -> TypeGuard[ir.Operation]:
    return op is not None and op.name in ELEMENTWISE_BODIES and len(op.results) == 1 and _is_vtensor(op.results[0])


@dataclass
class _Leaf:
    value: ir.Value  # the torch value fed to the region
    perm: list[int] | None = None  # leaf = permute(value, perm)
    expanded_from_rank: int | None = None  # leaf = expand(value)


@dataclass
class _Region:
    root: ir.Operation
    ops: list[ir.Operation] = field(default_factory=list)  # in block order
    out_perm: list[int] | None = None
    out_permute_op: ir.Operation | None = None


@register_pass
class EpilogueFusionPass(Pass):
    name: str = "fusilli-epilogue-fusion"
    description = "fuse single-use chains of elementwise torch ops into one linalg.generic"

    def run(self, module: ir.Module) -> None:
        with module.context:
            for block in func_blocks(module):
                erased: set[int] = set()
                for op in reversed(list(block_ops(block))):
                    if not op_alive(op) or op_key(op) in erased or not _is_elementwise(op):
                        continue
                    region = self._grow(op)
                    if region is not None:
                        erased |= self._rewrite(region)

    def _grow(self, root: ir.Operation) -> _Region | None:
        # Don't start a region at an op whose result feeds another elementwise op
        # alone: that consumer's region will take it in.
        consumers = users(root.results[0])
        if len(consumers) == 1 and _is_elementwise(consumers[0]):
            return None
        members = {root: root}
        work = [root]
        while work:
            op = work.pop()
            for v in op.operands:
                p = defining_op(v)
                if not _is_elementwise(p) or p in members:
                    continue
                if all(u in members for u in users(p.results[0])):
                    members[p] = p
                    work.append(p)
        region = _Region(root)
        block_order = {o: i for i, o in enumerate(block_ops(root.block))}
        region.ops = sorted(members.values(), key=lambda o: block_order[o])
        if len(consumers) == 1 and permutation_of(consumers[0]) is not None:
            region.out_permute_op = consumers[0]
            region.out_perm = permutation_of(consumers[0])
        return region

    def _rewrite(self, region: _Region) -> set[int]:
        root = region.root
        members = set(region.ops)
        result_tt = ir.TensorType.of(root.results[0])
        rank = result_tt.rank
        # Collect the region's leaves (tensor operands produced outside it).
        leaves: list[_Leaf] = []
        leaf_index: dict[int, int] = {}  # id of the torch value used by region ops -> leaf number
        absorbed: list[ir.Operation] = []
        for op in region.ops:
            for v in op.operands:
                if not _is_vtensor(v) or defining_op(v) in members:
                    continue
                key = _value_key(v)
                if key in leaf_index:
                    continue
                producer = defining_op(v)
                leaf = _Leaf(v)
                if (
                    producer is not None
                    and producer.name == "torch.aten.permute"
                    and permutation_of(producer) is not None
                ):
                    leaf = _Leaf(producer.operands[0], perm=permutation_of(producer))
                    absorbed.append(producer)
                elif producer is not None and producer.name == "torch.aten.expand":
                    leaf = _Leaf(producer.operands[0], expanded_from_rank=ir.TensorType.of(producer.results[0]).rank)
                    absorbed.append(producer)
                leaf_index[key] = len(leaves)
                leaves.append(leaf)

        anchor_op = region.out_permute_op or root
        out_dims = list(result_tt.dims)
        if region.out_perm is not None:
            out_dims = [result_tt.dims[p] for p in region.out_perm]
        final_tt = result_tt.with_dims(out_dims)
        b = ir.TorchBuilder()
        with ir.InsertionPoint(anchor_op), root.location:
            ins = [b.to_builtin(leaf.value) for leaf in leaves]
            maps = [_leaf_map(leaf, rank, result_tt.dims) for leaf in leaves]
            out_map = ir.AffineMap.get_identity(rank)
            if region.out_perm:
                # Iterate in the stored result's order (its innermost dim innermost), so the
                # region vectorizes along contiguous memory and fuses into a producer that
                # iterates the same way (a channels-last conv's output transform).
                maps = [_iterate_as_stored(m, region.out_perm) for m in maps]
            dynamic = iter(_dynamic_sizes(out_dims, region.out_perm, leaves, ins, result_tt.dims))
            sizes = [next(dynamic) if d == DYNAMIC else d for d in out_dims]
            empty = ir.tensor.EmptyOp(sizes, builtin_element_type(final_tt.element))
            generic = ir.linalg.GenericOp(
                [empty.result.type],
                ins,
                [empty.result],
                ir.indexing_maps(*maps, out_map),
                ir.iterator_types(*["parallel"] * rank),
            )
            block = generic.regions[0].blocks.append(
                *[ir.RankedTensorType(i.type).element_type for i in ins], builtin_element_type(final_tt.element)
            )
            with ir.InsertionPoint(block):
                env: dict[int, tuple[ir.Value, str]] = {}
                for key, idx in leaf_index.items():
                    env[key] = (block.arguments[idx], ir.TensorType.of(leaves[idx].value).element)
                for op in region.ops:
                    args = [env[_value_key(v)] for v in op.operands if _is_vtensor(v)]
                    out_elem = ir.TensorType.of(op.results[0]).element
                    env[_value_key(op.results[0])] = (ELEMENTWISE_BODIES[op.name](op, args, out_elem), out_elem)
                ir.linalg.YieldOp([env[_value_key(root.results[0])][0]])
            fused = b.op("torch_c.from_builtin_tensor", [generic.result], final_tt.to_type())
        anchor_op.results[0].replace_all_uses_with(fused)
        return erase_dead([anchor_op] + list(reversed(region.ops)) + absorbed)


def _value_key(v: ir.Value) -> int:
    return hash(v)


def _leaf_map(leaf: _Leaf, rank: int, result_dims: tuple[int, ...]) -> ir.AffineMap:
    """Indexing map of a leaf in the region's iteration space (right-aligned broadcast)."""
    tt = ir.TensorType.of(leaf.value)
    if leaf.perm is not None:
        # leaf = permute(value, perm): leaf dim i is value dim perm[i].
        permuted_dims = [tt.dims[p] for p in leaf.perm]
        leaf_exprs = _broadcast_exprs(permuted_dims, rank, result_dims)
        exprs = [None] * len(leaf.perm)
        for i, p in enumerate(leaf.perm):
            exprs[p] = leaf_exprs[i]
        return ir.AffineMap.get(rank, 0, exprs)
    return ir.AffineMap.get(rank, 0, _broadcast_exprs(list(tt.dims), rank, result_dims))


def _iterate_as_stored(m: ir.AffineMap, perm: list[int]) -> ir.AffineMap:
    """``m`` over iteration dims renumbered so that logical dim ``perm[j]`` becomes dim ``j``."""
    position = {p: j for j, p in enumerate(perm)}
    exprs = [ir.AffineDimExpr.get(position[e.position]) if isinstance(e, ir.AffineDimExpr) else e for e in m.results]
    return ir.AffineMap.get(m.n_dims, 0, exprs)


def _broadcast_exprs(dims: list[int], rank: int, result_dims: tuple[int, ...]) -> list:
    offset = rank - len(dims)
    exprs = []
    for i, d in enumerate(dims):
        if d == 1 and result_dims[offset + i] != 1:
            exprs.append(ir.AffineConstantExpr.get(0))
        else:
            exprs.append(ir.AffineDimExpr.get(offset + i))
    return exprs


def _dynamic_sizes(out_dims, out_perm, leaves, ins, result_dims) -> list[ir.Value]:
    """SSA sizes of the output's dynamic dims, read from a leaf that spans them."""
    sizes = []
    for i, d in enumerate(out_dims):
        if d != DYNAMIC:
            continue
        iter_dim = out_perm[i] if out_perm else i
        for leaf, value in zip(leaves, ins):
            tt = ir.TensorType.of(leaf.value)
            dims = [tt.dims[p] for p in leaf.perm] if leaf.perm else list(tt.dims)
            pos = iter_dim - (len(result_dims) - len(dims))
            if 0 <= pos < len(dims) and dims[pos] == DYNAMIC:
                src_pos = leaf.perm[pos] if leaf.perm else pos
                index = ir.arith.ConstantOp(ir.IndexType.get(), src_pos).result
                sizes.append(ir.tensor.DimOp(value, index).result)
                break
        else:
            raise ValueError(f"no operand spans dynamic dim {iter_dim} of a fused region")
    return sizes
