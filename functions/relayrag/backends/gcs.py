"""Google Cloud Storage blob store (extra `gcp`: google-cloud-storage).

`GCSBlobStore(bucket, *, client=None, prefix="")` implements `relayrag.backends.blobstore.BlobStore` over one
bucket: the key `snapshots/c/v1/chunks.jsonl` is the object `<prefix>/snapshots/c/v1/chunks.jsonl`
(`prefix` lets environments share a bucket; "" = the bucket root). Keys are '/'-separated; an empty key, a
`..` segment or a leading/trailing '/' is a ValueError, as for `LocalBlobStore`.

- `put_bytes(key, data)`: one upload; GCS finalizes an object atomically, so readers see the old or the new
  bytes, never a part.
- `get_bytes(key, generation=None) -> bytes`: the live object, or (generation given) exactly that
  generation (GCS answers 404 for a generation that is no longer live unless the bucket keeps versions).
  FileNotFoundError naming `gs://bucket/name` (and `#generation`) when it does not exist.
- `exists(key)`, `list(prefix) -> sorted keys` (relative to the store's prefix), `delete_prefix(prefix) ->
  objects deleted` (a key that is itself an object counts as a prefix of itself, like the local store).
- `local_path(key) -> None`: objects are remote; readers that need files download them
  (`relayrag.ingest.snapshot.load_snapshot` does).

Helpers for GCS-event ingestion (`ingest_object`), which gets (bucket, name, generation) from the event:
- `object_info(bucket, name, *, client=None) -> dict | None`: the live object's metadata
  `{bucket, name, generation: int, size: int, md5: str|None, content_type: str|None, updated: float|None}`,
  None if there is no live object.
- `download_object(bucket, name, *, generation=None, dest_dir=None, client=None) -> Path`: the object's
  bytes in a new temp file whose name ends with the object's base name (loaders pick the format by
  suffix); the caller deletes it (and `dest_dir`, if it made one). FileNotFoundError if the object (or that
  generation) does not exist.
- `storage_client(project=None)`: a `google.cloud.storage.Client`; with STORAGE_EMULATOR_HOST set the
  library talks to that emulator with anonymous credentials.

Tests run the real client against `gcp-storage-emulator` in-process (tests/unit/backends/test_gcs.py). That
emulator keeps only the live generation and ignores `generation=` on reads; real GCS does not.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from relayrag.errors import ConfigError

try:  # the `gcp` extra; the embedded default never imports this module
    from google.api_core import exceptions as gexc
    from google.cloud import storage  # type: ignore[attr-defined]
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError("the GCS blob store needs google-cloud-storage: pip install 'relayrag[gcp]'") from exc

__all__ = ["GCSBlobStore", "storage_client", "object_info", "download_object"]

_DELETE_BATCH = 100  # objects per batch delete request (GCS JSON batch limit is 100 calls)


def storage_client(project: str | None = None) -> "storage.Client":
    """A storage client from Application Default Credentials (or the emulator named by STORAGE_EMULATOR_HOST)."""
    if os.environ.get("STORAGE_EMULATOR_HOST"):
        return storage.Client(project=project or "relayrag-emulated")
    return storage.Client(project=project or None)


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not key or key != key.strip("/") or ".." in key.split("/") or "//" in key:
        raise ValueError(f"invalid blob key {key!r}: '/'-separated, no empty or '..' segments, "
                         "no leading or trailing '/'")
    return key


def _url(bucket: str, name: str, generation: int | None = None) -> str:
    return f"gs://{bucket}/{name}" + (f"#{generation}" if generation is not None else "")


class GCSBlobStore:
    """BlobStore over one GCS bucket (optionally under a name prefix); thread-safe like the client."""

    def __init__(self, bucket: str, *, client: Any = None, prefix: str = ""):
        if not bucket or "/" in bucket:
            raise ConfigError(f"invalid GCS bucket name {bucket!r} (set RELAYRAG_GCS_BUCKET to a bucket name, "
                              "without gs://)")
        self.bucket_name = bucket
        self.client = client if client is not None else storage_client()
        self._bucket = self.client.bucket(bucket)
        p = prefix.strip("/")
        if p:
            _check_key(p)
        self.prefix = p + "/" if p else ""

    def __repr__(self) -> str:
        return f"GCSBlobStore(gs://{self.bucket_name}/{self.prefix})"

    def _name(self, key: str) -> str:
        return self.prefix + _check_key(key)

    def url(self, key: str) -> str:
        """The gs:// URL of a key."""
        return _url(self.bucket_name, self._name(key))

    def put_bytes(self, key: str, data: bytes) -> None:
        self._bucket.blob(self._name(key)).upload_from_string(bytes(data), content_type="application/octet-stream")

    def get_bytes(self, key: str, generation: int | None = None) -> bytes:
        """The object's bytes (that generation's, if given). FileNotFoundError with the gs:// URL if missing."""
        name = self._name(key)
        try:
            return self._bucket.blob(name, generation=generation).download_as_bytes()
        except gexc.NotFound as exc:
            raise FileNotFoundError(f"blob not found: {_url(self.bucket_name, name, generation)}") from exc

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes [start, end) of the object (one ranged GET). FileNotFoundError with the gs:// URL if missing."""
        name = self._name(key)
        if end <= start:
            return b""
        try:
            return self._bucket.blob(name).download_as_bytes(start=start, end=end - 1)  # GCS's end is inclusive
        except gexc.NotFound as exc:
            raise FileNotFoundError(f"blob not found: {_url(self.bucket_name, name)}") from exc

    def sizes(self, prefix: str) -> dict[str, int]:
        """{key: bytes} of the objects under the folder `prefix`, from one listing."""
        p = prefix.strip("/")
        full = self.prefix + (p + "/" if p else "")
        return {b.name[len(self.prefix):]: int(b.size or 0) for b in self.client.list_blobs(self.bucket_name, prefix=full)}

    def exists(self, key: str) -> bool:
        return self._bucket.blob(self._name(key)).exists()

    def list(self, prefix: str, include_partial: bool = False) -> list[str]:
        """Keys under the folder `prefix` ('' = all), sorted, like `LocalBlobStore.list` (GCS has no partial
        objects: an upload is visible only once finalized, so `include_partial` changes nothing)."""
        p = prefix.strip("/")
        full = self.prefix + (p + "/" if p else "")
        return sorted(b.name[len(self.prefix):] for b in self.client.list_blobs(self.bucket_name, prefix=full))

    def delete_prefix(self, prefix: str) -> int:
        """Delete the object `prefix` and every object under `prefix/`. Returns how many were deleted."""
        p = _check_key(prefix.strip("/"))
        keys = self.list(p) + ([p] if self.exists(p) else [])
        for i in range(0, len(keys), _DELETE_BATCH):
            blobs = [self._bucket.blob(self.prefix + k) for k in keys[i:i + _DELETE_BATCH]]
            # on_error ignores objects another writer deleted meanwhile (delete is idempotent here)
            self._bucket.delete_blobs(blobs, on_error=lambda blob: None)
        return len(keys)

    def local_path(self, key: str) -> Path | None:
        """None: objects are remote (readers download what they need)."""
        return None


