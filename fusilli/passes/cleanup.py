"""``fusilli-dead-constants``: erase constants nothing uses any more.

Emitters build their scalar and list operands as ``torch.constant.*`` and
``torch.prim.ListConstruct`` ops; after the layout and conv rewrites replace
the ops that used them, those constants are left behind. They cost IREE
nothing, but they bury the IR that ``fusilli-opt`` and ``Graph.mlir`` print.
"""

from __future__ import annotations

from fusilli import ir
from fusilli.ir.rewrite import block_ops, erase_dead, func_blocks
from fusilli.passes import Pass, register_pass

# Ops that only make a value: erasing an unused one changes nothing else.
CONSTANT_OPS = ("arith.constant", "torch.prim.ListConstruct", "tensor.empty")
CONSTANT_OP_PREFIXES = ("torch.constant.",)


def is_constant_op(name: str) -> bool:
    return name in CONSTANT_OPS or name.startswith(CONSTANT_OP_PREFIXES)


@register_pass
class DeadConstantsPass(Pass):
    name: str = "fusilli-dead-constants"
    description = "erase unused constants and constant lists (left behind by the rewrites)"

    def run(self, module: ir.Module) -> None:
        with module.context:
            for block in func_blocks(module):
                # Last first: a dead list is erased before the constants it lists are visited.
                erase_dead([op for op in reversed(list(block_ops(block))) if is_constant_op(op.name)])
