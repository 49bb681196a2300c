"""GCS-triggered ingestion: one Cloud Storage CloudEvent in, one source ingested or removed.

Object `gs://BUCKET/<collection>/<path...>` is the source key `gs://BUCKET/<collection>/<path...>` of
collection `<collection>` (the first segment of the object name). The entry point `ingest_object`
(relayrag.ingest.cloud_function; relayrag.entrypoints re-exports it for functions/main.py) hands every event to
`handle_event`.

How each case is answered. Eventarc retries an event whose function fails (HTTP 5xx) and drops it after
a 2xx; so everything a retry cannot fix returns normally, and only errors a retry may fix raise:

| event | condition | outcome | raises? |
|---|---|---|---|
| finalized | content loaded and committed (new source, or new content) | `ingested` | no |
| finalized | same bytes as the record (e.g. a re-upload): only the record's generation moves | `unchanged` | no |
| finalized | same bytes, other custom metadata: chunks' metadata re-written, nothing re-embedded | `metadata_updated` | no |
| finalized | custom metadata that does not fit the collection's schema (unknown field, bad value...) | `dead_letter` | no |
| finalized | the record already holds this generation or a newer one (redelivery, late event) | `duplicate` | no |
| finalized | this generation no longer exists in the bucket (overwritten or deleted since) | `stale` | no |
| finalized | poison object: empty, unsupported type, corrupt/encrypted/textless file | `dead_letter` | no |
| finalized | a dead letter for this generation already exists (redelivery of a poison object) | `dead_letter_duplicate` | no |
| finalized / deleted | object name has no valid collection segment | `dead_letter` (collection `_unroutable`) / `ignored` | no |
| finalized / deleted | folder placeholder (name ends with `/`), or another event type | `ignored` | no |
| deleted | the record's generation is this one or older: chunks, vectors, record removed | `removed` | no |
| deleted | the record holds a newer generation (GCS deletes the overwritten generation) | `stale` | no |
| deleted | no record under that key | `absent` | no |
| any | blob store / docstore / bucket unreachable, compare-and-set lost 8 rounds, Pub/Sub publish failed | — | yes (retried) |

Idempotence: the generation is stored in the ingestion record and in the dead letter, and every decision
compares with it; the comparison that gates a commit runs inside each compare-and-set attempt (see
`relayrag.ingest.pipeline.ingest_source`), so concurrent and out-of-order events for one object converge
on the newest generation, and concurrent events for different objects of one collection lose no update.

Document metadata comes from the object's custom metadata (`x-goog-meta-<field>`, in the event as
`data.metadata`), one string per field, parsed by the collection schema's types (lists: a JSON array or
comma-separated; booleans: true/false) and validated like a manifest line (relayrag.metadata). Metadata
travels with the generation it describes, so one event carries both (a manifest object would be a second
object whose events can arrive in any order relative to the documents'). Changing metadata = uploading the
object again with the new metadata: same bytes, so only the chunks' metadata is re-written.

Poison objects: the dead letter `{error, kind, generation, event, published, recorded_at}` is recorded in
the docstore first, then published once to RELAYRAG_DEAD_LETTER_TOPIC (when set); `published` is set
afterwards, so a failed publish is retried by the redelivery and a redelivery after a successful publish
publishes nothing. A later successful ingest of the same source clears its dead letter.
"""

from __future__ import annotations

import json
import tempfile
import time
import threading
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from relayrag.context import StageContext, default_context
from relayrag.errors import RelayragError
from relayrag.ingest import loaders
from relayrag.ingest.pipeline import Source, ingest_source, remove_source
from relayrag.metadata import MetadataError, normalise
from relayrag.naming import validate_collection

FINALIZED = "google.cloud.storage.object.v1.finalized"
DELETED = "google.cloud.storage.object.v1.deleted"
UNROUTABLE = "_unroutable"
"""Docstore collection that holds dead letters of objects outside any valid collection (the name cannot
clash with a real collection: collection names start with a letter or digit)."""


class ObjectGone(Exception):
    """The requested generation of the object does not exist (any more): overwritten or deleted."""


