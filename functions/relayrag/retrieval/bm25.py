"""BM25 over chunks (Lucene variant as bm25s computes it: k1 = 1.5, b = 0.75) with our tokenizer, over the
live rows of one or more immutable segments, with collection-wide statistics.

Why not one bm25s index per segment: bm25s bakes idf(t) and the average document length into the per-(doc,
term) scores it stores at index time, so scores of separately built indexes are not comparable and cannot be
corrected afterwards (the length normalisation is not separable). Each segment therefore stores its postings
(`TermStats`: term frequencies as a scipy CSC matrix [rows, terms] and the documents' token counts), and
`BM25Index` scores a query with N, df(t) and avgdl over the live rows of all its segments at query time:

    score(d, q) = Σ_{t in q} ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)) · tf / (tf + k1 · (1 - b + b · |d| / avgdl))

— exactly bm25s's lucene scores over one index of the same live rows (tests/unit/retrieval/test_bm25_segments.py
compares them), so the ranking across segments is the merged index's: no IDF drift, deleted rows count nowhere.

Querying reads the CSC arrays (data, indices, indptr) directly; scipy is imported only where postings are built
or rewritten (ingest, merges, `TermStats.tf`): importing scipy.sparse costs ~0.2 s of CPU, which every
`relayrag ask` process and every cold stage instance would otherwise pay.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from relayrag.retrieval.tokenize import tokenize

if TYPE_CHECKING:  # pragma: no cover
    from scipy import sparse

K1, B = 1.5, 0.75


class TermStats:
    """One segment's postings. tf: float32 CSC [n_rows, n_terms] (a scipy matrix, or its arrays ``data``,
    ``indices``, ``indptr``); doc_len: int32 [n_rows] (tokens per row); vocab: token -> column.

    Built from a scipy matrix (`from_tokens`, `select`, `concat`) or from stored arrays (`from_bytes`, without
    scipy); `tf` builds the scipy matrix of stored arrays on first use."""

    def __init__(self, vocab: dict[str, int], tf: "sparse.csc_matrix | None", doc_len: np.ndarray, *,
                 csc: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        if (tf is None) == (csc is None):
            raise ValueError("give either tf (a scipy CSC matrix) or csc (data, indices, indptr)")
        self.vocab = vocab
        self.doc_len = np.asarray(doc_len, dtype=np.int32)
        self._tf = tf
        if tf is not None:
            csc = (tf.data, tf.indices, tf.indptr)
        assert csc is not None
        self.data, self.indices, self.indptr = csc

    @property
    def tf(self) -> "sparse.csc_matrix":
        """The postings as a scipy CSC matrix [n_rows, n_terms] (imports scipy)."""
        if self._tf is None:
            from scipy import sparse
            self._tf = sparse.csc_matrix((self.data, self.indices, self.indptr),
                                         shape=(self.n_rows, len(self.vocab)))
        return self._tf

    @property
    def n_rows(self) -> int:
        return int(self.doc_len.shape[0])

    @classmethod
    def from_tokens(cls, token_lists: Iterable[Sequence[str]]) -> "TermStats":
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        data: list[int] = []
        lens: list[int] = []
        for r, toks in enumerate(token_lists):
            lens.append(len(toks))
            for t, n in Counter(toks).items():
                rows.append(r)
                cols.append(vocab.setdefault(t, len(vocab)))
                data.append(n)
        from scipy import sparse
        tf = sparse.csc_matrix((np.asarray(data, np.float32), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
                               shape=(len(lens), len(vocab)), dtype=np.float32)
        return cls(vocab, tf, np.asarray(lens, np.int32))

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> "TermStats":
        return cls.from_tokens(tokenize(t) for t in texts)

    def column(self, token: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(local rows int32, tf float32) of the rows containing `token`, or None."""
        j = self.vocab.get(token)
        if j is None:
            return None
        a, b = self.indptr[j], self.indptr[j + 1]
        return self.indices[a:b], self.data[a:b]

    def select(self, rows: np.ndarray) -> "TermStats":
        """The postings of `rows` only (in that order), vocabulary shrunk to the terms they contain."""
        from scipy import sparse
        sub = self.tf[np.asarray(rows, dtype=np.int64)]
        used = np.flatnonzero(sub.getnnz(axis=0))
        inv = {j: t for t, j in self.vocab.items()}
        return TermStats({inv[int(j)]: i for i, j in enumerate(used)}, sparse.csc_matrix(sub[:, used]),
                         self.doc_len[np.asarray(rows, dtype=np.int64)])

    @classmethod
    def concat(cls, parts: Sequence["TermStats"]) -> "TermStats":
        """Rows of `parts` stacked in order, over the union of their vocabularies (a merge: no re-tokenizing)."""
        vocab: dict[str, int] = {}
        mats = []
        for p in parts:
            remap = np.empty(len(p.vocab), dtype=np.int64)
            for t, j in p.vocab.items():
                remap[j] = vocab.setdefault(t, len(vocab))
            coo = p.tf.tocoo()
            mats.append((coo.row, remap[coo.col], coo.data, p.n_rows))
        from scipy import sparse
        offset, rows, cols, data = 0, [], [], []
        for r, c, d, n in mats:
            rows.append(r.astype(np.int64) + offset)
            cols.append(c)
            data.append(d)
            offset += n
        tf = sparse.csc_matrix((np.concatenate(data) if data else np.zeros(0, np.float32),
                                (np.concatenate(rows) if rows else np.zeros(0, np.int64),
                                 np.concatenate(cols) if cols else np.zeros(0, np.int64))),
                               shape=(offset, len(vocab)), dtype=np.float32)
        lens = np.concatenate([p.doc_len for p in parts]) if parts else np.zeros(0, np.int32)
        return cls(vocab, tf, lens)

    def to_bytes(self) -> bytes:
        """An .npz (no pickles): CSC arrays, doc lengths, the vocabulary as '\\n'-joined UTF-8 in column order
        (our tokens never contain whitespace)."""
        words = [""] * len(self.vocab)
        for t, j in self.vocab.items():
            words[j] = t
        buf = io.BytesIO()
        np.savez(buf, data=self.data.astype(np.float32), indices=self.indices.astype(np.int32),
                 indptr=self.indptr.astype(np.int64), doc_len=self.doc_len,
                 vocab=np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8))
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, raw: bytes) -> "TermStats":
        """What `to_bytes` wrote (no scipy needed). Raises ValueError when the arrays do not form a CSC matrix of
        the stored shape (indptr of n_terms + 1 non-decreasing offsets, a row index per stored value)."""
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            doc_len = z["doc_len"]
            words = bytes(z["vocab"]).decode("utf-8").split("\n") if z["vocab"].size else []
            data, indices, indptr = z["data"], z["indices"], z["indptr"]
        _check_csc(data, indices, indptr, int(doc_len.shape[0]), len(words))
        return cls({t: j for j, t in enumerate(words)}, None, doc_len, csc=(data, indices, indptr))


