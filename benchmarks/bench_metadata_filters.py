"""What metadata filters cost inside retrieval: the row mask (built once per snapshot and filter, then cached)
and the three arms' rankings with and without a mask, measured in the same run on one synthetic snapshot.

The snapshot is built in memory: N chunks of random text from a small vocabulary, each document with a
department (4 values, uniform), a year (2015–2026) and a valid_until (every seventh in the past), random
unit vectors of 384 dimensions (the dense arm's cost does not depend on what the vectors mean). Queries are
random word triples. Prints one JSON object: n_chunks, mask build ms (first call) and cached ms, and per
arm the median ms of `arm_rankings` unfiltered / filtered (department=Legal) / default validity filter.
Usage: python benchmarks/bench_metadata_filters.py [--chunks 20000] [--queries 30]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import time

import numpy as np


class _Embedder:
    """Random query vectors (the dense arm's cost is one matrix-vector product whatever the vector)."""
    dim = 384

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def embed(self, texts, kind="query"):
        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def main() -> None:
    from relayrag.ingest.snapshot import IndexSnapshot, index_text
    from relayrag.metadata import parse_filters, row_mask
    from relayrag.retrieval.bm25 import BM25Index
    from relayrag.retrieval.dense import DenseIndex
    from relayrag.stages.retrieve import arm_rankings

    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=30)
    args = ap.parse_args()
    rng = random.Random(14)
    words = sorted({"".join(rng.choices("bcdfghklmnprstvz", k=3)) + rng.choice("aeiou") + "x" for _ in range(4000)})
    today = dt.date.today()
    chunks = []
    for i in range(args.chunks):
        until = today - dt.timedelta(days=5) if i % 7 == 3 else today + dt.timedelta(days=300)
        chunks.append({"chunk_id": f"c{i}", "doc": f"d{i}.txt", "source": f"/docs/d{i}.txt", "title": "", "page": 1,
                       "text": " ".join(rng.choices(words, k=60)),
                       "meta": {"department": rng.choice(["HR", "Finance", "IT", "Legal"]),
                                "year": rng.randint(2015, 2026), "valid_until": until.isoformat()}})
    vecs = np.random.default_rng(14).standard_normal((len(chunks), 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    schema = {"fields": {"department": {"type": "enum", "values": ["HR", "Finance", "IT", "Legal"]},
                         "year": {"type": "number"}}}
    snap = IndexSnapshot("bench", "v1", chunks, DenseIndex(vecs.astype(np.float16)),
                         BM25Index.build([index_text(c) for c in chunks]), {"schema": schema})
    from relayrag.metadata import CollectionSchema
    sch = CollectionSchema.model_validate(schema)
    legal = parse_filters(["department=Legal"], sch)
    t0 = time.perf_counter()
    mask = row_mask(snap, legal)
    build_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    row_mask(snap, legal)
    cached_ms = (time.perf_counter() - t0) * 1000
    default_mask = row_mask(snap, parse_filters([], sch))
    emb = _Embedder(14)
    queries = [" ".join(rng.choices(words, k=3)) for _ in range(args.queries)]
    arms = ["bm25", "dense", "hybrid"]
    times: dict[str, dict[str, list[float]]] = {a: {"unfiltered": [], "department=Legal": [], "default validity": []}
                                                for a in arms}
    for q in queries:
        qs = [{"text": q, "kind": "original", "weight": 1.0}]
        for label, m in (("unfiltered", None), ("department=Legal", mask), ("default validity", default_mask)):
            for arm in arms:
                t0 = time.perf_counter()
                arm_rankings(snap, emb, qs, [arm], mask=m)
                times[arm][label].append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"n_chunks": len(chunks), "mask_rows_passing": int(mask.sum()),
                      "mask_build_ms": round(build_ms, 1), "mask_cached_ms": round(cached_ms, 3),
                      "median_ms": {a: {k: round(statistics.median(v), 2) for k, v in t.items()}
                                    for a, t in times.items()}}, indent=1))


if __name__ == "__main__":
    main()