class Fetcher(Protocol):
    def __call__(self, bucket: str, name: str, generation: int, dest: Path) -> None:
        """Write exactly that generation of gs://bucket/name to `dest`; raise ObjectGone if it does not
        exist; any other exception is treated as transient."""


class Publisher(Protocol):
    """The part of google.cloud.pubsub_v1.PublisherClient used here."""
    def publish(self, topic: str, data: bytes, **attrs: str) -> Any: ...  # returns a future with .result()


# -- process-wide collaborators (the entry point uses these; tests replace them) -------------------------
_fetcher: Fetcher | None = None
_publisher: Publisher | None = None
_lock = threading.Lock()


def set_fetcher(fetcher: Fetcher | None) -> None:
    """Replace how objects are fetched (None = Cloud Storage through google-cloud-storage)."""
    global _fetcher
    with _lock:
        _fetcher = fetcher


def set_publisher(publisher: Publisher | None) -> None:
    """Replace the dead-letter publisher (None = a google-cloud-pubsub PublisherClient, built when first
    needed and only if RELAYRAG_DEAD_LETTER_TOPIC is set)."""
    global _publisher
    with _lock:
        _publisher = publisher


def gcs_fetcher(bucket: str, name: str, generation: int, dest: Path) -> None:
    """Download exactly that generation of a Cloud Storage object to `dest` (relayrag.backends.gcs;
    honours STORAGE_EMULATOR_HOST). Raises ObjectGone when GCS answers 404 for it, ConfigError without the
    `gcp` extra."""
    import os

    from relayrag.backends.gcs import download_object, storage_client
    from relayrag.settings import load_settings
    global _storage
    with _lock:
        if _storage is None:
            _storage = storage_client(load_settings().gcp_project or None)
    try:
        got = download_object(bucket, name, generation=generation, dest_dir=Path(dest).parent, client=_storage)
    except FileNotFoundError as exc:
        raise ObjectGone(str(exc)) from exc
    os.replace(got, dest)  # the object's own base name: it becomes the document name


_storage = None


def _current_fetcher() -> Fetcher:
    with _lock:
        return _fetcher or gcs_fetcher


def _current_publisher() -> Publisher:
    global _publisher
    with _lock:
        if _publisher is None:
            try:
                from google.cloud import pubsub_v1  # type: ignore[attr-defined]
            except ImportError as exc:
                from relayrag.errors import ConfigError
                raise ConfigError("RELAYRAG_DEAD_LETTER_TOPIC is set but google-cloud-pubsub is not installed: "
                                  "pip install 'relayrag[gcp]'") from exc
            _publisher = pubsub_v1.PublisherClient()
        return _publisher


# -- parsing -------------------------------------------------------------------------------------------

def _generation(value: Any) -> int:
    """GCS generations are int64, sent as decimal strings in CloudEvents; missing = 0."""
    if value in (None, ""):
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _event_view(event: Any) -> tuple[dict, dict]:
    """(attributes, data) of a cloudevents CloudEvent, or of a plain {"type":..., "data": {...}} mapping."""
    if hasattr(event, "get_attributes"):
        attrs = dict(event.get_attributes())
        data = event.get_data() if hasattr(event, "get_data") else getattr(event, "data", None)
    elif isinstance(event, Mapping):
        attrs = {k: v for k, v in event.items() if k != "data"}
        data = event.get("data")
    else:
        raise TypeError(f"expected a CloudEvent or a mapping, got {type(event).__name__}")
    if isinstance(data, (bytes, str)):
        try:
            data = json.loads(data)
        except ValueError:
            data = None
    attrs = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in attrs.items()}
    return attrs, data if isinstance(data, dict) else {}


def split_object_name(name: str) -> tuple[str, str]:
    """`<collection>/<path...>` → (collection, path). Raises RelayragError saying why the name is invalid."""
    head, sep, rest = name.partition("/")
    if not sep or not rest:
        raise RelayragError(f"object {name!r} is not under a collection folder: upload to <collection>/<file>")
    validate_collection(head)
    return head, rest


# -- handling -------------------------------------------------------------------------------------------

