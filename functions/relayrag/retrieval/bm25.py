"""BM25 over chunks with bm25s (Lucene variant, k1=1.5, b=0.75), our tokenizer, save/load to a folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from relayrag.retrieval.tokenize import tokenize

if TYPE_CHECKING:  # pragma: no cover - bm25s (and scipy) are imported on first build/load: stage cold start
    import bm25s


class BM25Index:
    """scores(query) -> float32 [n_chunks]; row i is chunk i of the snapshot."""

    def __init__(self, model: "bm25s.BM25 | None", n_docs: int):
        self._model = model
        self.n_docs = n_docs

    @classmethod
    def build(cls, texts: list[str]) -> "BM25Index":
        tokens = [tokenize(t) for t in texts]
        if not texts:
            return cls(None, 0)
        import bm25s
        model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        model.index(tokens, show_progress=False)
        return cls(model, len(texts))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "n_docs").write_text(str(self.n_docs))
        if self._model is not None:
            self._model.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path) -> "BM25Index":
        n = int((folder / "n_docs").read_text())
        if n == 0:
            return cls(None, 0)
        import bm25s
        return cls(bm25s.BM25.load(str(folder), mmap=False, show_progress=False), n)

    def scores(self, query: str) -> np.ndarray:
        if self._model is None:
            return np.zeros(0, dtype=np.float32)
        toks = tokenize(query)
        if not toks:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self._model.get_scores(toks), dtype=np.float32)

    def token_scores(self, tokens: list[str]) -> np.ndarray:
        """Scores for tokens already produced by `tokenize` (not tokenized again: a stem such as "propos"
        would be stemmed a second time to another word)."""
        if self._model is None:
            return np.zeros(0, dtype=np.float32)
        if not tokens:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self._model.get_scores(list(tokens)), dtype=np.float32)
