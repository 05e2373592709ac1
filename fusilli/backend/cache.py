"""Artifacts and the persistent, content-addressed disk cache.

An entry lives in ``$FUSILLI_CACHE_DIR/<key[:2]>/<key>.fsa`` (default
``~/.cache/fusilli``). The key hashes the graph's canonical JSON, the compiler
flags, the target (host CPU or GPU arch), the pass pipeline and the compiler
and fusilli versions. Entries are written to a temporary file and renamed into
place (atomic); each stores a SHA-256 of its payload and a metadata record
(graph name, target, versions, creation time). The file's modification time is
when it was made and its access time, set explicitly on every hit, when it was
last used: ``FUSILLI_CACHE_MAX_BYTES`` evicts the least recently used entries.

The cache heals instead of failing: an entry that is not a regular file (a
directory, a FIFO, a symlink), fails its checksum or holds a payload the
runtime refuses is warned about, removed and rebuilt; a cache directory that
cannot be written (read-only, full, a file) is a warning and the graph runs
uncached. Only regular files are ever opened, without following links and
without blocking (``O_NOFOLLOW | O_NONBLOCK``, checked with ``lstat`` and
``fstat``). Processes compiling the same graph serialize on a lock file per
entry (``<key>.lock``, the ``filelock`` library), so the graph is compiled once.

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
import shutil
import stat
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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
ENTRY_SUFFIX = ".fsa"
LOCK_SUFFIX = ".lock"
_TMP_PREFIX = ".tmp-"
# How long a process waits for another one compiling the same graph before it
# compiles too (a stuck holder must not hang everyone; a dead one releases at once).
LOCK_TIMEOUT_SECONDS = 900.0


def dist_version(dist: str) -> str:
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
def versions() -> dict[str, str]:
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
    found = {"sources": digest.hexdigest()[:16]}
    for dist in ("fusilli", "iree-base-compiler"):
        found[dist] = dist_version(dist)
    return found


def toolchain_versions() -> str:
    """``versions()`` as the one string the cache key hashes."""
    return ";".join(f"{name}={value}" for name, value in versions().items())


def compute_key(graph_json: str, target: Target, pipeline: str) -> str:
    h = hashlib.sha256()
    for part in (graph_json, "\0".join(target.flags), target.device_id, pipeline, toolchain_versions()):
        h.update(part.encode())
        h.update(b"\x00\x01")
    return h.hexdigest()


def target_record(target: Target) -> dict[str, Any]:
    """What an entry records about its target for people (``fusilli-cache info``):
    backend, arch, the CPU name and ISA features the code was built for, the
    flags. Readers ignore fields they do not know."""
    return {**target.record(), "device": target.device_id, "flags": list(target.flags)}


def entry_metadata(graph_name: str, target: Target) -> dict[str, Any]:
    """The metadata record of a new entry: graph name, target, versions, creation time."""
    return {
        "graph_name": graph_name,
        "target": target_record(target),
        "versions": dict(versions()),
        "created": time.time(),
    }


class Artifact:
    """A compiled graph: the VM flatbuffer plus what is needed to trust and run it.

    ``vmfb`` is any bytes-like object (a read-only view into the cache file's
    buffer on a cache hit). ``stats`` may be given as a ``CompileStats`` or as
    its JSON dict; the dict is decoded on first access, so loading an entry
    does not import the compiler module. ``metadata`` is a JSON object that
    says what the artifact is (``entry_metadata``); it is not part of the key.
    """

    __slots__ = ("graph_key", "backend", "arch", "vmfb", "_stats", "from_cache", "target", "metadata")

    def __init__(
        self,
        graph_key: str,
        backend: Backend,
        arch: str | None,
        vmfb: Any,
        stats: CompileStats | dict,
        from_cache: bool = False,
        target: dict | None = None,
        metadata: dict[str, Any] | None = None,
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
        self.metadata = metadata or {}

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
                "metadata": self.metadata,
            }
        ).encode()
        head = _MAGIC + struct.pack("<Q", len(meta)) + meta
        return head + bytes(-len(head) % _ALIGNMENT) + self.vmfb

    @staticmethod
    def _header(view: memoryview) -> tuple[dict, int]:
        """The header's JSON and where the payload starts."""
        magic = bytes(view[: len(_MAGIC)])
        if magic not in (_MAGIC, _MAGIC_V1):
            raise ValueError("not a fusilli artifact")
        (n,) = struct.unpack_from("<Q", view, len(_MAGIC))
        end = len(_MAGIC) + 8 + n
        if end > len(view):
            raise ValueError("truncated header")
        meta = json.loads(bytes(view[len(_MAGIC) + 8 : end]))
        if not isinstance(meta, dict):
            raise ValueError("header is not an object")
        return meta, end + (-end % _ALIGNMENT if magic == _MAGIC else 0)

    @staticmethod
    def from_bytes(data: Any) -> Artifact:
        """Decodes an artifact from any bytes-like object; the payload is a view
        into ``data`` (no copy), checked against its SHA-256."""
        try:
            view = memoryview(data).cast("B")
            meta, start = Artifact._header(view)
            vmfb = view[start:].toreadonly()
            if hashlib.sha256(vmfb).hexdigest() != meta["sha256"]:
                raise ValueError("payload checksum mismatch")
            if not isinstance(meta["stats"], dict):
                raise ValueError("bad stats")
            target = meta.get("target")
            if target is not None and not isinstance(target, dict):
                raise ValueError("bad target record")
            metadata = meta.get("metadata") or {}
            if not isinstance(metadata, dict):
                raise ValueError("bad metadata")
            return Artifact(
                meta["graph_key"],
                Backend(meta["backend"]),
                meta["arch"],
                vmfb,
                meta["stats"],
                target=target,
                metadata=metadata,
            )
        except (ValueError, KeyError, struct.error, TypeError) as e:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"corrupt or foreign compiled artifact: {e}") from None


