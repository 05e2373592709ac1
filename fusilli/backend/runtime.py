"""Running compiled graphs with ``iree.runtime``: Handle, variant-pack checks, execute.

Arrays are imported as HAL buffers without copying
(``HalAllocator.import_host_allocation``), so outputs are written straight
into the caller's memory. Every check of a variant pack happens before
anything runs, so a rejected call leaves the outputs untouched. A call whose
arrays match the previous one's (same objects, addresses, shapes) reuses the
bound argument list and skips the checks.

The repeated-call fast path (``execute`` with the same pack) costs a few
microseconds above the raw ``VmContext.invoke``: the pack's signature (ids of
its keys and arrays, plus each array's shape and dtype; for objects other than
NumPy arrays also their data address) is compared with the bound one's, and
the prepared argument list is invoked with a reused empty result list. The
binding holds references to every key and array of the pack, so an id cannot
be reused by another object while it is bound, and a bound NumPy array cannot
be resized (NumPy refuses while fusilli's views of it exist).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from fusilli.backend.cache import Artifact
from fusilli.backend.targets import Backend, Target, default_cpu_arch, named_cpu, resolve_amdgpu_arch
from fusilli.errors import ErrorCode, FusilliError, fail
from fusilli.log import logger
from fusilli.tensor import TensorAttr, as_numpy, data_type_of, physical_order

_instance_lock = threading.Lock()
_cpu_config = None


def _rt():
    import iree.runtime as rt

    return rt


class Handle:
    """A device to run compiled graphs on: ``Handle(Backend.CPU)`` or
    ``Handle(Backend.AMDGPU, device=0, arch="gfx942")``. On CPU, ``arch`` is the LLVM CPU
    name graphs are compiled for (default ``FUSILLI_CPU_ARCH`` or ``"host"``)."""

    def __init__(self, backend: Any = Backend.CPU, device: int = 0, arch: str | None = None):
        global _cpu_config
        self.backend = Backend.coerce(backend)
        self.device_index = int(device)
        rt = _rt()
        if self.backend == Backend.CPU:
            if device != 0:
                raise fail(ErrorCode.INVALID_ARGUMENT, f"the CPU backend has one device (0), not {device}")
            # The CPU code is compiled for: checked now, kept as spelled ("host" stays "host").
            self.arch = arch or default_cpu_arch()
            named_cpu(self.arch)
            with _instance_lock:
                if _cpu_config is None:
                    _cpu_config = rt.Config("local-task")
            self.instance = _cpu_config.vm_instance
            self.device = _cpu_config.device
        else:
            self.arch = resolve_amdgpu_arch(arch)
            try:
                driver = rt.get_driver("hip")
                infos = driver.query_available_devices()
                if self.device_index >= len(infos):
                    raise RuntimeError(f"{len(infos)} HIP device(s) visible")
                self.device = driver.create_device(infos[self.device_index]["device_id"])
            except FusilliError:
                raise
            except Exception as e:
                raise fail(ErrorCode.RUNTIME_FAILURE, f"cannot open AMD GPU device {self.device_index}: {e}") from None
            self.instance = rt.VmInstance()

    def __repr__(self) -> str:
        arch = f", arch={self.arch!r}" if self.arch else ""
        return f"Handle({self.backend}, device={self.device_index}{arch})"


class CompiledGraph:
    """A loaded artifact bound to one graph's input/output signature."""

    def __init__(self, handle: Handle, artifact: Artifact, graph: Any):
        rt = _rt()
        if artifact.backend != handle.backend:
            raise fail(
                ErrorCode.INVALID_ARGUMENT,
                f"graph '{graph.name}': handle is for backend {handle.backend.name} but the artifact was "
                f"compiled for {artifact.backend.name}",
            )
        Target.from_record(artifact.target).check_runs_here(f"graph '{graph.name}': the compiled artifact")
        self.handle = handle
        self.artifact = artifact
        self.key = artifact.graph_key
        self.graph_name = graph.name
        try:
            self._vm_module = _load_vm_module(rt, handle.instance, artifact.vmfb)
            hal = rt.create_hal_module(handle.instance, handle.device)
            self._context = rt.VmContext(handle.instance, modules=[hal, self._vm_module])
        except Exception as e:
            raise fail(ErrorCode.RUNTIME_FAILURE, f"graph '{graph.name}': cannot load artifact: {e}") from None
        self._main = self._vm_module.lookup_function("main")
        reflection = (self._vm_module.lookup_function("main$async") or self._main).reflection
        size = reflection.get("iree.abi.transients.size.constant")
        self.dynamic_workspace = size is None and "iree.abi.transients.size" in reflection
        self._size_fn = self._vm_module.lookup_function(reflection.get("iree.abi.transients.size", ""))
        self.workspace_size = int(size or 0)
        # Argument order of @main: outputs then non-scalar inputs, each sorted by name.
        self.outputs = sorted(graph.output_tensors(), key=lambda t: t.name)
        self.inputs = sorted((t for t in graph.input_tensors() if not t.is_scalar), key=lambda t: t.name)
        self._by_name: dict[str, TensorAttr] = {t.name: t for t in graph.all_tensors()}
        self._own_workspace = None
        self._binding: _Binding | None = None
        self._invoke_fn = self._context.invoke  # pre-bound for the fast path
        self._no_results = rt.VmVariantList(0)  # @main returns nothing; reused by every call

    # ------------------------------------------------------------------ checks
    def _resolve(self, variant_pack: Mapping[Any, Any]) -> dict[int, tuple[TensorAttr, Any]]:
        resolved: dict[int, tuple[TensorAttr, Any]] = {}
        for key, array in variant_pack.items():
            t = key if isinstance(key, TensorAttr) else self._by_name.get(key) if isinstance(key, str) else None
            if t is None or self._by_name.get(t.name) is not t:
                raise fail(
                    ErrorCode.VARIANT_PACK_ERROR,
                    f"graph '{self.graph_name}': variant pack key {getattr(key, 'name', key)!r} is not a tensor "
                    "of this graph",
                )
            if t.is_scalar:
                raise fail(
                    ErrorCode.VARIANT_PACK_ERROR,
                    f"graph '{self.graph_name}': scalar constant tensor '{t.name}' found in variant pack",
                )
            if t.is_virtual:
                raise fail(
                    ErrorCode.VARIANT_PACK_ERROR,
                    f"graph '{self.graph_name}': virtual tensor '{t.name}' found in variant pack "
                    "(only graph inputs and outputs are passed)",
                )
            resolved[id(t)] = (t, array)
        for role, tensors in (("output", self.outputs), ("input", self.inputs)):
            for needed in tensors:
                if id(needed) not in resolved:
                    raise fail(
                        ErrorCode.VARIANT_PACK_ERROR,
                        f"graph '{self.graph_name}': {role} tensor '{needed.name}' missing from variant pack",
                    )
        return resolved

    def _check_array(self, t: TensorAttr, array: Any, is_output: bool) -> np.ndarray:
        where = f"graph '{self.graph_name}': tensor '{t.name}'"
        try:
            arr = as_numpy(array)
        except FusilliError as e:
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"{where}: {e.message}") from None
        if arr.ndim != t.rank or any(
            a != d for i, (a, d) in enumerate(zip(arr.shape, t.dim)) if i not in t.dynamic_dims
        ):
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"{where}: array shape {list(arr.shape)} != dim {t.dim}")
        dt = data_type_of(t)
        if arr.dtype != dt.numpy_dtype:
            raise fail(
                ErrorCode.VARIANT_PACK_ERROR,
                f"{where}: array dtype {arr.dtype} != {dt.name} ({dt.numpy_dtype})",
            )
        itemsize = arr.dtype.itemsize
        if any(s % itemsize for s in arr.strides):
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"{where}: array strides {arr.strides} are not whole elements")
        elem_strides = [s // itemsize for s in arr.strides]
        if t.dynamic_dims:
            ok = physical_order(arr.shape, elem_strides) == t.physical_order and _dense(arr.shape, elem_strides)
        else:
            ok = all(a == s for a, s, d in zip(elem_strides, t.stride, t.dim) if d != 1)
        if not ok:
            raise fail(
                ErrorCode.VARIANT_PACK_ERROR,
                f"{where}: array element strides {elem_strides} do not match the tensor's stride {t.stride}",
            )
        if is_output and not arr.flags.writeable:
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"{where}: output array is read-only")
        return arr

    # ------------------------------------------------------------------ execute
    def execute(self, variant_pack: Mapping[Any, Any], workspace: Any = None) -> None:
        binding = self._binding
        if binding is not None:
            sig = binding.signature_of(variant_pack, workspace)
            if sig is not None and sig == binding.sig:
                if binding.direct:
                    try:
                        self._invoke_fn(self._main, binding.args, self._no_results)
                    except Exception as e:
                        raise fail(
                            ErrorCode.RUNTIME_FAILURE, f"graph '{self.graph_name}': execution failed: {e}"
                        ) from None
                else:
                    binding.run(self)
                return
        if not isinstance(variant_pack, Mapping):
            raise fail(ErrorCode.VARIANT_PACK_ERROR, f"variant pack must be a mapping, not {type(variant_pack)}")
        binding = self._bind(variant_pack, workspace)
        self._binding = binding
        binding.run(self)

    def _bind(self, variant_pack: Mapping[Any, Any], workspace: Any) -> _Binding:
        """Checks the whole variant pack, then builds the argument list (nothing runs yet)."""
        resolved = self._resolve(variant_pack)
        arrays = [(t, self._check_array(t, resolved[id(t)][1], True), True) for t in self.outputs]
        arrays += [(t, self._check_array(t, resolved[id(t)][1], False), False) for t in self.inputs]
        rt = _rt()
        binding = _Binding(rt.VmVariantList(len(arrays) + 1), variant_pack, workspace)
        for t, arr, is_output in arrays:
            phys = self._physical_view(t, arr)
            if phys.ctypes.data % _ALIGNMENT:
                # IREE's CPU kernels assume 64-byte aligned buffers (misaligned
                # ones crash); such arrays go through an aligned staging copy.
                staging = aligned_empty(phys.shape, phys.dtype)
                (binding.copy_out if is_output else binding.copy_in).append(
                    (staging, phys) if is_output else (phys, staging)
                )
                phys = staging
            view = self._import(t, phys)
            binding.keep_alive.append(view)
            binding.args.push_ref(view.ref)
        ws = self._workspace_buffer(workspace, binding.keep_alive)
        binding.args.push_ref(ws.ref if ws is not None else self._null_workspace())
        binding.keep_alive.append(ws)
        binding.direct = not (binding.copy_in or binding.copy_out)
        return binding

    def _invoke(self, args) -> None:
        try:
            self._invoke_fn(self._main, args, self._no_results)
        except Exception as e:
            raise fail(ErrorCode.RUNTIME_FAILURE, f"graph '{self.graph_name}': execution failed: {e}") from None

    def _physical_view(self, t: TensorAttr, arr: np.ndarray) -> np.ndarray:
        """``arr`` viewed in the tensor's memory order (C-contiguous, broadcasts collapsed)."""
        order = (
            physical_order(arr.shape, [s // arr.itemsize for s in arr.strides]) if t.dynamic_dims else t.physical_order
        )
        phys = arr.transpose(order)
        index = tuple(slice(0, 1) if s == 0 and d != 1 else slice(None) for s, d in zip(phys.strides, phys.shape))
        phys = phys[index]
        if not phys.flags.c_contiguous:
            raise fail(ErrorCode.INTERNAL_ERROR, f"tensor '{t.name}': physical view is not dense")
        return phys

    def _import(self, t: TensorAttr, phys: np.ndarray):
        rt = _rt()
        flat = phys.reshape(-1).view(np.uint8)
        if data_type_of(t).name == "INT4":
            flat = _pack_int4(t, flat, any(o is t for o in self.outputs))
        buf = self.handle.device.allocator.import_host_allocation(
            flat,
            rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE,
            rt.BufferUsage.DEFAULT,
        )
        return rt.HalBufferView(buf, list(phys.shape), _hal_element_type(t))

    def _workspace_buffer(self, workspace: Any, views: list[Any]):
        rt = _rt()
        size = self.workspace_size
        if self.dynamic_workspace:
            size = self._query_dynamic_workspace(views)
        if workspace is not None:
            ws = as_numpy(workspace)
            if ws.nbytes < size:
                raise fail(
                    ErrorCode.INVALID_ARGUMENT,
                    f"graph '{self.graph_name}': workspace buffer too small ({ws.nbytes} < {size} bytes)",
                )
            if not ws.flags.c_contiguous or not ws.flags.writeable:
                raise fail(ErrorCode.INVALID_ARGUMENT, "workspace must be a writeable contiguous buffer")
            raw = ws.reshape(-1).view(np.uint8)
            skip = (-raw.ctypes.data) % _ALIGNMENT
            if raw.nbytes - skip >= size:
                # IREE's CPU kernels need 64-byte aligned scratch: use the
                # aligned part of the caller's buffer.
                return self.handle.device.allocator.import_host_allocation(
                    raw[skip:], rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE, rt.BufferUsage.DEFAULT
                )
            logger.info(
                "graph '%s': caller's workspace is not 64-byte aligned with room to spare; using fusilli's own",
                self.graph_name,
            )
        if size == 0:
            return None
        if self._own_workspace is None or self._own_workspace.byte_length() < size:
            logger.info("graph '%s': allocating a %d-byte workspace", self.graph_name, size)
            self._own_workspace = self.handle.device.allocator.allocate_buffer(
                rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT, size
            )
        return self._own_workspace

    def _query_dynamic_workspace(self, views: list[Any]) -> int:
        """Asks the module how much scratch these extents need (dynamic dims).

        The size function takes main$async's arguments: the buffer views, a
        workspace buffer and two fences, which it does not use.
        """
        rt = _rt()
        args = rt.VmVariantList(len(views) + 3)
        for v in views:
            args.push_ref(v.ref)
        args.push_ref(self._null_workspace())
        args.push_ref(rt.HalFence(1).ref)
        args.push_ref(rt.HalFence(1).ref)
        out = rt.VmVariantList(1)
        try:
            self._context.invoke(self._size_fn, args, out)
        except Exception as e:
            raise fail(
                ErrorCode.RUNTIME_FAILURE, f"graph '{self.graph_name}': workspace size query failed: {e}"
            ) from None
        size = int(out.get_variant(0))
        self.workspace_size = max(self.workspace_size, size)
        return size

    def _null_workspace(self):
        # The externalized-transients ABI always takes a buffer argument; a
        # zero-sized graph is given a 1-byte one.
        rt = _rt()
        if self._own_workspace is None:
            self._own_workspace = self.handle.device.allocator.allocate_buffer(
                rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT, 1
            )
        return self._own_workspace.ref


_ALIGNMENT = 64


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialized C-contiguous array whose data is 64-byte aligned."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + _ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % _ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


_SHAPE_DTYPE = operator.attrgetter("shape", "dtype")


class _Binding:
    """A checked, bound call: argument list plus staging copies for misaligned arrays.

    ``sig`` identifies the pack it was bound for; ``signature_of`` computes the
    same for a new call (None when the pack cannot match). With only NumPy
    arrays (``fast``) it is the ids of keys and arrays plus (shape, dtype) of
    each array; otherwise the data address of each array-like is added, since
    such an object may swap its storage.
    """

    __slots__ = ("args", "items", "workspace", "keep_alive", "copy_in", "copy_out", "direct", "fast", "sig")

    def __init__(self, args, pack: Mapping[Any, Any], workspace: Any):
        self.args = args
        # References to every key and array: keeps the caller's arrays alive
        # while bound, and their ids unique.
        self.items = tuple(pack.items())
        self.workspace = workspace
        self.keep_alive: list[Any] = []
        self.copy_in: list[tuple[np.ndarray, np.ndarray]] = []  # (caller's, staging)
        self.copy_out: list[tuple[np.ndarray, np.ndarray]] = []  # (staging, caller's)
        self.direct = False  # no staging copies: execute invokes args directly
        nd = np.ndarray
        self.fast = all(type(v) is nd for _, v in self.items) and (workspace is None or type(workspace) is nd)
        self.sig = self.signature_of(pack, workspace)

    def signature_of(self, pack: Any, workspace: Any) -> list | None:
        try:
            values = pack.values()
            if self.fast:
                return [*map(id, pack), *map(id, values), *map(_SHAPE_DTYPE, values), id(workspace)]
            return [
                *map(id, pack),
                *map(id, values),
                *map(_generic_signature, values),
                id(workspace),
                _address(workspace),
            ]
        except (AttributeError, TypeError):
            return None  # not a mapping of arrays: the slow path reports it

    def run(self, compiled: CompiledGraph) -> None:
        for src, dst in self.copy_in:
            np.copyto(dst, src)
        compiled._invoke(self.args)
        for src, dst in self.copy_out:
            np.copyto(dst, src)


def _generic_signature(v: Any) -> tuple:
    return (_address(v), getattr(v, "shape", None), getattr(v, "dtype", None))


def _address(v: Any) -> int:
    iface = getattr(v, "__array_interface__", None)
    if iface is None:
        try:
            from fusilli.tensor import as_numpy

            return as_numpy(v).__array_interface__["data"][0]  # DLPack / buffer protocol objects
        except Exception:
            return 0
    return iface["data"][0]


def _load_vm_module(rt, instance, vmfb):
    """The VM module over ``vmfb`` itself when 64-byte aligned (a cache hit: no
    copy), else over an aligned copy."""
    view = memoryview(vmfb)
    if view.contiguous and np.frombuffer(view, np.uint8).ctypes.data % _ALIGNMENT == 0:
        return rt.VmModule.wrap_buffer(instance, view)
    return rt.VmModule.copy_buffer(instance, vmfb)


def _dense(shape, strides) -> bool:
    from fusilli.tensor import is_valid_layout

    return is_valid_layout(list(shape), list(strides))


def _hal_element_type(t: TensorAttr):
    rt = _rt()
    return getattr(rt.HalElementType, data_type_of(t).hal_name)


def _pack_int4(t: TensorAttr, flat: np.ndarray, is_output: bool) -> np.ndarray:
    """IREE's i4 buffers hold two elements per byte (low nibble first); ml_dtypes.int4
    arrays hold one per byte. Inputs are packed into a copy; an int4 output could
    not be written in place, so it is refused."""
    if is_output:
        raise fail(ErrorCode.NOT_IMPLEMENTED, f"tensor '{t.name}': int4 graph outputs are not supported")
    nibbles = flat & 0xF
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    packed = aligned_empty((nibbles.size // 2,), np.uint8)  # IREE's CPU kernels need 64-byte alignment
    packed[...] = nibbles[0::2] | (nibbles[1::2] << 4)
    return packed
