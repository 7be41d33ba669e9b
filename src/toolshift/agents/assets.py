"""Files a command's workers read (a build, a Steward library, a flow), carried to each Ray node once, by digest.

On the driver, `pack(path)` makes a deterministic tar of a file or folder (sorted members, no times or
owners), so its SHA-256 names its content; the executor puts those bytes in Ray's object store once. On a
worker, `unpack` looks in the node's asset cache for that digest and returns the local copy; only the
first worker process of a node to need it fetches the bytes (a file lock serialises the rest), checks
their SHA-256 against the digest, and unpacks them beside the cache entry before renaming it into place, so
a half-written copy is never used. A local run uses the driver's paths as they are.

The node's cache is `TOOLSHIFT_ASSET_CACHE` where its `ray start` set it, else a folder in the node's Ray session
folder (removed with the cluster's temp dir); each fetch appends a line (digest, process id) to its `fetched.log`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError, ToolshiftError

CACHE_ENV = "TOOLSHIFT_ASSET_CACHE"
MAX_ASSET_BYTES = 2 * 1024**3
"""Refuse to pack more than this (2 GiB): a build is a few MB, a library a few hundred KB."""


@dataclass(frozen=True)
class Asset:
    """A file or folder the workers need. `path` is the driver's; on Ray, `digest` names its packed content
    and `ref` holds the bytes in the object store (None for a local run: `path` is used as it is)."""

    path: str
    digest: str = ""
    ref: Any = field(default=None, compare=False)

    def local(self) -> Path:
        """Where this process reads it: the driver's path, or on a Ray node its copy in the node's cache."""
        if self.ref is None:
            return Path(self.path)
        return unpack(self.digest, Path(self.path).name, lambda: _get(self.ref))


def _get(ref: Any) -> bytes:
    import ray

    return bytes(ray.get(ref))


def pack(path: str | Path) -> tuple[str, bytes]:
    """(SHA-256 hex, tar bytes) of a file or folder; the same content always packs to the same bytes."""
    root = Path(path)
    if not root.exists():
        raise BadInputError("not found: a worker would need it", source=str(root))
    members = [root] if root.is_file() else [root, *sorted(root.rglob("*"))]
    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            if member.is_symlink() or not (member.is_file() or member.is_dir()):
                continue  # only regular files and folders travel
            name = root.name if member == root else f"{root.name}/{member.relative_to(root).as_posix()}"
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if member.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            data = member.read_bytes()
            total += len(data)
            if total > MAX_ASSET_BYTES:
                raise BadInputError(
                    f"more than {MAX_ASSET_BYTES} bytes to send to the workers", source=str(root)
                )
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    return hashlib.sha256(data).hexdigest(), data


def stamp(path: str | Path) -> tuple[tuple[str, int, int], ...]:
    """What a file or folder looks like without reading it: every file's name, size and modification time."""
    root = Path(path)
    members = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    out = []
    for member in members:
        st = member.stat()
        out.append(
            (member.relative_to(root).as_posix() if member != root else root.name, st.st_size, st.st_mtime_ns)
        )
    return tuple(out)


def node_dir() -> Path:
    """This machine's folder for a run's node-side files: on a Ray worker its node's session folder (Ray's own,
    gone with the cluster's temp dir), else a folder of the temp dir per user."""
    with contextlib.suppress(Exception):
        import ray

        if ray.is_initialized():
            return Path(ray._private.worker.global_worker.node.get_session_dir_path())  # type: ignore[attr-defined]
    return Path(tempfile.gettempdir()) / f"toolshift-{os.getuid()}"


def cache_root() -> Path:
    """This node's asset cache: `TOOLSHIFT_ASSET_CACHE`, else `toolshift-assets` in the node's session folder."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else node_dir() / "toolshift-assets"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def unpack(digest: str, name: str, fetch: Callable[[], bytes], root: Path | None = None) -> Path:
    """The node's copy of the asset `digest` (member `name`), fetched and unpacked by the first process
    that needs it; later calls, from any process of the node, find it in place."""
    base = (root or cache_root()) / digest
    target = base / name
    if target.exists():
        return target
    with _locked(base.with_name(digest + ".lock")):
        if target.exists():
            return target
        data = fetch()
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise ToolshiftError(
                f"asset {name}: received content with digest {got[:12]}, expected {digest[:12]}"
            )
        work = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=base.parent))
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
                tar.extractall(work, filter="data")
            shutil.rmtree(base, ignore_errors=True)
            work.rename(base)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        with open(base.parent / "fetched.log", "a") as log:
            log.write(f"{digest} {os.getpid()}\n")
    return target


__all__ = ["CACHE_ENV", "Asset", "cache_root", "node_dir", "pack", "stamp", "unpack"]
