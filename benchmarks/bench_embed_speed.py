"""Embedding speed of the embedders on the same texts in one run, batches interleaved so the machine's load falls on
each alike: paragraphs per second (documents) over the first --n paragraphs of a BEIR corpus.

Usage: python benchmarks/bench_embed_speed.py --data ../shared/bench/ja-qa [--n 200] [--embedders minilm-int8,e5-small]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--embedders", default="minilm-int8,e5-small")
    a = ap.parse_args()
    from relayrag.backends.embedder import get_embedder
    texts = []
    with (a.data / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            texts.append("\n".join(p for p in (d.get("title"), d["text"]) if p))
            if len(texts) >= a.n:
                break
    names = a.embedders.split(",")
    embs = {n: get_embedder(n) for n in names}
    for e in embs.values():
        e.embed(["warm up"])
    wall = {n: 0.0 for n in names}
    cpu = {n: 0.0 for n in names}
    load = os.getloadavg()[0]
    for b in range(0, len(texts), a.batch):
        for n in names:
            t, c = time.perf_counter(), time.process_time()
            embs[n].embed(texts[b:b + a.batch])
            wall[n] += time.perf_counter() - t
            cpu[n] += time.process_time() - c
    print(f"{len(texts)} paragraphs of {a.data.name}, load {load:.1f} → {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for n in names:
        print(f"  {n:12s} {len(texts) / wall[n]:6.1f} paragraphs/s wall ({1000 * wall[n] / len(texts):7.1f} ms each), "
              f"CPU {1000 * cpu[n] / len(texts):7.1f} ms each")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