def handle_event(event: Any, *, ctx: StageContext | None = None, fetcher: Fetcher | None = None,
                 publisher: Publisher | None = None) -> dict:
    """Handle one Cloud Storage CloudEvent (see the module docstring for every case).

    `event`: a cloudevents CloudEvent (or a mapping with the CloudEvent attributes and `data`: bucket,
    name, generation, size, contentType, ...). Returns the outcome
    `{outcome, type, id, bucket, object, collection, source, generation, detail}`; raises only for errors a
    retry may fix (backends unreachable, ConflictError after retries, a failed publish)."""
    ctx = ctx or default_context()
    attrs, data = _event_view(event)
    etype = attrs.get("type", "")
    bucket, name = data.get("bucket") or "", data.get("name") or ""
    generation = _generation(data.get("generation"))
    out = {"outcome": "", "type": etype, "id": attrs.get("id"), "bucket": bucket, "object": name,
           "collection": None, "source": f"gs://{bucket}/{name}" if bucket and name else None,
           "generation": str(generation) if generation else None, "detail": ""}

    def done(outcome: str, detail: str = "", **extra) -> dict:
        out.update(outcome=outcome, detail=detail, **extra)
        return out

    if etype not in (FINALIZED, DELETED):
        return done("ignored", f"event type {etype!r} is not handled (only {FINALIZED} and {DELETED})")
    if not bucket or not name:
        if etype == DELETED:
            return done("ignored", "event data has no bucket/name")
        return _dead_letter(ctx, publisher, out, attrs, data, UNROUTABLE, f"event:{attrs.get('id')}",
                            "malformed_event", "event data has no bucket/name")
    if name.endswith("/"):
        return done("ignored", "folder placeholder object")
    key = f"gs://{bucket}/{name}"
    try:
        collection, _ = split_object_name(name)
    except RelayragError as exc:
        if etype == DELETED:
            return done("ignored", f"nothing was ingested from it: {exc}")
        return _dead_letter(ctx, publisher, out, attrs, data, UNROUTABLE, key, "invalid_collection", str(exc))
    out["collection"] = collection
    docs = ctx.docstore

    if etype == DELETED:
        summary = remove_source(ctx, collection, key,
                                only_if=lambda rec: _generation(rec.get("generation")) <= generation)
        if summary.deleted:
            return done("removed", f"collection version {summary.version}", version=summary.version)
        rec = docs.get_file(collection, key)
        if rec is None:
            return done("absent", "no ingestion record under this key")
        return done("stale", f"the record holds generation {rec.get('generation')}, newer than the deleted one")

    # finalized
    rec = docs.get_file(collection, key)
    if rec is not None and _generation(rec.get("generation")) >= generation:
        return done("duplicate", f"the record already holds generation {rec.get('generation')}")
    dl = docs.get_dead_letter(collection, key)
    if dl is not None and _generation(dl.get("generation")) >= generation:
        if _generation(dl.get("generation")) > generation:
            return done("stale", f"a newer generation {dl.get('generation')} is already dead-lettered")
        _publish_if_needed(ctx, publisher, collection, key, dl)
        return done("dead_letter_duplicate", f"already dead-lettered: {dl.get('error')}")
    if str(data.get("size", "")).strip() == "0":
        return _dead_letter(ctx, publisher, out, attrs, data, collection, key, "empty", "empty object (0 bytes)")
    basename = PurePosixPath(name).name
    suffix = PurePosixPath(basename).suffix.lower()
    if suffix not in loaders.SUPPORTED_SUFFIXES and suffix != ".jsonl":
        return _dead_letter(ctx, publisher, out, attrs, data, collection, key, "unsupported",
                            f"unsupported file type {suffix or '(none)'!r}; supported: "
                            f"{', '.join(sorted(loaders.SUPPORTED_SUFFIXES))}, BEIR corpus .jsonl")
    # document metadata: the object's custom metadata (x-goog-meta-*; the event carries it as data.metadata),
    # validated against the collection's schema like a manifest line; invalid metadata is a poison object
    custom = data.get("metadata") or {}
    schema = ctx.schemas.get(collection)
    metadata = None
    if custom or schema is not None:
        try:
            metadata = normalise(dict(custom), schema, from_text=True)
        except MetadataError as exc:
            return _dead_letter(ctx, publisher, out, attrs, data, collection, key, "metadata",
                                f"invalid object metadata: {exc}")
    fetch = fetcher or _current_fetcher()
    with tempfile.TemporaryDirectory(prefix="relayrag-object-") as tmp:
        local = Path(tmp) / basename
        try:
            fetch(bucket, name, generation, local)
        except ObjectGone as exc:
            return done("stale", f"{exc}: a later event covers what replaced it")
        fields = {"generation": str(generation), "bucket": bucket, "object": name,
                  "content_type": data.get("contentType"), "md5": data.get("md5Hash")}
        summary = ingest_source(ctx, Source(local, key, fields, metadata), collection,
                                only_if=lambda r: r is None or _generation(r.get("generation")) < generation)
    if summary.not_applied:
        return done("duplicate", "a concurrent event committed this generation or a newer one first")
    if summary.failed:
        kind = "unsupported" if "unsupported file type" in summary.failed[0]["error"] else "unreadable"
        return _dead_letter(ctx, publisher, out, attrs, data, collection, key, kind, summary.failed[0]["error"])
    if summary.metadata_updated:
        return done("metadata_updated", f"same content, new metadata: {summary.chunks_total} chunks re-written "
                                         f"in version {summary.version}, none embedded", version=summary.version)
    if summary.ingested:
        return done("ingested", f"{summary.chunks_total} chunks in version {summary.version}; "
                                f"{summary.chunks_embedded} embedded", version=summary.version,
                    warnings=[w["warning"] for w in summary.warnings])
    return done("unchanged", "same content as the record; its generation was updated", version=summary.version)


