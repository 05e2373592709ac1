"""The ``"fusilli"`` torch.compile backend: supported subgraphs to fusilli, the rest eager.

Dynamo hands the backend an FX graph of torch-level calls. The backend walks
it and rewrites each supported pattern into one ``torch.ops.fusilli.*`` call
(one fusilli graph when it runs):

* ``conv2d`` (+ bias) followed by its only user being an activation -> fusilli.conv2d
* ``linear`` (+ bias) followed likewise by an activation -> fusilli.linear
* ``layer_norm`` -> fusilli.layer_norm
* ``scaled_dot_product_attention`` without dropout -> fusilli.scaled_dot_product_attention
  (kept eager for grouped-query attention that needs gradients: no backward for it yet)

Everything else stays as it was and runs eagerly. A pattern whose arguments
fusilli cannot take (non-constant attributes, other devices or dtypes, string
padding) is left to eager too. Every decision is logged on the ``fusilli``
logger (one line per subgraph taken or left, then a summary), and the same lines
are kept in ``last_report`` for inspection. The rewritten graph keeps autograd:
the fusilli ops carry their own backward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx

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
