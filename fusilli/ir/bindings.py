"""Imports of ``iree.compiler`` MLIR bindings, gathered so no other module needs them."""

from iree.compiler import ir as _ir
from iree.compiler.dialects import arith, func, linalg, math, tensor
from iree.compiler.dialects.builtin import ModuleOp
from iree.compiler.passmanager import PassManager

AffineMap = _ir.AffineMap
AffineMapAttr = _ir.AffineMapAttr
ArrayAttr = _ir.ArrayAttr
BoolAttr = _ir.BoolAttr
Context = _ir.Context
DenseElementsAttr = _ir.DenseElementsAttr
FloatAttr = _ir.FloatAttr
FunctionType = _ir.FunctionType
IndexType = _ir.IndexType
InsertionPoint = _ir.InsertionPoint
IntegerAttr = _ir.IntegerAttr
IntegerType = _ir.IntegerType
Location = _ir.Location
Module = _ir.Module
Operation = _ir.Operation
OpView = _ir.OpView
WalkResult = _ir.WalkResult
RankedTensorType = _ir.RankedTensorType
StringAttr = _ir.StringAttr
Type = _ir.Type
TypeAttr = _ir.TypeAttr
Value = _ir.Value
F16Type = _ir.F16Type
F32Type = _ir.F32Type
UnitAttr = _ir.UnitAttr
Attribute = _ir.Attribute
Block = _ir.Block
OpResult = _ir.OpResult
BlockArgument = _ir.BlockArgument
AffineConstantExpr = _ir.AffineConstantExpr
AffineDimExpr = _ir.AffineDimExpr

__all__ = [
    "AffineMap",
    "AffineMapAttr",
    "ArrayAttr",
    "BoolAttr",
    "Context",
    "DenseElementsAttr",
    "FloatAttr",
    "FunctionType",
    "IndexType",
    "InsertionPoint",
    "IntegerAttr",
    "IntegerType",
    "Location",
    "Module",
    "ModuleOp",
    "Operation",
    "OpView",
    "WalkResult",
    "PassManager",
    "RankedTensorType",
    "StringAttr",
    "Type",
    "TypeAttr",
    "UnitAttr",
    "Attribute",
    "Block",
    "AffineConstantExpr",
    "AffineDimExpr",
    "Value",
    "arith",
    "func",
    "linalg",
    "math",
    "tensor",
]
