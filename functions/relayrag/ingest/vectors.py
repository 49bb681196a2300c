"""The vectors of an ingest: chunk embeddings reused by content hash (`_embed`), the embedder a collection's
ingest uses (`_ingest_embedder`, `_snapshot_embedder`) and sentence vectors reused from the current version
(`_old_sentences`, `_sentence_vectors`). Used by relayrag.ingest.pipeline."""

from __future__ import annotations

from typing import Protocol

import json
import logging
from typing import Any
from collections.abc import Callable

import numpy as np

from relayrag import jsonl
from relayrag.context import StageContext
from relayrag.ingest.snapshot import (SegmentRef, prefix, read_segment_sentences, segment_prefix)
from relayrag.ingest.discover import _progress, embed_text
from relayrag.retrieval.sentences import SentenceVectors, embed_chunk_sentences


class SentenceCount(Protocol):
    """What `_sentence_vectors` reports into (relayrag.ingest.pipeline.IngestSummary)."""

    sentences_embedded: int

log = logging.getLogger(__name__)


def _embed(ctx: StageContext, chunks: list[dict], reuse: dict[str, np.ndarray], progress: bool,
           on_progress, total_units: float, remove_paths) -> np.ndarray:
    """float16 [len(chunks), dim]: the vector of an identical chunk from `reuse` (by content hash), else embedded
    in batches of 256."""
    vectors: list[np.ndarray | None] = [reuse.get(c["content_hash"]) for c in chunks]
    todo = [i for i, v in enumerate(vectors) if v is None]
    if todo:
        emb = ctx.embedder
        with _progress(progress and len(todo) > 64) as bar:
            task = bar.add_task("embedding chunks", total=len(todo)) if bar else None
            step = 256
            for b in range(0, len(todo), step):
                idx = todo[b:b + step]
                out = emb.embed([embed_text(chunks[i]) for i in idx], kind="document")
                for i, v in zip(idx, out):
                    vectors[i] = v
                if bar:
                    bar.advance(task, len(idx))
                if on_progress and remove_paths is None:
                    done = min(len(todo), b + step)
                    on_progress(total_units - 1 + done / len(todo) * 0.9, total_units,
                                f"embedded {done}/{len(todo)} chunks")
    if not vectors:
        dim = getattr(ctx.embedder, "dim", 384) if todo else 384
        return np.zeros((0, dim), np.float16)
    filled = [v for v in vectors if v is not None]
    assert len(filled) == len(vectors), "a chunk was left without a vector"
    return np.stack(filled).astype(np.float16)


def _ingest_embedder(ctx: StageContext, collection: str, current: str | None, embedder: Any):
    """The embedder this ingest uses (see `ingest`)."""
    from relayrag.backends.embedder import MODEL_IDS, get_embedder
    threads = ctx.settings.embed_threads
    if isinstance(embedder, str):
        return get_embedder(embedder, threads=threads)
    if embedder is not None:
        return embedder
    built_with = _snapshot_embedder(ctx.blobstore, collection, current) if current else None
    if built_with and built_with != getattr(ctx.embedder, "model_id", "unknown") and built_with in MODEL_IDS:
        return get_embedder(MODEL_IDS[built_with], threads=threads)
    return ctx.embedder


def _sentence_rules(store, collection: str, version: str | None) -> str | None:
    """The SPAN_RULES a version's stored sentence vectors follow (None: it stores none)."""
    if not version:
        return None
    try:
        manifest = json.loads(store.get_bytes(prefix(collection, version) + "manifest.json"))
    except (OSError, ValueError):
        return None
    return (manifest.get("sentence_vectors") or {}).get("spans")


def _old_sentences(store, collection: str, located: dict[str, tuple[SegmentRef, list[int]]]
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{content hash: (spans, vectors)} of the stored sentence vectors of the rows this ingest replaces (a
    changed file keeps its unchanged chunks' sentence vectors). Empty when the current version's rules are not
    today's; a segment whose file cannot be read contributes nothing (its chunks' sentences embed again)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    by_segment: dict[str, list[list[int]]] = {}
    ids = {}
    for ref, span in located.values():
        by_segment.setdefault(ref.id, []).append(span)
        ids[ref.id] = ref
    for sid, spans in by_segment.items():
        try:
            sv = read_segment_sentences(store, collection, sid)
            if sv is None:
                continue
            chunks = jsonl.loads(store.get_bytes(segment_prefix(collection, sid) + "chunks.jsonl"))
        except (OSError, ValueError, KeyError, EOFError) as exc:
            log.warning("%s: sentence vectors of segment %s not reused (%s: %s)", collection, sid,
                        type(exc).__name__, exc)
            continue
        if sv.n_chunks != len(chunks):
            continue
        for row0, row1, *_ in spans:
            for r in range(row0, row1):
                out.setdefault(chunks[r]["content_hash"], sv.chunk(r))
    return out


def _sentence_vectors(ctx: StageContext, chunks: list[dict], reuse: dict[str, tuple[np.ndarray, np.ndarray]],
                      summary: SentenceCount, *, progress: bool,
                      on_progress: Callable[[float, float, str], None] | None, total_units: float) -> SentenceVectors:
    """Per-chunk sentence vectors for `chunks`: a chunk whose content hash is in `reuse` (stored ones of a row
    this ingest replaces) keeps them; the others' sentences are embedded (each distinct sentence text once)."""
    dim = int(ctx.embedder.dim)
    parts: list[tuple[np.ndarray, np.ndarray] | None] = []
    todo: list[int] = []
    for i, c in enumerate(chunks):
        part = reuse.get(c["content_hash"])
        if part is not None and part[1].shape[1:] == (dim,):
            parts.append(part)
        else:
            parts.append(None)
            todo.append(i)
    if todo:
        with _progress(progress and len(todo) > 64) as bar:
            task = bar.add_task("embedding sentences", total=1.0) if bar else None

            def step(done: int, total: int) -> None:
                if bar:
                    bar.update(task, completed=done / max(1, total))
                if on_progress:
                    on_progress(total_units - 0.1 + 0.09 * done / max(1, total), total_units,
                                f"embedded {done}/{total} sentences")

            fresh = embed_chunk_sentences(ctx.embedder, [chunks[i]["text"] for i in todo], on_batch=step)
        for i, part in zip(todo, fresh):
            parts[i] = part
    summary.sentences_embedded = sum(len(p[0]) for p in (parts[i] for i in todo) if p is not None)
    return SentenceVectors.from_parts([p for p in parts if p is not None], dim)


def _snapshot_embedder(store, collection: str, version: str) -> str | None:
    """The `embedder` a snapshot's manifest names (None if it names none)."""
    try:
        return json.loads(store.get_bytes(prefix(collection, version) + "manifest.json")).get("embedder")
    except (OSError, ValueError):
        return None
