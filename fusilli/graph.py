"""Graph: the user-facing builder, validation, compile, execute and (de)serialization."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fusilli.backend.rules import lowered_as_parts
from fusilli.backend.runtime import raise_pending_signals
from fusilli.backend.targets import Backend, Target
from fusilli.errors import ErrorCode, FusilliError, fail
from fusilli.graph_json import INT64_MAX, JSON_FORMAT_VERSION, load_graph_document
from fusilli.log import logger, timed
from fusilli.ops import NODE_TYPES, Node
from fusilli.ops.conv import ConvAttrs, ConvDGradNode, ConvFPropNode, ConvWGradNode
from fusilli.ops.custom import CustomOpAttrs, CustomOpNode, input_slot, output_slot
from fusilli.ops.matmul import MatmulAttrs, MatmulNode
from fusilli.ops.norm import BatchNormNode, LayerNormNode, NormAttrs, NormNodeBase, NormPhase, RmsNormNode
from fusilli.ops.pointwise import INPUT_SLOTS, PointwiseAttrs, PointwiseMode, PointwiseNode
from fusilli.ops.reduction import ReductionAttrs, ReductionMode, ReductionNode
from fusilli.ops.sdpa import SdpaAttrs, SdpaNode
from fusilli.tensor import (
    TensorAttr,
    as_numpy,
    checked_ints,
    contiguous_strides,
    data_type_of,
    is_valid_layout,
    scalar_value_of,
)
from fusilli.types import DataType

if TYPE_CHECKING:
    from fusilli.backend.runtime import CompiledGraph, CpuExecution

MLIR_STAGES = ("emitted", "optimized", "input", "global-optimization", "dispatch-creation", "flow")

NodeT = TypeVar("NodeT", bound=Node)
EnumT = TypeVar("EnumT", bound=enum.Enum)


class _PointwiseMethod(Protocol):
    """The type of the per-mode ``Graph`` methods (``g.add(a, b)``, ``g.relu(x)``, ...)."""

    def __call__(
        self,
        a: TensorAttr,
        b: TensorAttr | None = None,
        c: TensorAttr | None = None,
        *,
        name: str | None = None,
        **params: float,
    ) -> TensorAttr: ...


class Graph:
    """A compute graph of fusilli ops over strided tensors.

    Build it with ``tensor()`` and the op methods, then ``validate()``,
    ``compile(handle)`` and ``execute(variant_pack)``.
    """

    # One method per PointwiseMode (its ``method_name``), attached after the class by
    # ``_make_pointwise_method``; declared here so that type checkers know them.
    abs: _PointwiseMethod
    add: _PointwiseMethod
    add_square: _PointwiseMethod
    binary_select: _PointwiseMethod
    ceil: _PointwiseMethod
    cmp_eq: _PointwiseMethod
    cmp_neq: _PointwiseMethod
    cmp_lt: _PointwiseMethod
    cmp_le: _PointwiseMethod
    cmp_gt: _PointwiseMethod
    cmp_ge: _PointwiseMethod
    div: _PointwiseMethod
    elu: _PointwiseMethod
    erf: _PointwiseMethod
    exp: _PointwiseMethod
    floor: _PointwiseMethod
    gelu: _PointwiseMethod
    gelu_approx_tanh: _PointwiseMethod
    gelu_bwd: _PointwiseMethod
    gelu_approx_tanh_bwd: _PointwiseMethod
    identity: _PointwiseMethod
    log: _PointwiseMethod
    logical_and: _PointwiseMethod
    logical_or: _PointwiseMethod
    logical_not: _PointwiseMethod
    max: _PointwiseMethod
    min: _PointwiseMethod
    mul: _PointwiseMethod
    neg: _PointwiseMethod
    reciprocal: _PointwiseMethod
    relu: _PointwiseMethod
    relu_bwd: _PointwiseMethod
    rsqrt: _PointwiseMethod
    sigmoid: _PointwiseMethod
    sin: _PointwiseMethod
    softplus: _PointwiseMethod
    sqrt: _PointwiseMethod
    sub: _PointwiseMethod
    swish: _PointwiseMethod
    swish_bwd: _PointwiseMethod
    tan: _PointwiseMethod
    tanh: _PointwiseMethod
    tanh_bwd: _PointwiseMethod

    def __init__(
        self,
        name: str = "graph",
        io_data_type: Any = DataType.FLOAT,
        intermediate_data_type: Any = DataType.FLOAT,
        compute_data_type: Any = DataType.FLOAT,
    ):
        self.name = name
        self.io_data_type = DataType.coerce(io_data_type)
        self.intermediate_data_type = DataType.coerce(intermediate_data_type)
        self.compute_data_type = DataType.coerce(compute_data_type)
        self.nodes: list[Node] = []
        self._inputs: list[TensorAttr] = []
        self._inferred: list[tuple[TensorAttr, str, Any]] = []  # (tensor, field, inferred value)
        self._validated = False
        self._compiled: CompiledGraph | None = None  # once compiled or loaded
        # A row-split half (fusilli/batch_split.py) is one of this many parts of the graph it was
        # cut from, and is lowered as that whole (rules.lowered_as_parts); 1 for a user's graph.
        self._lowered_as_parts = 1

    # ------------------------------------------------------------------ tensors
    def tensor(
        self,
        name: str | None = None,
        dim: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
        data_type: Any = None,
        *,
        dynamic_dims: Iterable[int] = (),
    ) -> TensorAttr:
        """Registers a graph input. ``stride`` defaults to contiguous, ``data_type`` to the
        graph's ``io_data_type``."""
        if isinstance(name, TensorAttr):  # cuDNN-style: g.tensor(TensorAttr(...))
            t = name
        else:
            if stride is None and dim is not None:
                dim = checked_ints(dim, f"tensor '{name}' dim")
                stride = contiguous_strides(dim)
            t = TensorAttr(name, dim, stride, data_type, dynamic_dims=dynamic_dims)
        if t.data_type is None:
            # The graph's io_data_type now, so the input can be allocated (fs.empty) before
            # validate(); recorded as inferred, so validate() re-infers it unless the user
            # has set a data type since (or changed io_data_type).
            t.set_data_type(self.io_data_type)
            self._inferred.append((t, "data_type", t.data_type))
        self._inputs.append(t)
        self._invalidate()
        return t

    def tensor_like(self, array: Any, name: str | None = None) -> TensorAttr:
        """A graph input whose dim, stride and data type are those of ``array``."""
        arr = as_numpy(array)
        itemsize = arr.dtype.itemsize
        stride = [s // itemsize for s in arr.strides]
        return self.tensor(name, list(arr.shape), stride, DataType.from_numpy(arr.dtype))

    def scalar(self, value: float | int | bool, data_type: Any = None, name: str | None = None) -> TensorAttr:
        """A compile-time constant operand (dim = stride = [1]), inlined in the IR."""
        data_type = DataType.FLOAT if data_type is None and isinstance(value, float) else data_type
        data_type = DataType.INT64 if data_type is None else DataType.coerce(data_type)
        data_type.scalar_array(value, f"scalar '{name}'" if name else "scalar")  # representable?
        t = TensorAttr(name, [1], [1], data_type, scalar_value=value)
        self._inputs.append(t)
        self._invalidate()
        return t

    def input_tensors(self) -> list[TensorAttr]:
        return list(self._inputs)

    def output_tensors(self) -> list[TensorAttr]:
        return [t for n in self.nodes for t in n.output_tensors() if not t.is_virtual]

    def all_tensors(self) -> list[TensorAttr]:
        return self._inputs + [t for n in self.nodes for t in n.output_tensors()]

    # ------------------------------------------------------------------ op building
    def _add_node(
        self,
        node_type: type[Node],
        inputs: Mapping[str, TensorAttr | None],
        attrs: Any,
        name: str | None,
        output_slots: Sequence[str] | None = None,
    ) -> list[TensorAttr]:
        name = name or f"{node_type.kind}_{len(self.nodes)}"
        for slot, t in inputs.items():
            if t is None:
                continue
            if not isinstance(t, TensorAttr):
                raise fail(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{node_type.kind} '{name}': input {slot} must be a TensorAttr, got {type(t).__name__}",
                )
            if not t.name:
                t.set_name(f"{name}_{slot}")
        slots = node_type.output_slots if output_slots is None else output_slots
        outputs = {slot: TensorAttr(f"{name}_{slot}", is_virtual=True) for slot in slots}
        node = node_type(name, dict(inputs), outputs, attrs)
        for t in outputs.values():
            t.producer = node
        self.nodes.append(node)
        self._invalidate()
        return list(outputs.values())

    def _add_conv(
        self,
        node_type: type[Node],
        inputs: dict[str, TensorAttr],
        padding: Sequence[int] | None,
        stride: Sequence[int] | None,
        dilation: Sequence[int] | None,
        name: str | None,
    ) -> TensorAttr:
        """The conv family's shared builder: attributes checked at validate(), one result."""
        attrs = ConvAttrs(_int_list(padding), _int_list(stride), _int_list(dilation))
        (result,) = self._add_node(node_type, inputs, attrs, name)
        return result

    def conv_fprop(
        self,
        x: TensorAttr,
        w: TensorAttr,
        *,
        padding: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        name: str | None = None,
    ) -> TensorAttr:
        """Forward convolution ``y = conv(x, w)``; groups = ``x.C / w.C``."""
        return self._add_conv(ConvFPropNode, {"X": x, "W": w}, padding, stride, dilation, name)

    def conv_dgrad(
        self,
        dy: TensorAttr,
        w: TensorAttr,
        *,
        padding: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        name: str | None = None,
    ) -> TensorAttr:
        """Data gradient ``dx`` of a convolution; set ``dx.set_dim(...)`` before validate."""
        return self._add_conv(ConvDGradNode, {"DY": dy, "W": w}, padding, stride, dilation, name)

    def conv_wgrad(
        self,
        dy: TensorAttr,
        x: TensorAttr,
        *,
        padding: Sequence[int] | None = None,
        stride: Sequence[int] | None = None,
        dilation: Sequence[int] | None = None,
        name: str | None = None,
    ) -> TensorAttr:
        """Weight gradient ``dw`` of a convolution; set ``dw.set_dim(...)`` before validate."""
        return self._add_conv(ConvWGradNode, {"DY": dy, "X": x}, padding, stride, dilation, name)

    def batchnorm(
        self,
        x: TensorAttr,
        scale: TensorAttr | None = None,
        bias: TensorAttr | None = None,
        mean: TensorAttr | None = None,
        var: TensorAttr | None = None,
        *,
        epsilon: float | TensorAttr | None = None,
        momentum: float | TensorAttr | None = None,
        phase: NormPhase | None = None,
        name: str | None = None,
    ) -> tuple[TensorAttr, TensorAttr | None, TensorAttr | None]:
        """Batch normalization over all dims but the channel dim 1: ``(y, saved_mean, saved_inv_var)``."""
        inputs = {
            "X": x,
            "SCALE": scale,
            "BIAS": bias,
            "MEAN": mean,
            "VAR": var,
            "EPSILON": self._norm_scalar(epsilon),
            "MOMENTUM": self._norm_scalar(momentum),
        }
        return self._add_norm_node(BatchNormNode, inputs, phase, name)

    def layernorm(
        self,
        x: TensorAttr,
        scale: TensorAttr | None = None,
        bias: TensorAttr | None = None,
        *,
        epsilon: float | TensorAttr | None = None,
        phase: NormPhase | None = None,
        name: str | None = None,
    ) -> tuple[TensorAttr, TensorAttr | None, TensorAttr | None]:
        """Layer normalization over all dims but the batch dim 0: ``(y, mean, inv_var)``."""
        inputs = {"X": x, "SCALE": scale, "BIAS": bias, "EPSILON": self._norm_scalar(epsilon)}
        return self._add_norm_node(LayerNormNode, inputs, phase, name)

    def rmsnorm(
        self,
        x: TensorAttr,
        scale: TensorAttr | None = None,
        *,
        epsilon: float | TensorAttr | None = None,
        phase: NormPhase | None = None,
        name: str | None = None,
    ) -> tuple[TensorAttr, TensorAttr | None]:
        """RMS normalization over all dims but the batch dim 0: ``(y, inv_rms)``."""
        inputs = {"X": x, "SCALE": scale, "EPSILON": self._norm_scalar(epsilon)}
        return self._add_norm_node(RmsNormNode, inputs, phase, name)

    def _norm_scalar(self, value: float | TensorAttr | None) -> TensorAttr | None:
        """A float epsilon/momentum becomes a scalar constant of the graph."""
        if value is None or isinstance(value, TensorAttr):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"norm epsilon/momentum must be a float or a scalar tensor, got {type(value).__name__}",
            )
        return self.scalar(float(value), DataType.FLOAT)

    def _last_node(self, node_type: type[NodeT]) -> NodeT:
        """The node just added by ``_add_node``, as the ``node_type`` it was built as."""
        node = self.nodes[-1]
        if not isinstance(node, node_type):
            raise fail(ErrorCode.INTERNAL_ERROR, f"last node '{node.name}' is not a {node_type.__name__}")
        return node

    def _add_norm_node(
        self,
        node_type: type[NormNodeBase],
        inputs: Mapping[str, TensorAttr | None],
        phase: NormPhase | str | None,
        name: str | None,
    ) -> tuple:
        attrs = NormAttrs(phase=_coerce_enum(NormPhase, phase, "norm phase"))
        self._add_node(node_type, inputs, attrs, name)
        node = self._last_node(node_type)
        node.prune_outputs()
        return tuple(node.outputs[slot] for slot in node_type.output_slots)

    def matmul(self, a: TensorAttr, b: TensorAttr, *, name: str | None = None) -> TensorAttr:
        """``c = a @ b`` with broadcast batch dims; transposes are given by strides."""
        (c,) = self._add_node(MatmulNode, {"A": a, "B": b}, MatmulAttrs(), name)
        return c

    def sdpa(
        self,
        q: TensorAttr,
        k: TensorAttr,
        v: TensorAttr,
        *,
        mask: TensorAttr | None = None,
        is_causal: bool = False,
        scale: float | None = None,
        dropout: float = 0.0,
        enable_gqa: bool = False,
        name: str | None = None,
    ) -> TensorAttr:
        """Scaled dot-product attention with ``torch.nn.functional.scaled_dot_product_attention`` semantics."""
        attrs = SdpaAttrs(bool(is_causal), None if scale is None else float(scale), float(dropout), bool(enable_gqa))
        (o,) = self._add_node(SdpaNode, {"Q": q, "K": k, "V": v, "MASK": mask}, attrs, name)
        return o

    def custom_op(
        self,
        inputs: Sequence[TensorAttr],
        *,
        mlir: str | None = None,
        num_outputs: int = 1,
        name: str | None = None,
        reference: Any = None,
    ) -> list[TensorAttr]:
        """Calls a user torch-dialect function template (see fusilli/ops/custom.py).

        The caller sets each output's dim (and stride/data type if not the
        defaults). ``reference`` is an optional NumPy callable
        ``fn(*input_arrays) -> array | sequence of arrays`` used by ``fusilli.reference``.
        """
        if isinstance(inputs, TensorAttr):
            inputs = [inputs]
        slots = {input_slot(i): t for i, t in enumerate(inputs or [])}
        attrs = CustomOpAttrs(mlir, int(num_outputs))
        outs = self._add_node(
            CustomOpNode, slots, attrs, name, output_slots=[output_slot(i) for i in range(max(int(num_outputs), 0))]
        )
        self._last_node(CustomOpNode).reference = reference
        return outs

    def pointwise(
        self,
        a: TensorAttr,
        b: TensorAttr | None = None,
        c: TensorAttr | None = None,
        *,
        mode: PointwiseMode | str,
        name: str | None = None,
        **params: float,
    ) -> TensorAttr:
        """An elementwise op of 1-3 inputs; ``mode`` is a ``PointwiseMode``."""
        return self._pointwise((a, b, c), _coerce_enum(PointwiseMode, mode, "pointwise mode"), name, params)

    def _pointwise(
        self,
        operands: tuple[TensorAttr, TensorAttr | None, TensorAttr | None],
        mode: PointwiseMode | None,
        name: str | None,
        params: Mapping[str, float],
    ) -> TensorAttr:
        attrs = PointwiseAttrs(mode=mode)
        for key, value in params.items():
            field = _POINTWISE_PARAMS.get((mode, key)) if mode is not None else None
            if field is None:
                mode_name = mode.name if mode is not None else None
                raise fail(ErrorCode.INVALID_ARGUMENT, f"pointwise mode {mode_name} takes no parameter {key!r}")
            setattr(attrs, field, float(value))
        inputs = dict(zip(INPUT_SLOTS, operands))
        (out,) = self._add_node(PointwiseNode, inputs, attrs, name)
        return out

    def reduction(
        self,
        x: TensorAttr,
        *,
        mode: ReductionMode | str,
        axes: Sequence[int] | None = None,
        name: str | None = None,
    ) -> TensorAttr:
        """Reduces ``x`` over ``axes`` (or the dims where the result's set dim is 1), keeping them as 1."""
        attrs = ReductionAttrs(mode=_coerce_enum(ReductionMode, mode, "reduction mode"), axes=_int_list(axes))
        (y,) = self._add_node(ReductionNode, {"X": x}, attrs, name)
        return y

    # ------------------------------------------------------------------ validation
    def _invalidate(self) -> None:
        self._validated = False
        self._compiled = None

    def validate(self) -> Graph:
        """Infers dims, strides and data types of op results and checks the graph."""
        self._validated = False  # a failed re-validation must not leave the graph marked valid
        if not self.name:
            raise fail(ErrorCode.ATTRIBUTE_NOT_SET, "graph name not set")
        # Re-infer on each validate what the last one filled in, unless the user has
        # set it since (setters store new objects, hence the identity check).
        for t, field, value in self._inferred:
            if getattr(t, f"_{field}") is value:
                setattr(t, f"_{field}", None)
        self._inferred = []
        self._check_unique_names()
        for t in self._inputs:
            if t.data_type is None:
                t.set_data_type(self.io_data_type)
                self._inferred.append((t, "data_type", t.data_type))
            self._check_tensor(t, "graph input")
            if t.is_scalar:
                data_type_of(t).scalar_array(scalar_value_of(t), f"scalar '{t.name}'")
        available = {id(t) for t in self._inputs}  # tensors a node may read: inputs, earlier outputs
        for index, node in enumerate(self.nodes):
            self._check_node_inputs(index, node, available)
            if node.compute_data_type is None:
                node.compute_data_type = self.compute_data_type
            node.pre_validate()
            unset = [(t, f) for t in node.output_tensors() for f in ("dim", "stride") if getattr(t, f"_{f}") is None]
            for t in node.output_tensors():
                if t.data_type is None:
                    t.set_data_type(self.intermediate_data_type if t.is_virtual else self.io_data_type)
                    self._inferred.append((t, "data_type", t.data_type))
            node.infer()
            self._inferred += [(t, f, getattr(t, f"_{f}")) for t, f in unset]
            node.post_validate()
            if node.checked_by_lowering:
                # Imported here, not at module level: only graphs with such nodes load the MLIR bindings.
                from fusilli.lowering import check_node

                check_node(node)
            for slot, out in node.outputs.items():
                if out is None:
                    continue
                self._check_tensor(out, f"{node.kind} '{node.name}' output {slot}")
                if out.broadcast_dims:
                    raise fail(
                        ErrorCode.INVALID_ATTRIBUTE,
                        f"{node.kind} '{node.name}': output {slot} '{out.name}' has broadcast strides (stride=0), "
                        "which are not supported on operation outputs",
                    )
            available.update(id(t) for t in node.output_tensors())
        if not self.output_tensors():
            raise fail(ErrorCode.ATTRIBUTE_NOT_SET, f"graph '{self.name}' has no output (call set_output(True))")
        self._validated = True
        return self

    def _check_unique_names(self) -> None:
        seen: dict[str, str] = {}
        for what, name in [("tensor", t.name) for t in self.all_tensors()] + [("node", n.name) for n in self.nodes]:
            if not name:
                raise fail(ErrorCode.ATTRIBUTE_NOT_SET, f"a {what} of graph '{self.name}' has no name")
            if name in seen:
                raise fail(ErrorCode.INVALID_ATTRIBUTE, f"symbol name '{name}' already in use (by a {seen[name]})")
            seen[name] = what

    def _check_node_inputs(self, index: int, node: Node, available: set[int]) -> None:
        """Each input of ``node`` is a graph input or an output of an earlier node of this graph."""
        for slot, t in node.inputs.items():
            if t is None or id(t) in available:
                continue
            if t in node.output_tensors():
                problem = "is this node's own output (a node cannot consume what it produces)"
            elif any(t in later.output_tensors() for later in self.nodes[index + 1 :]):
                producer = next(n for n in self.nodes[index + 1 :] if t in n.output_tensors())
                problem = (
                    f"is produced by node '{producer.name}', which comes later in graph '{self.name}' "
                    "(a cycle, or nodes out of order)"
                )
            else:
                problem = (
                    f"is not a tensor of graph '{self.name}' (it belongs to another graph, or was never "
                    "registered with Graph.tensor)"
                )
            raise node.error(ErrorCode.INVALID_ATTRIBUTE, f"input {slot} '{t.name}' {problem}")

    def _check_tensor(self, t: TensorAttr, role: str) -> None:
        if not t.has_dim:
            raise fail(ErrorCode.ATTRIBUTE_NOT_SET, f"{role} tensor '{t.name}' dims not set")
        if not t.has_stride:
            raise fail(ErrorCode.ATTRIBUTE_NOT_SET, f"{role} tensor '{t.name}' strides not set")
        if t.data_type is None:
            raise fail(ErrorCode.ATTRIBUTE_NOT_SET, f"{role} tensor '{t.name}' data type not set")
        if len(t.dim) != len(t.stride):
            raise fail(
                ErrorCode.INVALID_ATTRIBUTE,
                f"{role} tensor '{t.name}' uses dim {t.dim} and stride {t.stride} of different dimensionality",
            )
        if any(d <= 0 for d in t.dim):
            raise fail(ErrorCode.INVALID_ATTRIBUTE, f"{role} tensor '{t.name}' has non-positive dims {t.dim}")
        span_bytes = (1 + sum((d - 1) * abs(s) for d, s in zip(t.dim, t.stride))) * t.data_type.numpy_dtype.itemsize
        if max(t.dim + [abs(s) for s in t.stride]) > INT64_MAX or span_bytes > INT64_MAX:
            raise fail(
                ErrorCode.INVALID_ATTRIBUTE,
                f"{role} tensor '{t.name}' (dim {t.dim}, stride {t.stride}) spans {span_bytes} bytes, more than "
                "a 64-bit index addresses (2^63 - 1)",
            )
        if not is_valid_layout(t.dim, t.stride):
            raise fail(
                ErrorCode.INVALID_ATTRIBUTE,
                f"{role} tensor '{t.name}' (dim {t.dim}, stride {t.stride}) has invalid physical "
                "representation; it must be a valid permutation of the logical dimensions",
            )
        for d in t.dynamic_dims:
            if not 0 <= d < t.rank:
                raise fail(ErrorCode.INVALID_ATTRIBUTE, f"{role} tensor '{t.name}' dynamic dim {d} out of range")
            if t.stride[d] == 0:
                raise fail(ErrorCode.INVALID_ATTRIBUTE, f"{role} tensor '{t.name}' dynamic dim {d} is broadcast")
            if t.dim[d] == 1:
                raise fail(
                    ErrorCode.INVALID_ATTRIBUTE,
                    f"{role} tensor '{t.name}' dynamic dim {d} needs a representative extent other than 1",
                )

    def _require_validated(self, what: str) -> None:
        if not self._validated:
            raise fail(ErrorCode.NOT_VALIDATED, f"graph '{self.name}' must be validated before {what}")

    # ------------------------------------------------------------------ IR
    def emit_mlir(self, backend: Any = None, arch: str | None = None) -> str:
        """The torch-dialect module the graph emits for ``backend``/``arch`` (default the CPU of
        ``FUSILLI_CPU_ARCH`` or the host), before fusilli's passes."""
        from fusilli.lowering import emit_module

        return str(emit_module(self, self.target(backend, arch)))

    def mlir(self, stage: str = "emitted", backend: Any = None, arch: str | None = None) -> str:
        """IR at ``stage``: emitted, optimized (after fusilli's passes for the target), or an
        IREE phase (input ... flow) compiled for ``backend``/``arch``."""
        from fusilli.backend import compile_module_to_phase

        if stage not in MLIR_STAGES:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"unknown IR stage {stage!r}; expected one of {MLIR_STAGES}")
        target = self.target(backend, arch)
        if stage == "emitted":
            from fusilli.lowering import emit_module

            return str(emit_module(self, target))
        module = self._optimized_module(target)
        if stage == "optimized":
            return str(module)
        return compile_module_to_phase(module, target.flags, stage)

    def explain(self, backend: Any = None, arch: str | None = None) -> str:
        """One line per node: the lowering rule chosen for each aspect on the target
        (``backend``/``arch``, default the host CPU) and the fact that chose it; on CPU a
        last line, ``execution:``, says how ``compile`` in this process runs the graph
        (inline, on the worker pool, or split in two half-batch calls) and why."""
        from fusilli.backend.rules import explain

        target = self.target(backend, arch)
        text = explain(self.nodes, target)
        if target.backend != Backend.CPU:
            return text
        from fusilli.backend.runtime import cpu_execution, split_lowerings

        execution = cpu_execution(self, arch)
        text += f"\nexecution: {execution.executor} ({execution.why})"
        if execution.half is not None:
            whole, half = split_lowerings(self, execution.half, arch)
            if half != whole:  # forced by FUSILLI_CPU_EXECUTOR=split
                text += f"; the half-batch graph is lowered with {half or 'no rule'}"
            elif execution.half._lowered_as_parts > 1:
                from fusilli.backend.rules import lowering_summary

                own = lowering_summary(execution.half.nodes, target)  # the half by its own size
                if own != whole:
                    text += f"; each half lowered as the whole graph (by its own size: {own or 'no rule'})"
        return text

    def target(self, backend: Any = None, arch: str | None = None) -> Target:
        """The compile target ``backend``/``arch`` name (default the CPU of ``FUSILLI_CPU_ARCH``
        or the host), with the flags this graph's lowering rules add on it."""
        if not self._validated:
            self.validate()
        with lowered_as_parts(self._lowered_as_parts):
            return Target.resolve(backend or Backend.CPU, arch, nodes=self.nodes)

    def _optimized_module(self, target: Target):
        from fusilli.lowering import emit_module
        from fusilli.passes import default_pipeline

        if not self._validated:
            self.validate()
        with timed(f"graph '{self.name}': emit + fusilli passes"), lowered_as_parts(self._lowered_as_parts):
            module = emit_module(self, target)
            logger.info("graph '%s' emitted MLIR:\n%s", self.name, module)
            default_pipeline(target).run(module)
        return module

    # ------------------------------------------------------------------ compile / run
    def key(self, backend: Any = None, arch: str | None = None) -> str:
        """The content key of this graph's compiled artifact for ``backend`` (default CPU)."""
        if self._compiled is not None and backend is None:
            return self._compiled.key
        return self._cache_key(self.target(backend, arch))

    def workloads(self) -> tuple:
        """The arithmetic of the graph's compute-bound nodes (they select CPU compile flags)."""
        if not self._validated:
            self.validate()
        return tuple(w for w in (n.workload() for n in self.nodes) if w is not None)

    def _cache_key(self, target: Target) -> str:
        from fusilli.backend.cache import compute_key
        from fusilli.pipeline import default_pipeline_fingerprint

        if not self._validated:
            self.validate()
        return compute_key(self.canonical_json(), target, default_pipeline_fingerprint())

    def _build_artifact(self, backend: Any, arch: str | None, use_cached: bool = True):
        """The compiled artifact: from the disk cache, or compiled in process and stored.

        A cache hit needs only the key (canonical JSON, flags, versions): no IR is
        emitted and the compiler module is not imported. On a miss the entry's
        lock is taken and the cache looked at again, so processes compiling the
        same graph at once compile it once.
        """
        from fusilli.backend.cache import entry_lock, lookup

        target = self.target(backend, arch)
        key = self._cache_key(target)
        artifact = lookup(key) if use_cached else None
        if artifact is None:
            with entry_lock(key):
                artifact = lookup(key) if use_cached else None  # another process may have just stored it
                if artifact is None:
                    return self._compile_and_store(target, key)
        logger.info("graph '%s': cache hit %s", self.name, key[:16])
        return artifact

    def _compile_and_store(self, target: Target, key: str):
        from fusilli.backend.cache import Artifact, entry_metadata, store
        from fusilli.backend.compiler import compile_module

        logger.info("graph '%s': cache miss %s; compiling for %s", self.name, key[:16], target.device_id)
        module = self._optimized_module(target)
        vmfb, stats = compile_module(module, target.flags)
        logger.info(
            "graph '%s': %d dispatch(es), %d transient bytes",
            self.name,
            stats.dispatch_count,
            stats.transient_memory_bytes,
        )
        artifact = Artifact(
            key,
            target.backend,
            target.arch,
            vmfb,
            stats,
            target=target.record(),
            metadata=entry_metadata(self.name, target),
        )
        store(artifact)
        return artifact

    def compile(self, handle: Any) -> Graph:
        """Compiles in process (or loads from the disk cache) for ``handle``'s backend."""
        from fusilli.backend.cache import discard
        from fusilli.backend.runtime import CompiledGraph

        _require_handle(handle, "compile")
        with timed(f"graph '{self.name}': compile"):
            execution = self._cpu_execution(handle)
            # A split graph compiles its half-batch copy: that is all it runs.
            builder = execution.half if execution is not None and execution.half is not None else self
            artifact = builder._build_artifact(handle.backend, handle.arch)
            try:
                self._compiled = CompiledGraph(handle, artifact, self, execution)
            except FusilliError as e:
                if not artifact.from_cache or e.code != ErrorCode.RUNTIME_FAILURE:
                    raise
                # The entry passed its checksum but the runtime refuses it: heal the cache.
                discard(artifact.graph_key, str(e))
                artifact = builder._build_artifact(handle.backend, handle.arch, use_cached=False)
                self._compiled = CompiledGraph(handle, artifact, self, execution)
        raise_pending_signals()  # a Ctrl-C during the compile (fusilli/backend/runtime.py)
        return self

    def _cpu_execution(self, handle: Any) -> CpuExecution | None:
        """How ``compile`` for ``handle`` runs this graph on CPU (inline, the pool, or split in
        two half-batch calls, fusilli/batch_split.py); None for other backends."""
        from fusilli.backend.runtime import cpu_execution

        if handle.backend != Backend.CPU:
            return None
        if not self._validated:
            self.validate()
        return cpu_execution(self, handle.arch)

    def compile_to_artifact(self, backend: Any, arch: str | None = None) -> bytes:
        """Ahead-of-time compile: the serialized artifact (no device needed)."""
        return self._build_artifact(backend, arch).to_bytes()

    def load_artifact(self, handle: Any, data: bytes) -> Graph:
        """Loads an artifact made by ``compile_to_artifact`` for this same graph."""
        from fusilli.backend.cache import Artifact
        from fusilli.backend.runtime import CompiledGraph

        _require_handle(handle, "load_artifact")
        self._require_validated("loading a compiled artifact")
        artifact = Artifact.from_bytes(data)
        built_for = Target.from_record(artifact.target)
        built_for.check_runs_here(f"the artifact for graph '{self.name}'")
        expected = self._cache_key(Target.resolve(artifact.backend, artifact.arch, nodes=self.nodes, cpu=built_for.cpu))
        if artifact.graph_key != expected:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"artifact was compiled for another graph or toolchain (key {artifact.graph_key[:12]}...) than "
                f"graph '{self.name}' (key {expected[:12]}...)",
            )
        self._compiled = CompiledGraph(handle, artifact, self)
        return self

    def _require_compiled(self):
        if self._compiled is None:
            raise fail(ErrorCode.NOT_COMPILED, f"graph '{self.name}': execute requires a successful compile() first")
        return self._compiled

    @property
    def compile_stats(self):
        return self._require_compiled().artifact.stats

    @property
    def executor(self) -> str:
        """Where the compiled graph runs: ``"local-sync"`` (inline), ``"local-task"`` (IREE's
        worker pool), ``"split"`` (two half-batch calls at once) on CPU, ``"hip"`` on AMD GPUs
        (``g.explain()``'s ``execution:`` line says why)."""
        return self._require_compiled().executor

    @property
    def workspace_size(self) -> int:
        """Bytes of scratch memory the compiled graph needs per execute (may be 0)."""
        return self._require_compiled().workspace_size

    def execute(self, variant_pack: Mapping[Any, Any], workspace: Any = None) -> None:
        """Runs the compiled graph; outputs are written into the caller's arrays."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._require_compiled()  # raises NOT_COMPILED
        compiled.execute(variant_pack, workspace)
        raise_pending_signals()  # a Ctrl-C during the call (fusilli/backend/runtime.py)

    # ------------------------------------------------------------------ serialization
    def to_dict(self) -> dict[str, Any]:
        def tensor_json(t: TensorAttr) -> dict[str, Any]:
            d: dict[str, Any] = {
                "name": t.name,
                "dim": t.dim if t.has_dim else None,
                "stride": t.stride if t.has_stride else None,
                "data_type": t.data_type.name if t.data_type else None,
                "is_virtual": t.is_virtual,
            }
            if t.is_scalar:
                d["scalar_value"] = t.scalar_value
            if t.dynamic_dims:
                d["dynamic_dims"] = t.dynamic_dims
            return d

        return {
            "format": JSON_FORMAT_VERSION,
            "name": self.name,
            "io_data_type": self.io_data_type.name,
            "intermediate_data_type": self.intermediate_data_type.name,
            "compute_data_type": self.compute_data_type.name,
            "inputs": [tensor_json(t) for t in self._inputs],
            "nodes": [
                dict(n.to_json(), output_tensors=[tensor_json(t) for t in n.output_tensors()]) for n in self.nodes
            ],
        } | ({"lowered_as_parts": self._lowered_as_parts} if self._lowered_as_parts != 1 else {})

    def to_json(self, indent: int | None = 2) -> str:
        """A lossless JSON serialization (``Graph.from_json`` reads it back)."""
        return json.dumps(self.to_dict(), indent=indent)

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes | Mapping[str, Any]) -> Graph:
        """The graph ``to_json`` wrote (or the dict ``to_dict`` returned).

        The document is checked field by field first (fusilli/graph_json.py): a
        malformed one is an ``INVALID_ARGUMENT`` listing each bad field's path.
        """
        return cls._from_dict(load_graph_document(text))

    @classmethod
    def _from_dict(cls, data: dict[str, Any]) -> Graph:
        g = cls(data["name"], data["io_data_type"], data["intermediate_data_type"], data["compute_data_type"])
        g._lowered_as_parts = int(data.get("lowered_as_parts", 1))
        by_name: dict[str, TensorAttr] = {}

        def make(d: dict[str, Any]) -> TensorAttr:
            t = TensorAttr(
                d["name"],
                d.get("dim"),
                d.get("stride"),
                d.get("data_type"),
                is_virtual=d.get("is_virtual", False),
                scalar_value=d.get("scalar_value"),
                dynamic_dims=d.get("dynamic_dims", ()),
            )
            by_name[t.name] = t
            return t

        g._inputs = [make(d) for d in data["inputs"]]
        # Every tensor exists before any node is built, so a node that reads a later
        # node's output (or its own) is built as written and validate() names it.
        node_outputs = [{d["name"]: make(d) for d in nd["output_tensors"]} for nd in data["nodes"]]
        for nd, outs in zip(data["nodes"], node_outputs):
            node_type = NODE_TYPES[nd["kind"]]
            inputs = {k: (by_name[v] if v is not None else None) for k, v in nd["inputs"].items()}
            outputs = {k: (outs[v] if v is not None else None) for k, v in nd["outputs"].items()}
            cdt = nd.get("compute_data_type")
            node = node_type(
                nd["name"], inputs, outputs, node_type.attrs_type.from_json(nd["attrs"]), DataType[cdt] if cdt else None
            )
            for t in node.output_tensors():
                t.producer = node
            g.nodes.append(node)
        return g

    def __repr__(self) -> str:
        return f"Graph(name={self.name!r}, nodes={[n.name for n in self.nodes]})"


# (mode, keyword) -> PointwiseAttrs field
_POINTWISE_PARAMS = {
    (PointwiseMode.ELU_FWD, "alpha"): "elu_alpha",
    (PointwiseMode.SOFTPLUS_FWD, "beta"): "softplus_beta",
    (PointwiseMode.SOFTPLUS_FWD, "threshold"): "softplus_threshold",
    (PointwiseMode.SWISH_FWD, "beta"): "swish_beta",
    (PointwiseMode.SWISH_BWD, "beta"): "swish_beta",
}


def _make_pointwise_method(mode: PointwiseMode) -> Callable[..., TensorAttr]:
    def method(
        self: Graph,
        a: TensorAttr,
        b: TensorAttr | None = None,
        c: TensorAttr | None = None,
        *,
        name: str | None = None,
        **params: float,
    ) -> TensorAttr:
        return self._pointwise((a, b, c), mode, name, params)

    method.__name__ = mode.method_name
    method.__qualname__ = f"Graph.{mode.method_name}"
    method.__doc__ = f"Pointwise {mode.name}: same as ``pointwise(..., mode=PointwiseMode.{mode.name})``."
    return method


for _mode in PointwiseMode:
    setattr(Graph, _mode.method_name, _make_pointwise_method(_mode))


def _require_handle(handle: Any, method: str) -> None:
    from fusilli.backend.runtime import Handle

    if not isinstance(handle, Handle):
        raise fail(
            ErrorCode.INVALID_ARGUMENT,
            f"Graph.{method} takes a Handle (e.g. fusilli.Handle(fusilli.Backend.CPU)), not "
            f"{type(handle).__name__} {handle!r}"[:200],
        )


def _coerce_enum(enum_type: type[EnumT], value: EnumT | str | None, what: str) -> EnumT | None:
    """An enum member given as the member itself or its (case-insensitive) name.

    None passes through: validate() then reports the attribute as not set.
    """
    if value is None or isinstance(value, enum_type):
        return value
    if isinstance(value, str) and value.upper() in enum_type.__members__:
        return enum_type[value.upper()]
    raise fail(ErrorCode.INVALID_ARGUMENT, f"unknown {what} {value!r}; expected a {enum_type.__name__}")


def _int_list(values: Sequence[int] | None) -> list[int] | None:
    return None if values is None else [int(v) for v in values]