def _check_csc(data: np.ndarray, indices: np.ndarray, indptr: Any, n_rows: int, n_cols: int) -> None:
    """The checks scipy's csc_matrix makes of stored arrays (ValueError), so a torn or altered file is refused
    when it is read, as before, not when a query reads past its end."""
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        raise ValueError("BM25 postings: data, indices and indptr must be 1-D")
    if indptr.shape[0] != n_cols + 1:
        raise ValueError(f"BM25 postings: indptr has {indptr.shape[0]} entries for {n_cols} terms")
    if indices.shape[0] != data.shape[0] or (indptr.size and (indptr[0] != 0 or indptr[-1] != data.shape[0])):
        raise ValueError("BM25 postings: indptr does not span the stored values")
    if indptr.size > 1 and np.any(np.diff(indptr) < 0):
        raise ValueError("BM25 postings: indptr decreases")
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n_rows):
        raise ValueError(f"BM25 postings: a row index is outside 0..{n_rows - 1}")


@dataclass(frozen=True)
class CollectionStats:
    """Collection-wide BM25 statistics for an index that holds only some of a collection's rows (a run's
    candidates fetched from the distributed backend): N, avgdl and df of the tokens that matter (the run's
    query tokens). Tokens without a df here fall back to their df among the rows held. matches: {query: rows
    with a score > 0} for queries whose tokens' df cannot give it (`BM25Index.matching`)."""
    n: int
    avgdl: float
    df: dict[str, int]
    matches: dict[str, int] = field(default_factory=dict)


