"""The ``"fusilli"`` torch.compile backend: supported subgraphs to fusilli, the rest eager.

Dynamo hands the backend an FX graph of torch-level calls. The backend walks
it and rewrites each supported pattern into one ``torch.ops.fusilli.*`` call
(one fusilli graph when it runs):

* ``conv2d`` (+ bias) followed by its only user being an activation -> fusilli.conv2d
* ``linear`` (+ bias) followed likewise by an activation -> fusilli.linear
* ``layer_norm`` -> fusilli.layer_norm
* ``scaled_dot_product_attention`` without dropout -> fusilli.scaled_dot_product_attention
  (kept eager for grouped-query attention that needs gradients: no backward for it yet)
* a connected group of two or more elementwise ops (add/sub/mul/div with tensors or
  Python numbers, maximum/minimum, relu, gelu, silu, sigmoid, tanh, exp, log, sqrt,
  rsqrt, neg, abs) whose intermediates are used only inside it -> fusilli.pointwise,
  one graph with one output (its backward replays the chain with PyTorch's ops).
  A lone elementwise op stays eager: one fused op gains nothing over PyTorch's kernel
  and would cost a compile. Any other op between two elementwise ops splits the chain.

Everything else stays as it was and runs eagerly. A pattern whose arguments
fusilli cannot take (non-constant attributes, other devices or dtypes, string
padding) is left to eager too. Every decision is logged on the ``fusilli``
logger (one line per subgraph taken or left, then a summary), and the same lines
are kept in ``last_report`` for inspection. The rewritten graph keeps autograd:
the fusilli ops carry their own backward.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx

import fusilli as fs
from fusilli.log import logger
from fusilli.torch.ops import int_pair

last_report: list[str] = []  # what the last compiled graph's rewrite did, one line per decision

_SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


# The torch signatures of the anchors and activations, so that a call's positional and
# keyword arguments bind to names (with torch's defaults) the way torch binds them.
def _conv2d_args(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return locals()


def _linear_args(input, weight, bias=None):
    return locals()


def _layer_norm_args(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return locals()


def _sdpa_args(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return locals()


def _activation_args(input, inplace=False, approximate="none"):
    return locals()


_ANCHORS: dict[Any, tuple[str, Callable[..., dict[str, Any]]]] = {
    torch.conv2d: ("conv2d", _conv2d_args),
    F.conv2d: ("conv2d", _conv2d_args),
    F.linear: ("linear", _linear_args),
    torch._C._nn.linear: ("linear", _linear_args),
    F.layer_norm: ("layer_norm", _layer_norm_args),
    torch.layer_norm: ("layer_norm", _layer_norm_args),
    F.scaled_dot_product_attention: ("sdpa", _sdpa_args),
}
_ACTIVATION_FUNCTIONS: dict[Any, str] = {
    torch.relu: "relu",
    F.relu: "relu",
    torch.relu_: "relu",
    F.gelu: "gelu",
    torch._C._nn.gelu: "gelu",
    F.silu: "silu",
    torch.sigmoid: "sigmoid",
    F.sigmoid: "sigmoid",
    torch.tanh: "tanh",
    F.tanh: "tanh",
}
_ACTIVATION_METHODS = {"relu": "relu", "relu_": "relu", "sigmoid": "sigmoid", "tanh": "tanh"}


def _bind(fn: Callable[..., dict[str, Any]], node: fx.Node) -> dict[str, Any] | None:
    try:
        return fn(*node.args, **node.kwargs)
    except TypeError:
        return None


def _activation(node: fx.Node) -> str | None:
    if node.op == "call_function" and node.target in _ACTIVATION_FUNCTIONS:
        args = _bind(_activation_args, node)
        if args is None or args["approximate"] != "none":
            return None
        return _ACTIVATION_FUNCTIONS[node.target]
    if node.op == "call_method" and node.target in _ACTIVATION_METHODS and len(node.args) == 1 and not node.kwargs:
        return _ACTIVATION_METHODS[str(node.target)]
    return None


def _meta(value: Any) -> Any:
    return value.meta.get("example_value") if isinstance(value, fx.Node) else None


def _tensor_problem(value: Any, what: str) -> str | None:
    """Why the tensor argument cannot go to fusilli (None when it can)."""
    if value is None:
        return None
    meta = _meta(value)
    if not isinstance(meta, torch.Tensor):
        return f"{what} is not a traced tensor"
    if meta.device.type != "cpu":
        return f"{what} is on {meta.device}"
    if meta.dtype not in _SUPPORTED_DTYPES:
        return f"{what} has dtype {meta.dtype}"
    return None


def _constant(value: Any) -> bool:
    if isinstance(value, fx.Node):
        return False
    if isinstance(value, (list, tuple)):
        return all(_constant(v) for v in value)
    return True


def _fusilli_call(kind: str, args: dict[str, Any], activation: str | None) -> tuple[Any, tuple] | str:
    """The fusilli op and its arguments for an anchor, or why it stays eager."""
    tensors = {
        "conv2d": ("input", "weight", "bias"),
        "linear": ("input", "weight", "bias"),
        "layer_norm": ("input", "weight", "bias"),
        "sdpa": ("query", "key", "value", "attn_mask"),
    }[kind]
    for name in tensors:
        problem = _tensor_problem(args[name], name)
        if problem is not None:
            return problem
    attrs = {k: v for k, v in args.items() if k not in tensors}
    if not _constant(list(attrs.values())):
        return "an attribute is computed at run time"
    ops = torch.ops.fusilli
    if kind == "conv2d":
        if _meta(args["input"]).dim() != 4:
            return "not a 2-D convolution"
        if isinstance(args["padding"], str) and args["padding"] != "valid":
            return f"padding={args['padding']!r}"
        padding = [0, 0] if args["padding"] == "valid" else int_pair(args["padding"], "padding")
        stride, dilation = int_pair(args["stride"], "stride"), int_pair(args["dilation"], "dilation")
        call = (args["input"], args["weight"], args["bias"], stride, padding, dilation, int(args["groups"]), activation)
        return ops.conv2d.default, call
    if kind == "linear":
        return ops.linear.default, (args["input"], args["weight"], args["bias"], activation)
    if kind == "layer_norm":
        shape = args["normalized_shape"]
        shape = [int(shape)] if isinstance(shape, int) else [int(d) for d in shape]
        if _meta(args["input"]).dim() <= len(shape):
            return "nothing outside the normalized dims"
        return ops.layer_norm.default, (args["input"], shape, args["weight"], args["bias"], float(args["eps"]))
    if args["dropout_p"] != 0.0:
        return "dropout"
    query, key = _meta(args["query"]), _meta(args["key"])
    if query.dim() != 4 or key.dim() != 4:
        return "q/k/v are not [B, H, S, D]"
    grad = any(getattr(_meta(args[n]), "requires_grad", False) for n in tensors if args[n] is not None)
    if grad and query.shape[1] != key.shape[1]:
        return "no backward for grouped-query attention"
    scale = None if args["scale"] is None else float(args["scale"])
    sdpa_call = (args["query"], args["key"], args["value"], args["attn_mask"], bool(args["is_causal"]), scale)
    return ops.scaled_dot_product_attention.default, sdpa_call


P = fs.PointwiseMode
# torch-level elementwise callables (functions and Tensor methods) -> (fusilli mode, arity)
_POINTWISE_FUNCTIONS: dict[Any, tuple[fs.PointwiseMode, int]] = {
    **dict.fromkeys((operator.add, torch.add), (P.ADD, 2)),
    **dict.fromkeys((operator.sub, torch.sub), (P.SUB, 2)),
    **dict.fromkeys((operator.mul, torch.mul), (P.MUL, 2)),
    **dict.fromkeys((operator.truediv, torch.div, torch.true_divide), (P.DIV, 2)),
    torch.maximum: (P.MAX_OP, 2),
    torch.minimum: (P.MIN_OP, 2),
    **dict.fromkeys((torch.relu, F.relu), (P.RELU_FWD, 1)),
    **dict.fromkeys((F.gelu, torch._C._nn.gelu), (P.GELU_FWD, 1)),
    F.silu: (P.SWISH_FWD, 1),
    **dict.fromkeys((torch.sigmoid, F.sigmoid), (P.SIGMOID_FWD, 1)),
    **dict.fromkeys((torch.tanh, F.tanh), (P.TANH_FWD, 1)),
    torch.exp: (P.EXP, 1),
    torch.log: (P.LOG, 1),
    torch.sqrt: (P.SQRT, 1),
    torch.rsqrt: (P.RSQRT, 1),
    **dict.fromkeys((operator.neg, torch.neg), (P.NEG, 1)),
    **dict.fromkeys((torch.abs, operator.abs), (P.ABS, 1)),
}
_POINTWISE_METHODS = {
    name: _POINTWISE_FUNCTIONS[getattr(torch, name)]
    for name in "add sub mul div maximum minimum relu sigmoid tanh exp log sqrt rsqrt neg abs".split()
}
_SCALAR_OPERAND_MODES = (P.ADD, P.SUB, P.MUL, P.DIV)
# Keyword arguments that leave an elementwise op as its mode computes it.
_HARMLESS_KWARGS = {"inplace": False, "approximate": "none"}


def _pointwise_step(node: fx.Node) -> tuple[fs.PointwiseMode, list[Any]] | str | None:
    """(mode, operands) for an elementwise node fusilli can take, why not (str), or None
    when the node is no elementwise op at all."""
    if node.op == "call_function" and node.target in _POINTWISE_FUNCTIONS:
        mode, arity = _POINTWISE_FUNCTIONS[node.target]
    elif node.op == "call_method" and node.target in _POINTWISE_METHODS:
        mode, arity = _POINTWISE_METHODS[str(node.target)]
    else:
        return None
    result = _meta(node)
    if not isinstance(result, torch.Tensor):
        return None  # arithmetic on sizes (SymInts) or Python numbers, no tensor op
    operands = list(node.args)
    kwargs = dict(node.kwargs)
    if mode == P.GELU_FWD and kwargs.get("approximate") == "tanh":
        mode = P.GELU_APPROX_TANH_FWD
        del kwargs["approximate"]
    if any(_HARMLESS_KWARGS.get(k, object()) != v for k, v in kwargs.items()) or len(operands) != arity:
        return "unexpected arguments"
    if result.dim() == 0:
        return "a 0-d result"
    for i, operand in enumerate(operands):
        if isinstance(operand, (int, float)) and not isinstance(operand, bool) and mode in _SCALAR_OPERAND_MODES:
            continue
        problem = _tensor_problem(operand, f"operand {i}")
        if problem is not None:
            return problem
        if _meta(operand).dtype != result.dtype:
            return f"operand {i} has dtype {_meta(operand).dtype}, the result {result.dtype}"
    if result.dtype not in _SUPPORTED_DTYPES:
        return f"its result has dtype {result.dtype}"
    return mode, operands


def _pointwise_groups(graph: fx.Graph, report: list[str]) -> list[list[fx.Node]]:
    """Maximal connected groups of fusible elementwise nodes with one output, each in
    graph order: grown from a sink back through operands whose every user is in the group."""
    fusible: dict[fx.Node, tuple[fs.PointwiseMode, list[Any]]] = {}
    for node in graph.nodes:
        step = _pointwise_step(node)
        if isinstance(step, str):
            report.append(f"left pointwise '{node.name}' to eager: {step}")
        elif step is not None:
            fusible[node] = step
    grouped: set[fx.Node] = set()
    groups = []
    for sink in reversed(list(graph.nodes)):
        if sink not in fusible or sink in grouped:
            continue
        group = {sink}
        grown = True
        while grown:
            grown = False
            for member in list(group):
                for operand in member.all_input_nodes:
                    if operand in fusible and operand not in grouped | group and set(operand.users) <= group:
                        group.add(operand)
                        grown = True
        grouped |= group
        groups.append([n for n in graph.nodes if n in group])
    return groups[::-1]


def _pointwise_program(group: list[fx.Node]) -> tuple[list[fx.Node], str]:
    """The group's input nodes and its ``fusilli.pointwise`` program."""
    inputs: list[fx.Node] = []
    index = {node: i for i, node in enumerate(group)}
    program = []
    for node in group:
        step = _pointwise_step(node)
        assert not isinstance(step, str) and step is not None
        mode, operands = step
        encoded: list[tuple[str, float | int]] = []
        for operand in operands:
            if not isinstance(operand, fx.Node):
                encoded.append(("scalar", float(operand)))
            elif operand in index:
                encoded.append(("step", index[operand]))
            else:
                if operand not in inputs:
                    inputs.append(operand)
                encoded.append(("in", inputs.index(operand)))
        program.append((mode.value, encoded))
    return inputs, json.dumps(program)


