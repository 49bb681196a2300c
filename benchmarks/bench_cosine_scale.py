"""Cosine scales of the embedders, for `relayrag.backends.embedder.COSINE_MAP` (no labels needed).

Related pair = a SciFact document's title (as a query) and its own abstract (as a document); unrelated pair = the
title and the abstract of the document after it in the file. The map from an embedder's cosine onto MiniLM's is
the affine map that sends its mean unrelated and mean related cosine onto MiniLM's (two points, two unknowns).

Usage: python benchmarks/bench_cosine_scale.py [--data ../shared/bench/scifact] [--n 200] [--embedders e5-small]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def scale(emb, titles: list[str], texts: list[str]) -> dict:
    q = emb.embed(titles, kind="query")
    d = emb.embed(texts, kind="document")
    related = np.sum(q * d, axis=1)
    unrelated = np.sum(q * np.roll(d, -1, axis=0), axis=1)
    return {"related_mean": round(float(related.mean()), 4), "unrelated_mean": round(float(unrelated.mean()), 4),
            "related_p10": round(float(np.percentile(related, 10)), 4),
            "unrelated_p90": round(float(np.percentile(unrelated, 90)), 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "scifact")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--embedders", default="e5-small")
    a = ap.parse_args()
    from relayrag.backends.embedder import get_embedder
    docs = []
    with (a.data / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if d.get("title") and d.get("text"):
                docs.append(d)
            if len(docs) >= a.n:
                break
    titles, texts = [d["title"] for d in docs], [d["text"][:1200] for d in docs]
    ref = scale(get_embedder("minilm-int8"), titles, texts)
    out = {"pairs": len(docs), "minilm-int8": ref}
    for name in a.embedders.split(","):
        s = scale(get_embedder(name), titles, texts)
        slope = (ref["related_mean"] - ref["unrelated_mean"]) / (s["related_mean"] - s["unrelated_mean"])
        s["map_to_minilm"] = [round(slope, 4), round(ref["unrelated_mean"] - slope * s["unrelated_mean"], 4)]
        out[name] = s
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