# ---------------------------------------------------------------------- locations and environment
def configured_cache_dir() -> str:
    """``FUSILLI_CACHE_DIR``, else ``~/.cache/fusilli`` (whether or not the cache is disabled)."""
    return os.environ.get("FUSILLI_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fusilli")


def cache_dir() -> str | None:
    """The cache directory compiles use; None when ``FUSILLI_DISABLE_CACHE`` is set."""
    if os.environ.get("FUSILLI_DISABLE_CACHE", "0") not in ("", "0"):
        return None
    return configured_cache_dir()


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """``'500M'``, ``'2G'``, ``'1048576'`` (binary units, an optional ``B``/``iB``) in bytes."""
    s = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = s[-1:] if s[-1:] in _SIZE_UNITS else ""
    try:
        value = float(s[: len(s) - len(unit)])
    except ValueError:
        raise ValueError(f"not a size: {text!r} (expected bytes, or a number with K, M, G or T)") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"not a size: {text!r}")
    return int(value * _SIZE_UNITS[unit])


def max_bytes_from_environment() -> int | None:
    """``FUSILLI_CACHE_MAX_BYTES``, or None when unset; a bad value is a warning (never a failed compile)."""
    text = os.environ.get("FUSILLI_CACHE_MAX_BYTES", "").strip()
    if not text:
        return None
    try:
        return parse_size(text)
    except ValueError as e:
        _warn_once(("max-bytes", text), "FUSILLI_CACHE_MAX_BYTES ignored: %s", e)
        return None


def entry_path(root: str, key: str) -> str:
    return os.path.join(root, key[:2], key + ENTRY_SUFFIX)


_warned: set[Any] = set()


def _warn_once(what: Any, message: str, *args: Any) -> None:
    """A warning printed once per process for ``what`` (a broken cache would otherwise warn on every compile)."""
    if what not in _warned:
        _warned.add(what)
        logger.warning(message, *args)


# ---------------------------------------------------------------------- safe file access
def _is_regular(path: str) -> bool | None:
    """True for a regular file, False for anything else at ``path``, None when nothing is there."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


def _remove_any(path: str) -> None:
    """Removes whatever is at ``path`` (a directory tree too); a failure is logged."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        logger.warning("cannot remove %s from the fusilli cache: %s", path, e)