def _rewrite_pointwise(graph: fx.Graph, report: list[str]) -> None:
    for group in _pointwise_groups(graph, report):
        names = " -> ".join(f"{n.name}" for n in group)
        if len(group) == 1:
            report.append(f"left pointwise '{names}' to eager: a lone elementwise op")
            continue
        inputs, program = _pointwise_program(group)
        sink = group[-1]
        with graph.inserting_after(sink):
            fused = graph.call_function(torch.ops.fusilli.pointwise.default, (inputs, program))
        fused.meta = dict(sink.meta)
        sink.replace_all_uses_with(fused)
        for node in reversed(group):
            graph.erase_node(node)
        report.append(f"took pointwise '{names}' ({len(group)} ops) -> {fused.target}")


def rewrite(gm: fx.GraphModule) -> list[str]:
    """Rewrites ``gm`` in place; returns one line per subgraph taken or left."""
    report: list[str] = []
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _ANCHORS:
            continue
        kind, binder = _ANCHORS[node.target]
        args = _bind(binder, node)
        if args is None:
            report.append(f"left {kind} '{node.name}' to eager: unexpected arguments")
            continue
        users = list(node.users)
        activation_node = users[0] if kind in ("conv2d", "linear") and len(users) == 1 else None
        activation = _activation(activation_node) if activation_node is not None else None
        if activation is None:
            activation_node = None
        call = _fusilli_call(kind, args, activation)
        if isinstance(call, str):
            report.append(f"left {kind} '{node.name}' to eager: {call}")
            continue
        target, call_args = call
        last = activation_node or node
        with graph.inserting_after(last):
            fused = graph.call_function(target, call_args)
        fused.meta = dict(last.meta)
        last.replace_all_uses_with(fused)
        if activation_node is not None:
            graph.erase_node(activation_node)
        graph.erase_node(node)
        taken = f"{kind} '{node.name}'" + (f" + {activation} '{activation_node.name}'" if activation_node else "")
        report.append(f"took {taken} -> {target}")
    _rewrite_pointwise(graph, report)  # after the anchors, which take their activations first
    graph.lint()
    gm.recompile()
    return report


def fusilli_backend(gm: fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """torch.compile backend: ``torch.compile(model, backend="fusilli")``."""
    global last_report
    try:
        report = rewrite(gm)
    except Exception as e:  # the model must keep working: run the graph as traced
        logger.warning("fusilli torch.compile backend: rewrite failed (%s); running the graph eagerly", e)
        last_report = [f"rewrite failed: {e}"]
        return gm.forward
    taken = sum(line.startswith("took") for line in report)
    report.append(f"{taken} subgraph(s) to fusilli, {len(report) - taken} left to eager")
    for line in report:
        logger.info("fusilli torch.compile backend: %s", line)
    last_report = report
    return gm.forward