class BM25Index:
    """scores(query) -> float32 [n_docs] over the live rows of its segments, in order: global row = the
    segment's offset + the row's rank among that segment's live rows.

    parts: [(TermStats, live local rows (sorted int array) or None = all rows)]. stats: collection-wide
    statistics when the rows held are a subset of the collection (then n_total = stats.n)."""

    def __init__(self, parts: Sequence[tuple[TermStats, np.ndarray | None]], stats: CollectionStats | None = None):
        self._parts: list[tuple[TermStats, np.ndarray]] = []  # (stats, global row per local row or -1)
        offset, total_len = 0, 0
        for part, live in parts:
            if live is None:
                gmap = np.arange(offset, offset + part.n_rows, dtype=np.int64)
                total_len += int(part.doc_len.sum())
                offset += part.n_rows
            else:
                live = np.asarray(live, dtype=np.int64)
                gmap = np.full(part.n_rows, -1, dtype=np.int64)
                gmap[live] = np.arange(offset, offset + live.size)
                total_len += int(part.doc_len[live].sum())
                offset += int(live.size)
            self._parts.append((part, gmap))
        self.n_docs = offset
        self.avgdl = total_len / offset if offset else 0.0
        self.stats = stats
        if stats is not None:
            self.avgdl = stats.avgdl

    @property
    def n_total(self) -> int:
        """N of the BM25 formula: the collection's live rows (= n_docs unless built with `stats`)."""
        return self.stats.n if self.stats is not None else self.n_docs

    @classmethod
    def build(cls, texts: list[str]) -> "BM25Index":
        return cls([(TermStats.from_texts(texts), None)])

    def _postings(self, token: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """[(global rows, tf, doc lengths)] of the live rows containing `token`, per segment."""
        out = []
        for stats, gmap in self._parts:
            col = stats.column(token)
            if col is None:
                continue
            local, tf = col
            g = gmap[local]
            keep = g >= 0
            if keep.any():
                out.append((g[keep], tf[keep], stats.doc_len[local[keep]]))
        return out

    def df(self, token: str) -> int:
        """Live rows of the collection containing `token` (a token as `tokenize` produces it)."""
        if self.stats is not None and token in self.stats.df:
            return self.stats.df[token]
        return sum(int(g.size) for g, _, _ in self._postings(token))

    def token_scores(self, tokens: list[str]) -> np.ndarray:
        """Scores for tokens already produced by `tokenize` (not tokenized again: a stem such as "propos" would
        be stemmed a second time to another word). A token repeated in the query counts again (as in bm25s)."""
        if self.n_docs == 0:
            return np.zeros(0, dtype=np.float32)
        out = np.zeros(self.n_docs, dtype=np.float32)
        n, avgdl = self.n_total, self.avgdl
        for t in tokens:
            posts = self._postings(t)
            if not posts:
                continue
            df = self.df(t) if self.stats is not None else sum(int(g.size) for g, _, _ in posts)
            idf = np.float32(np.log(1 + (n - df + 0.5) / (df + 0.5)))
            for g, tf, dl in posts:
                out[g] += idf * (tf / (np.float32(K1) * (np.float32(1 - B) + np.float32(B) * dl / np.float32(avgdl))
                                       + tf))
        return out

    def matching(self, query: str) -> int:
        """Rows of the collection that score > 0 for `query` (recorded in `stats.matches` when the index holds
        only some rows)."""
        if self.stats is not None and query in self.stats.matches:
            return int(self.stats.matches[query])
        return int(np.count_nonzero(self.scores(query)))

    def scores(self, query: str) -> np.ndarray:
        if self.n_docs == 0:
            return np.zeros(0, dtype=np.float32)
        return self.token_scores(tokenize(query))
