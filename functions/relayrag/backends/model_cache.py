"""On-disk cache of what every process would otherwise rebuild from a model: onnxruntime's optimised graph and
small embedding tables (the classifier's prototypes). A `relayrag ask` is a fresh process, and so is a Cloud
Functions cold start; rebuilding these cost 0.5-1.5 s per process (benchmarks/bench_cold_start.py).

Where: ``RELAYRAG_MODEL_CACHE`` (a folder; ``off`` disables the cache), else ``$XDG_CACHE_HOME/relayrag/models``
(``~/.cache/relayrag/models``). A folder that cannot be written (a read-only image) means no cache, never an
error. Entries are keyed by what determines them (model sha256, onnxruntime version, options, input texts), so a
new model or runtime gets a new entry; each file is written to a temporary name and renamed (a concurrent
process sees a whole file or none) and carries its own sha256, checked when it is read (a torn or altered file
is rebuilt, not used).
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np


def cache_dir() -> Path | None:
    """The cache folder (created on demand), or None when the cache is off or cannot be created."""
    env = os.environ.get("RELAYRAG_MODEL_CACHE", "").strip()
    if env.lower() in ("off", "0", "none", "false"):
        return None
    if env:
        root = Path(env).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "relayrag" / "models"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return root if os.access(root, os.W_OK) else None


def key(*parts: object) -> str:
    """A 24-hex-digit key of `parts` (their reprs, in order)."""
    return hashlib.sha256("\x1f".join(repr(p) for p in parts).encode()).hexdigest()[:24]


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def read_verified(path: Path) -> bytes | None:
    """The file's bytes when it exists and matches its recorded sha256 and size; None otherwise (absent,
    torn, altered)."""
    try:
        data = path.read_bytes()
        want = _sidecar(path).read_text().split()
    except OSError:
        return None
    return data if want[:1] == [hashlib.sha256(data).hexdigest()] else None


def intact_path(path: Path) -> Path | None:
    """`path` when it exists with the size its sidecar records (a large file that the reader loads itself, such
    as an ONNX graph: its sha256 was taken when it was written, and files only appear by rename); else None."""
    try:
        want = _sidecar(path).read_text().split()
        size = path.stat().st_size
    except OSError:
        return None
    return path if len(want) == 2 and want[1] == str(size) else None


def write_atomic(path: Path, data: bytes) -> bool:
    """Write `data` and its sidecar ("sha256 size") under temporary names, then rename them into place (the
    sidecar last, so a file is only ever seen complete); False (nothing left behind) on OSError."""
    tmp_names = []
    sidecar = f"{hashlib.sha256(data).hexdigest()} {len(data)}".encode()
    try:
        for target, payload in ((path, data), (_sidecar(path), sidecar)):
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=target.suffix)
            tmp_names.append(tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            os.replace(tmp, target)
        return True
    except OSError:
        for tmp in tmp_names:
            Path(tmp).unlink(missing_ok=True)
        return False


def move_atomic(src: Path, path: Path) -> bool:
    """Move the file `src` (in the cache folder, so a rename) to `path` and then write its sidecar ("sha256
    size"): for a large file that is not read into memory (the ONNX graph's weights). False (`src` removed) on
    OSError."""
    try:
        digest = hashlib.sha256()
        with open(src, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        size = src.stat().st_size
        os.replace(src, path)
    except OSError:
        Path(src).unlink(missing_ok=True)
        return False
    sidecar = f"{digest.hexdigest()} {size}".encode()
    fd = tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".sha256")
        with os.fdopen(fd, "wb") as f:
            f.write(sidecar)
        os.replace(tmp, _sidecar(path))
        return True
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return False


def cached_array(name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """`compute()`'s array, stored as ``name``.npy in the cache and read from there in later processes."""
    root = cache_dir()
    path = root / f"{name}.npy" if root is not None else None
    if path is not None:
        data = read_verified(path)
        if data is not None:
            try:
                return np.load(io.BytesIO(data), allow_pickle=False)
            except ValueError:
                pass
    arr = np.asarray(compute())
    if path is not None:
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        write_atomic(path, buf.getvalue())
    return arr
