"""Rank fusion. RRF per Cormack, Clarke & Büttcher (SIGIR 2009): score(d) = Σ_lists 1 / (k + rank_d), rank from 1."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first (int64 [min(k, n)])."""
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, n)
    idx = np.argpartition(-scores, k - 1)[:k]
    return idx[np.argsort(-scores[idx], kind="stable")]


H = TypeVar("H", bound=Hashable)  # a document / row id


def rrf_fuse(rankings: Sequence[Sequence[H]], k: int = 60, weights: Sequence[float] | None = None
             ) -> list[tuple[H, float]]:
    """Fuse ranked lists (best first) into [(id, rrf_score)] sorted by score desc; ties keep first-seen order.

    weights: optional per-list multipliers (default 1.0 each)."""
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("weights must have one entry per ranking")
    acc: dict[H, float] = {}
    for w, ranking in zip(weights, rankings):
        for rank, item in enumerate(ranking, start=1):
            acc[item] = acc.get(item, 0.0) + w / (k + rank)
    return sorted(acc.items(), key=lambda kv: -kv[1])
