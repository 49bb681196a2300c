"""Exact dense search: cosine = dot product of L2-normalised vectors, stored float16, scored float32."""

from __future__ import annotations

import numpy as np


class DenseIndex:
    """vectors: float16 [n_chunks, dim] (unit rows). scores(qvec) -> float32 [n_chunks], cosine."""

    def __init__(self, vectors: np.ndarray):
        self.vectors16 = np.ascontiguousarray(vectors, dtype=np.float16)
        self._vectors32 = self.vectors16.astype(np.float32)  # matmul in float32 (float16 matmul is slow on CPU)

    @property
    def n_docs(self) -> int:
        return self._vectors32.shape[0]

    def scores(self, qvec: np.ndarray) -> np.ndarray:
        if self.n_docs == 0:
            return np.zeros(0, dtype=np.float32)
        return self._vectors32 @ np.asarray(qvec, dtype=np.float32).reshape(-1)

    def scores_many(self, qvecs: np.ndarray) -> np.ndarray:
        """float32 [n_queries, n_chunks]."""
        return np.asarray(qvecs, dtype=np.float32) @ self._vectors32.T

    def rows(self, idx: np.ndarray | list[int]) -> np.ndarray:
        return self._vectors32[np.asarray(idx, dtype=np.int64)]