def _dead_letter(ctx: StageContext, publisher: Publisher | None, out: dict, attrs: dict, data: dict,
                 collection: str, key: str, kind: str, reason: str) -> dict:
    """Record (then publish) a dead letter for a poison event and answer success: a retry cannot fix it."""
    entry = {"error": reason, "kind": kind, "generation": out["generation"], "collection": collection,
             "event": {"id": attrs.get("id"), "type": attrs.get("type"), "source": attrs.get("source"),
                       "subject": attrs.get("subject"), "time": attrs.get("time"), "data": data},
             "published": False, "recorded_at": time.time()}
    ctx.docstore.record_dead_letter(collection, key, entry)
    _publish_if_needed(ctx, publisher, collection, key, {**entry, "path": key})
    out.update(outcome="dead_letter", detail=reason, kind=kind)
    return out


PUBLISH_TIMEOUT_S = 30.0


def _publish_if_needed(ctx: StageContext, publisher: Publisher | None, collection: str, key: str,
                       entry: dict) -> bool:
    """Publish a recorded dead letter once to RELAYRAG_DEAD_LETTER_TOPIC (if set), then mark it published.
    Returns True if it published now. A publish error propagates (the event is retried)."""
    topic = ctx.settings.dead_letter_topic
    if not topic or entry.get("published"):
        return False
    pub = publisher or _current_publisher()
    message = {k: entry.get(k) for k in ("path", "error", "kind", "generation", "collection", "event",
                                         "recorded_at")}
    future = pub.publish(topic, json.dumps(message, ensure_ascii=False, default=str).encode("utf-8"),
                         collection=collection, source=key, kind=str(entry.get("kind") or ""))
    result = getattr(future, "result", None)
    if callable(result):
        result(timeout=PUBLISH_TIMEOUT_S)
    ctx.docstore.record_dead_letter(collection, key, {**entry, "published": True, "topic": topic})
    return True


def log_outcome(outcome: dict, emit: Callable[[str], None] | None = None) -> None:
    """One structured log line (Cloud Logging reads `severity` and `message` from JSON on stdout)."""
    severity = "WARNING" if outcome.get("outcome") in ("dead_letter", "dead_letter_duplicate") else "INFO"
    line = json.dumps({"severity": severity, "message": f"ingest_object {outcome.get('outcome')}: "
                       f"{outcome.get('source') or outcome.get('object')} ({outcome.get('detail')})",
                       "relayrag": outcome}, ensure_ascii=False, default=str)
    (emit or (lambda s: print(s, flush=True)))(line)