def object_info(bucket: str, name: str, *, client: Any = None) -> dict | None:
    """Metadata of the live object `gs://bucket/name`, or None if there is none.

    Returns {bucket, name, generation (int), size (bytes), md5 (base64 str or None), content_type, updated
    (unix seconds or None)}."""
    client = client if client is not None else storage_client()
    blob = client.bucket(bucket).get_blob(name)
    if blob is None:
        return None
    return {"bucket": bucket, "name": name, "generation": int(blob.generation), "size": int(blob.size or 0),
            "md5": blob.md5_hash, "content_type": blob.content_type,
            "updated": blob.updated.timestamp() if blob.updated else None}


def download_object(bucket: str, name: str, *, generation: int | None = None, dest_dir: Path | None = None,
                    client: Any = None) -> Path:
    """Download `gs://bucket/name` (exactly `generation` when given) to a new local file and return its path.

    The file is created in `dest_dir` (default: a new temp folder) and named `<random>-<base name>`, so its
    suffix is the object's. The caller removes it. FileNotFoundError (gs:// URL with #generation) if the
    object or that generation does not exist; the partial file is removed then."""
    if not name or name.endswith("/"):
        raise ValueError(f"not an object name: {name!r}")
    client = client if client is not None else storage_client()
    folder = Path(dest_dir) if dest_dir is not None else Path(tempfile.mkdtemp(prefix="relayrag-gcs-"))
    folder.mkdir(parents=True, exist_ok=True)
    base = name.rsplit("/", 1)[-1]
    fd, tmp = tempfile.mkstemp(dir=folder, suffix="-" + base)
    os.close(fd)
    try:
        client.bucket(bucket).blob(name, generation=generation).download_to_filename(tmp)
    except gexc.NotFound as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FileNotFoundError(f"object not found: {_url(bucket, name, generation)}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def gcs_blobstore(settings) -> GCSBlobStore:
    """The registry's `gcs` blob store: the bucket RELAYRAG_GCS_BUCKET in RELAYRAG_GCP_PROJECT."""
    if not settings.gcs_bucket:
        raise ConfigError("RELAYRAG_BLOBSTORE=gcs needs RELAYRAG_GCS_BUCKET (the bucket that holds index "
                          "snapshots, without gs://)")
    return GCSBlobStore(settings.gcs_bucket, client=storage_client(settings.gcp_project))
