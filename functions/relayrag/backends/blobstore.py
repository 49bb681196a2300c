"""Blob store: GCS in the cloud, a local folder embedded. Keys are '/'-separated, like GCS object names."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class BlobStore(Protocol):
    def put_bytes(self, key: str, data: bytes) -> None: ...
    def get_bytes(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def list(self, prefix: str, include_partial: bool = False) -> list[str]: ...
    def delete_prefix(self, prefix: str) -> int: ...
    def local_path(self, key: str) -> Path | None: ...


class LocalBlobStore:
    """Objects as files under `root`. Writes are atomic (temp file + rename), like a GCS finalize."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        key = key.strip("/")
        if not key or ".." in key.split("/"):
            raise ValueError(f"invalid blob key {key!r}")
        return self.root / key

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_bytes(self, key: str) -> bytes:
        path = self._path(key)
        if not path.is_file():
            raise FileNotFoundError(f"blob not found: {key}")
        return path.read_bytes()

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of a blob (fewer at its end). FileNotFoundError if missing."""
        path = self._path(key)
        if not path.is_file():
            raise FileNotFoundError(f"blob not found: {key}")
        with path.open("rb") as fh:
            fh.seek(start)
            return fh.read(max(0, end - start))

    def sizes(self, prefix: str) -> dict[str, int]:
        """{key: bytes} of the blobs under the folder `prefix` (no partial writes)."""
        return {k: self._path(k).stat().st_size for k in self.list(prefix) if self._path(k).is_file()}

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str, include_partial: bool = False) -> list[str]:
        """Keys under the folder `prefix`, sorted. Temp files of writes in progress (or of writers that died
        mid-write: `.tmp-*`) are left out unless `include_partial` (garbage collection must see them, or a
        folder holding only such a file is never removed)."""
        base = self.root / prefix.strip("/") if prefix.strip("/") else self.root
        out: list[str] = []
        # os.walk skips folders that vanish mid-walk (another writer's delete_prefix), as a GCS list would
        for dirpath, _dirs, files in os.walk(base):
            rel = Path(dirpath).relative_to(self.root)
            out.extend(str(rel / f).replace(os.sep, "/") for f in files
                       if include_partial or not f.startswith(".tmp-"))
        return sorted(out)

    def delete_prefix(self, prefix: str) -> int:
        base = self._path(prefix)
        if base.is_file():
            base.unlink()
            return 1
        if not base.exists():
            return 0
        n = sum(len(files) for _d, _s, files in os.walk(base))
        shutil.rmtree(base, ignore_errors=True)  # a concurrent delete of the same prefix is not an error
        return n

    def local_path(self, key: str) -> Path | None:
        """A filesystem path for readers that need one (bm25s.load); None for remote stores."""
        return self._path(key)


def local_blobstore(settings) -> LocalBlobStore:
    """The registry's `local` blob store: RELAYRAG_HOME/blobs."""
    return LocalBlobStore(settings.home / "blobs")