def _open_regular(path: str) -> int:
    """A read-only descriptor on the regular file ``path``. Never follows a
    link and never blocks (a FIFO or device put in place of an entry is
    refused with ``OSError``, not opened for reading)."""
    if not _is_regular(path):
        raise IsADirectoryError(f"{path} is not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between lstat and open
        os.close(fd)
        raise IsADirectoryError(f"{path} is not a regular file")
    return fd


def _read_aligned(path: str) -> np.ndarray:
    """The file's bytes in a buffer whose start is 64-byte aligned (one read, no copies)."""
    with open(_open_regular(path), "rb", buffering=0) as f:
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


def _prepare_shard(root: str, key: str) -> str:
    """The shard directory of ``key``, created, or healed when something else took its place."""
    shard = os.path.dirname(entry_path(root, key))
    if os.path.lexists(shard) and not (os.path.isdir(shard) and not os.path.islink(shard)):
        if os.path.isdir(root):
            logger.warning("fusilli cache: %s is not a directory; replacing it", shard)
            _remove_any(shard)
    os.makedirs(shard, exist_ok=True)
    return shard


# ---------------------------------------------------------------------- lookup, store, lock
def lookup(key: str) -> Artifact | None:
    """The cached artifact for ``key``, or None (a miss; anything broken is removed)."""
    root = cache_dir()
    if root is None:
        return None
    path = entry_path(root, key)
    try:
        regular = _is_regular(path)
    except OSError:  # the cache or shard directory is a file, unreadable, ...: a miss
        return None
    if regular is None:
        return None
    if not regular:
        logger.warning("fusilli cache entry %s is not a regular file; removing it and recompiling", path)
        _remove_any(path)
        return None
    try:
        data = _read_aligned(path)
    except OSError as e:
        logger.warning("fusilli cache entry %s is unreadable (%s); recompiling", path, e)
        return None
    try:
        artifact = Artifact.from_bytes(data)
        if artifact.graph_key != key:
            raise ValueError("key mismatch")
    except Exception as e:  # any corruption: drop the entry, rebuild
        logger.warning("fusilli cache entry %s is corrupt (%s); removing it and recompiling", path, e)
        _remove_any(path)
        return None
    try:  # the access time says when the entry was last used (for FUSILLI_CACHE_MAX_BYTES)
        os.utime(path, ns=(time.time_ns(), os.lstat(path).st_mtime_ns))
    except OSError:
        pass  # a read-only cache still serves hits
    artifact.from_cache = True
    return artifact


def discard(key: str, reason: str) -> None:
    """Removes ``key``'s entry (it loaded but the runtime refused it), with a warning."""
    root = cache_dir()
    if root is None:
        return
    path = entry_path(root, key)
    logger.warning("fusilli cache entry %s cannot be loaded (%s); removing it and recompiling", path, reason)
    _remove_any(path)


def store(artifact: Artifact) -> bool:
    """Writes ``artifact`` into the cache; False (and a warning) when the cache cannot be written."""
    root = cache_dir()
    if root is None:
        return False
    path = entry_path(root, artifact.graph_key)
    tmp = None
    try:
        shard = _prepare_shard(root, artifact.graph_key)
        if _is_regular(path) is False:
            _remove_any(path)
        fd, tmp = tempfile.mkstemp(dir=shard, prefix=_TMP_PREFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(artifact.to_bytes())
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        _warn_once(("store", root, type(e)), "fusilli cache %s cannot be written (%s); running uncached", root, e)
        return False
    limit = max_bytes_from_environment()
    if limit is not None:
        evict(root, limit, keep=artifact.graph_key)
    return True


@contextmanager
def entry_lock(key: str) -> Iterator[None]:
    """Held while ``key`` is compiled and stored: a second process compiling the
    same graph waits, then finds the entry. Without a writable cache the block
    runs unlocked (there is nothing to share)."""
    root = cache_dir()
    if root is None:
        yield
        return
    from filelock import FileLock, Timeout

    path = entry_path(root, key) + LOCK_SUFFIX
    try:
        _prepare_shard(root, key)
        if _is_regular(path) is False:
            _remove_any(path)
        lock = FileLock(path)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            logger.info("fusilli cache: waiting for another process compiling %s", key[:16])
            lock.acquire(timeout=LOCK_TIMEOUT_SECONDS)
    except Timeout:
        logger.warning("fusilli cache: %s stayed locked for %.0f s; compiling anyway", path, LOCK_TIMEOUT_SECONDS)
        yield
        return
    except OSError as e:
        _warn_once(("lock", root, type(e)), "fusilli cache %s cannot be locked (%s); running uncached", root, e)
        yield
        return
    try:
        yield
    finally:
        lock.release()


# ---------------------------------------------------------------------- inspection and maintenance
@dataclass
class Entry:
    """One cache entry as ``fusilli-cache`` shows it."""

    key: str
    path: str
    size: int
    created: float  # file modification time: when it was written
    last_used: float  # file access time: set on every hit
    metadata: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # why the entry is unusable (pruned), None when it reads


def read_entry_header(path: str) -> dict[str, Any]:
    """The header of the entry at ``path`` (its metadata, stats, key) without reading the payload."""
    with open(_open_regular(path), "rb", buffering=0) as f:
        head = f.read(len(_MAGIC) + 8)
        if len(head) < len(_MAGIC) + 8:
            raise ValueError("truncated header")
        (n,) = struct.unpack_from("<Q", head, len(_MAGIC))
        if n > 1 << 26:
            raise ValueError("header too large")
        head += f.read(n)
    meta, _ = Artifact._header(memoryview(head))
    return meta


def entries(root: str, with_metadata: bool = True) -> list[Entry]:
    """Every entry under ``root``, least recently used first; broken ones carry a ``problem``."""
    found = []
    try:
        shards = sorted(os.listdir(root))
    except OSError:
        return []
    for shard in shards:
        shard_path = os.path.join(root, shard)
        if len(shard) != 2 or not os.path.isdir(shard_path):
            continue
        try:
            names = sorted(os.listdir(shard_path))
        except OSError:
            continue
        for name in names:
            if not name.endswith(ENTRY_SUFFIX):
                continue
            path = os.path.join(shard_path, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            entry = Entry(name[: -len(ENTRY_SUFFIX)], path, st.st_size, st.st_mtime, st.st_atime)
            if not stat.S_ISREG(st.st_mode):
                entry.problem = "not a regular file"
            elif with_metadata:
                try:
                    header = read_entry_header(path)
                    entry.metadata = header.get("metadata") or {}
                    if header.get("graph_key") != entry.key:
                        entry.problem = "stored under another key"
                except (OSError, ValueError, struct.error) as e:
                    entry.problem = f"unreadable header: {e}"
            found.append(entry)
    found.sort(key=lambda e: (e.last_used, e.key))
    return found


def evict(root: str, max_bytes: int, keep: str | None = None) -> list[Entry]:
    """Removes least recently used entries until the entries total at most
    ``max_bytes`` (``keep``, the entry just written, stays); the removed ones."""
    listed = entries(root, with_metadata=False)
    total = sum(e.size for e in listed)
    removed = []
    for entry in listed:
        if total <= max_bytes:
            break
        if entry.key == keep:
            continue
        _remove_any(entry.path)
        total -= entry.size
        removed.append(entry)
    if removed:
        logger.info("fusilli cache: evicted %d least recently used entries (limit %d bytes)", len(removed), max_bytes)
    return removed


def _stray_files(root: str, older_than: float | None) -> Iterator[str]:
    """Temporary files of interrupted writes (and lock files, when ``older_than`` is None)."""
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.startswith(_TMP_PREFIX):
                try:
                    if older_than is None or os.lstat(path).st_mtime < older_than:
                        yield path
                except OSError:
                    continue
            elif name.endswith(LOCK_SUFFIX) and older_than is None:
                yield path


def _remove_empty_shards(root: str) -> None:
    try:
        shards = os.listdir(root)
    except OSError:
        return
    for shard in shards:
        path = os.path.join(root, shard)
        if len(shard) == 2 and os.path.isdir(path) and not os.path.islink(path):
            try:
                os.rmdir(path)
            except OSError:
                pass  # not empty


def clear(root: str) -> int:
    """Removes every entry, lock and temporary file fusilli wrote under ``root``
    (nothing else: the directory may hold other files); the number of entries removed."""
    listed = entries(root, with_metadata=False)
    for entry in listed:
        _remove_any(entry.path)
    for path in list(_stray_files(root, None)):
        _remove_any(path)
    _remove_empty_shards(root)
    return len(listed)


def prune(root: str, max_bytes: int | None = None, older_than_seconds: float | None = None) -> list[Entry]:
    """Removes broken entries, entries unused for ``older_than_seconds``, then the
    least recently used ones beyond ``max_bytes``, and stale temporary files; the removed entries."""
    now = time.time()
    removed = []
    for entry in entries(root):
        if entry.problem is not None or (older_than_seconds is not None and now - entry.last_used > older_than_seconds):
            _remove_any(entry.path)
            removed.append(entry)
    if max_bytes is not None:
        removed += evict(root, max_bytes)
    for path in list(_stray_files(root, now - 3600)):  # a write in progress is younger than an hour
        _remove_any(path)
    _remove_empty_shards(root)
    return removed
