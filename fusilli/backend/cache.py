"""Artifacts and the persistent, content-addressed disk cache.

An entry lives in ``$FUSILLI_CACHE_DIR/<key[:2]>/<key>.fsa`` (default
``~/.cache/fusilli``). The key hashes the graph's canonical JSON, the compiler
flags, the target (host CPU or GPU arch), the pass pipeline and the compiler
and fusilli versions. Entries are written to a temporary file and renamed into
place (atomic); each stores a SHA-256 of its payload, and an entry that fails
the check is deleted and rebuilt, never loaded.

A cache hit is cheap: this module imports neither ``iree.compiler`` nor
``importlib.metadata`` (the compile statistics are decoded on first use), the
versions in the key are computed once per process, and an entry is read once
into a 64-byte aligned buffer whose payload the runtime maps without copying
(the payload starts on a 64-byte boundary of the file).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import sys
import tempfile
from typing import TYPE_CHECKING, Any

import numpy as np

from fusilli.backend.targets import Backend, Target
from fusilli.errors import ErrorCode, fail
from fusilli.log import logger

if TYPE_CHECKING:
    from fusilli.backend.compiler import CompileStats

_MAGIC_V1 = b"FUSILLI-ARTIFACT\x01"  # header, then the payload unaligned (still read)
_MAGIC = b"FUSILLI-ARTIFACT\x02"  # header padded so the payload starts at a multiple of 64
_ALIGNMENT = 64


def _dist_version(dist: str) -> str:
    """The installed version of ``dist`` from its ``.dist-info`` directory name
    (what ``importlib.metadata.version`` returns, without importing it and the
    ``email`` parser, which costs milliseconds per process)."""
    prefix = dist.replace("-", "_").lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info") and name.lower().startswith(prefix):
                return name[len(prefix) : -len(".dist-info")]
    try:
        from importlib import metadata

        return metadata.version(dist)
    except Exception:
        return "unknown"


@functools.lru_cache(maxsize=1)
def toolchain_versions() -> str:
    """Versions of fusilli and IREE, plus a digest of fusilli's sources: a
    development checkout that changes an emitter or pass never reuses stale
    artifacts. Computed once per process (about 1 ms)."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(package_root)):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".py"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    digest.update(f.read())
    versions = [f"sources={digest.hexdigest()[:16]}"]
    for dist in ("fusilli", "iree-base-compiler"):
        versions.append(f"{dist}={_dist_version(dist)}")
    return ";".join(versions)


def compute_key(graph_json: str, target: Target, pipeline: str) -> str:
    h = hashlib.sha256()
    for part in (graph_json, "\0".join(target.flags), target.device_id, pipeline, toolchain_versions()):
        h.update(part.encode())
        h.update(b"\x00\x01")
    return h.hexdigest()


