"""Artifacts and the persistent, content-addressed disk cache.

An entry lives in ``$FUSILLI_CACHE_DIR/<key[:2]>/<key>.fsa`` (default
``~/.cache/fusilli``). The key hashes the graph's canonical JSON, the compiler
flags, the target (host CPU or GPU arch), the pass pipeline and the compiler
and fusilli versions. Entries are written to a temporary file and renamed into
place (atomic); each stores a SHA-256 of its payload, and an entry that fails
the check is deleted and rebuilt, never loaded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import tempfile
from dataclasses import dataclass
from importlib import metadata

from fusilli.backend.compiler import CompileStats
from fusilli.backend.targets import Backend, Target
from fusilli.errors import ErrorCode, fail
from fusilli.log import logger

_MAGIC = b"FUSILLI-ARTIFACT\x01"


@functools.lru_cache(maxsize=1)
def toolchain_versions() -> str:
    """Versions of fusilli and IREE, plus a digest of fusilli's sources: a
    development checkout that changes an emitter or pass never reuses stale
    artifacts."""
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
        try:
            versions.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{dist}=unknown")
    return ";".join(versions)


def compute_key(graph_json: str, target: Target, pipeline: str) -> str:
    h = hashlib.sha256()
    for part in (graph_json, "\0".join(target.flags), target.device_id, pipeline, toolchain_versions()):
        h.update(part.encode())
        h.update(b"\x00\x01")
    return h.hexdigest()


@dataclass
class Artifact:
    """A compiled graph: the VM flatbuffer plus what is needed to trust and run it."""

    graph_key: str
    backend: Backend
    arch: str | None
    vmfb: bytes
    stats: CompileStats
    from_cache: bool = False

    def to_bytes(self) -> bytes:
        meta = json.dumps(
            {
                "graph_key": self.graph_key,
                "backend": self.backend.value,
                "arch": self.arch,
                "stats": self.stats.to_json(),
                "sha256": hashlib.sha256(self.vmfb).hexdigest(),
            }
        ).encode()
        return _MAGIC + struct.pack("<Q", len(meta)) + meta + self.vmfb

    @staticmethod
    def from_bytes(data: bytes) -> Artifact:
        try:
            if not data.startswith(_MAGIC):
                raise ValueError("not a fusilli artifact")
            (n,) = struct.unpack_from("<Q", data, len(_MAGIC))
            start = len(_MAGIC) + 8
            meta = json.loads(data[start : start + n])
            vmfb = bytes(data[start + n :])
            if hashlib.sha256(vmfb).hexdigest() != meta["sha256"]:
                raise ValueError("payload checksum mismatch")
            return Artifact(
                meta["graph_key"],
                Backend(meta["backend"]),
                meta["arch"],
                vmfb,
                CompileStats.from_json(meta["stats"]),
            )
        except (ValueError, KeyError, struct.error, TypeError) as e:
            raise fail(ErrorCode.INVALID_ARGUMENT, f"corrupt or foreign compiled artifact: {e}") from None


def cache_dir() -> str | None:
    if os.environ.get("FUSILLI_DISABLE_CACHE", "0") not in ("", "0"):
        return None
    return os.environ.get("FUSILLI_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fusilli")


def _entry_path(root: str, key: str) -> str:
    return os.path.join(root, key[:2], f"{key}.fsa")


def lookup(key: str) -> Artifact | None:
    root = cache_dir()
    if root is None:
        return None
    path = _entry_path(root, key)
    try:
        with open(path, "rb") as f:
            data = f.read()
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
