"""Sentence vectors stored with a snapshot, so rerank, generate and hallucination_check look them up instead of
embedding sentences at query time (issue 15: a no-LLM ask spent ~1.6 s of ~2.1 s embedding sentences in rerank).

Layout: one array triple per segment, aligned with the segment's rows (its chunks.jsonl order), CSR-style so
rows can be selected (a segment's live rows, what a merge keeps) and concatenated without re-embedding:
    offsets  int64   [n_rows + 1]     row r's sentences are rows offsets[r]:offsets[r+1]
    spans    int32   [n_sentences, 2] (start, end) character offsets into the chunk's `text`, sorted
    vectors  float16 [n_sentences, dim] unit rows, the snapshot's embedder (kind "document")
stored as `segments/<sid>/sentences.npz` (numpy's uncompressed zip; relayrag.ingest.snapshot registers it as a
row file merges carry, and `load_snapshot` composes the segments' live rows into `IndexSnapshot.sentences`,
aligned with `snap.chunks`). Which spans are stored (`SPAN_RULES`, the version manifest's
"sentence_vectors"): the union of the sentence spans rerank and hallucination_check read (relayrag.text.
sentence_spans, first 80) and the English answer units generate reads (relayrag.text.answer_units, cjk=False).
A lookup is by exact span, so a span the rules did not store (an older snapshot, a changed splitter, CJK answer
units, a segment or candidate snapshot without the file) is embedded at query time: a lookup can be slower,
never different.

Ingestion reuses a changed file's unchanged chunks' sentence vectors by content hash (as chunk vectors), only
from a version built by the same embedder with the same SPAN_RULES.
"""

from __future__ import annotations

import io
from typing import Iterable, Sequence

import numpy as np

from relayrag.text import answer_units, sentence_spans

SPAN_RULES = "sentences80+units-v1"
MAX_INDEX_SENTENCES = 80  # per chunk (a 1,200-character chunk rarely has more; generate reads up to 80)

Span = tuple[int, int]


def index_spans(text: str) -> list[Span]:
    """The spans of `text` whose vectors a snapshot stores (sorted, distinct)."""
    return sorted(set(sentence_spans(text, MAX_INDEX_SENTENCES)) | set(answer_units(text, cjk=False)))


class SentenceVectors:
    """Per-chunk sentence vectors (see the module docstring for the arrays)."""

    def __init__(self, offsets: np.ndarray, spans: np.ndarray, vectors: np.ndarray):
        offsets = np.asarray(offsets, dtype=np.int64)
        spans = np.asarray(spans, dtype=np.int32).reshape(-1, 2)
        vectors = np.asarray(vectors, dtype=np.float16)
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
            raise ValueError("sentence offsets must start at 0 and never decrease")
        if int(offsets[-1]) != len(spans) or vectors.ndim != 2 or len(vectors) != len(spans):
            raise ValueError(f"sentence arrays disagree: offsets end at {int(offsets[-1])}, {len(spans)} spans, "
                             f"{len(vectors)} vectors")
        self.offsets, self.spans, self.vectors = offsets, spans, vectors

    @property
    def n_chunks(self) -> int:
        return len(self.offsets) - 1

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.spans)

    def chunk(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(spans int32 [k, 2], vectors float16 [k, dim]) of chunk `row`."""
        a, b = int(self.offsets[row]), int(self.offsets[row + 1])
        return self.spans[a:b], self.vectors[a:b]

    def lookup(self, row: int, spans: Sequence[Span]) -> list[np.ndarray | None]:
        """The stored float32 vector of each span of chunk `row`, None where that exact span is not stored."""
        if not 0 <= row < self.n_chunks:
            return [None] * len(spans)
        sp, vecs = self.chunk(row)
        at = {(int(s), int(e)): i for i, (s, e) in enumerate(sp)}
        out: list[np.ndarray | None] = []
        for s, e in spans:
            i = at.get((int(s), int(e)))
            out.append(None if i is None else vecs[i].astype(np.float32))
        return out

    @classmethod
    def from_parts(cls, parts: Iterable[tuple[np.ndarray, np.ndarray]], dim: int) -> "SentenceVectors":
        """Concatenate per-chunk (spans [k, 2], vectors [k, dim]) in row order."""
        parts = list(parts)
        counts = [len(sp) for sp, _ in parts]
        offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]) if parts else np.zeros(1, np.int64)
        spans = (np.concatenate([np.asarray(sp, np.int32).reshape(-1, 2) for sp, _ in parts])
                 if parts else np.zeros((0, 2), np.int32))
        vecs = (np.concatenate([np.asarray(v, np.float16).reshape(-1, dim) for _, v in parts])
                if parts else np.zeros((0, dim), np.float16))
        return cls(offsets, spans, vecs)

    def select(self, rows: Sequence[int] | np.ndarray) -> "SentenceVectors":
        """The sentence vectors of chunk `rows` (in that order) as their own array triple: a segment's live rows,
        or the rows a merge keeps."""
        return SentenceVectors.from_parts([self.chunk(int(r)) for r in rows], self.dim)

    @classmethod
    def concat(cls, parts: Sequence["SentenceVectors"], dim: int) -> "SentenceVectors":
        """Segments' sentence vectors one after the other (rows offset like the segments' chunks)."""
        return cls.from_parts([p.chunk(r) for p in parts for r in range(p.n_chunks)], dim)

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, offsets=self.offsets, spans=self.spans, vectors=self.vectors)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "SentenceVectors":
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return cls(z["offsets"], z["spans"], z["vectors"])

    def nbytes(self) -> int:
        return int(self.offsets.nbytes + self.spans.nbytes + self.vectors.nbytes)


def embed_chunk_sentences(embedder, texts: Sequence[str], batch: int = 1024, on_batch=None
                          ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(spans, float16 vectors) of `index_spans` for each text; identical sentence texts (chunk overlap) are
    embedded once. on_batch(done, total) is called after each embedding batch."""
    spans = [index_spans(t) for t in texts]
    unique: dict[str, int] = {}
    where: list[list[int]] = []
    for t, sp in zip(texts, spans):
        where.append([unique.setdefault(t[s:e], len(unique)) for s, e in sp])
    flat = list(unique)
    dim = int(embedder.dim)
    vecs = np.zeros((len(flat), dim), np.float16)
    for b in range(0, len(flat), batch):
        vecs[b:b + batch] = embedder.embed(flat[b:b + batch], kind="document")
        if on_batch:
            on_batch(min(len(flat), b + batch), len(flat))
    return [(np.asarray(sp, np.int32).reshape(-1, 2), vecs[idx] if idx else np.zeros((0, dim), np.float16))
            for sp, idx in zip(spans, where)]