class Artifact:
    """A compiled graph: the VM flatbuffer plus what is needed to trust and run it.

    ``vmfb`` is any bytes-like object (a read-only view into the cache file's
    buffer on a cache hit). ``stats`` may be given as a ``CompileStats`` or as
    its JSON dict; the dict is decoded on first access, so loading an entry
    does not import the compiler module.
    """

    __slots__ = ("graph_key", "backend", "arch", "vmfb", "_stats", "from_cache", "target")

    def __init__(
        self,
        graph_key: str,
        backend: Backend,
        arch: str | None,
        vmfb: Any,
        stats: CompileStats | dict,
        from_cache: bool = False,
        target: dict | None = None,
    ):
        self.graph_key = graph_key
        self.backend = backend
        self.arch = arch
        self.vmfb = vmfb
        self._stats = stats
        self.from_cache = from_cache
        # Target.record() of what it was compiled for: CPU name and ISA features,
        # checked against this machine's before the code is loaded.
        self.target = target or {"backend": backend.value, "arch": arch, "features": []}

    @property
    def stats(self) -> CompileStats:
        if isinstance(self._stats, dict):
            from fusilli.backend.compiler import CompileStats

            self._stats = CompileStats.from_json(self._stats)
        return self._stats

    def __repr__(self) -> str:
        return (
            f"Artifact(key={self.graph_key[:16]}..., backend={self.backend.name}, arch={self.arch!r}, "
            f"{len(self.vmfb)} bytes, from_cache={self.from_cache})"
        )

    def _stats_json(self) -> dict:
        return self._stats if isinstance(self._stats, dict) else self._stats.to_json()

    def to_bytes(self) -> bytes:
        meta = json.dumps(
            {
                "graph_key": self.graph_key,
                "backend": self.backend.value,
                "arch": self.arch,
                "target": self.target,
                "stats": self._stats_json(),
                "sha256": hashlib.sha256(self.vmfb).hexdigest(),
            }
        ).encode()
        head = _MAGIC + struct.pack("<Q", len(meta)) + meta
        return head + bytes(-len(head) % _ALIGNMENT) + self.vmfb

    @staticmethod
    def from_bytes(data: Any) -> Artifact:
        """Decodes an artifact from any bytes-like object; the payload is a view
        into ``data`` (no copy), checked against its SHA-256."""
        try:
            view = memoryview(data).cast("B")
            magic = bytes(view[: len(_MAGIC)])
            if magic not in (_MAGIC, _MAGIC_V1):
                raise ValueError("not a fusilli artifact")
            (n,) = struct.unpack_from("<Q", view, len(_MAGIC))
            end = len(_MAGIC) + 8 + n
            if end > len(view):
                raise ValueError("truncated header")
            meta = json.loads(bytes(view[len(_MAGIC) + 8 : end]))
            start = end + (-end % _ALIGNMENT if magic == _MAGIC else 0)
            vmfb = view[start:].toreadonly()
            if hashlib.sha256(vmfb).hexdigest() != meta["sha256"]:
                raise ValueError("payload checksum mismatch")
            if not isinstance(meta["stats"], dict):
                raise ValueError("bad stats")
            target = meta.get("target")
            if target is not None and not isinstance(target, dict):
                raise ValueError("bad target record")
            return Artifact(
                meta["graph_key"], Backend(meta["backend"]), meta["arch"], vmfb, meta["stats"], target=target
            )
        except (ValueError, KeyError, struct.error, TypeError) as e:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"corrupt or foreign compiled artifact: {e}") from None


def cache_dir() -> str | None:
    if os.environ.get("FUSILLI_DISABLE_CACHE", "0") not in ("", "0"):
        return None
    return os.environ.get("FUSILLI_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fusilli")


def _entry_path(root: str, key: str) -> str:
    return os.path.join(root, key[:2], f"{key}.fsa")


def _read_aligned(path: str) -> np.ndarray:
    """The file's bytes in a buffer whose start is 64-byte aligned (one read, no copies)."""
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        raw = np.empty(size + _ALIGNMENT, dtype=np.uint8)
        offset = (-raw.ctypes.data) % _ALIGNMENT
        buf = raw[offset : offset + size]
        got = f.readinto(buf.data) or 0  # ndarray.data: a memoryview of the buffer; None: nothing read
        while got < size:  # readinto may return short reads
            more = f.readinto(buf.data[got:])
            if not more:
                break
            got += more
    return buf[:got]


def lookup(key: str) -> Artifact | None:
    root = cache_dir()
    if root is None:
        return None
    path = _entry_path(root, key)
    try:
        data = _read_aligned(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        logger.info("cache entry %s unreadable (%s); recompiling", path, e)
        return None
    try:
        artifact = Artifact.from_bytes(data)
        if artifact.graph_key != key:
            raise ValueError("key mismatch")
    except Exception as e:  # any corruption: drop the entry, rebuild
        logger.info("cache entry %s is corrupt (%s); removing and recompiling", path, e)
        try:
            os.remove(path)
        except OSError:
            pass
        return None
    artifact.from_cache = True
    return artifact


def store(artifact: Artifact) -> None:
    root = cache_dir()
    if root is None:
        return
    path = _entry_path(root, artifact.graph_key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(artifact.to_bytes())
        os.replace(tmp, path)
    except OSError as e:
        raise fail(ErrorCode.FILE_SYSTEM_FAILURE, f"cannot write cache entry {path}: {e}") from None
