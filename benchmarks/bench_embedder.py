"""Embedding throughput of the default embedder (int8 all-MiniLM-L6-v2 on onnxruntime), tuned vs naive.

Both run in the same process on the same texts, interleaved, several times; the best repeat of each is
reported (the one least disturbed by other jobs on the machine), plus the CPU seconds it used.

tuned = relayrag's defaults: texts sorted by token length and batched with neighbours (at most 32 texts and
        512 padded tokens a batch), each batch padded to its own longest text, the softmax NaN guards
        stripped from the graph, ORT_ENABLE_BASIC, one intra-op thread per core, no spin-waiting.
naive = what a first attempt does: the unmodified graph, onnxruntime's default session options
        (ORT_ENABLE_ALL, spinning threads), batches of 32 in input order, every text padded to 256 tokens.

Texts: SciFact abstracts (title + " " + text; 71% are longer than 256 tokens, so padding matters little
there), or with --short the SciFact queries (one short sentence each, where it matters a lot).

Usage: python benchmarks/bench_embedder.py [--n 500] [--repeats 3] [--threads 0] [--short]
                                           [--data ../shared/bench/scifact]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "functions"))

from relayrag.backends.embedder import OnnxMiniLMEmbedder  # noqa: E402


def load_texts(data: Path, n: int, short: bool = False) -> list[str]:
    texts = []
    with (data / ("queries.jsonl" if short else "corpus.jsonl")).open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            texts.append((d.get("title", "") + " " + d.get("text", "")).strip())
            if len(texts) == n:
                break
    return texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500, help="texts to embed (default 500)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats per variant; the best is kept")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads for both (0 = all cores)")
    ap.add_argument("--short", action="store_true", help="embed SciFact queries (short sentences)")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "scifact")
    args = ap.parse_args()

    texts = load_texts(args.data, args.n, args.short)
    n = len(texts)
    variants = {
        "tuned": OnnxMiniLMEmbedder(threads=args.threads),
        "naive": OnnxMiniLMEmbedder(
            threads=args.threads, batch_size=32, max_batch_tokens=0, sort_by_length=False,
            pad_to_max_length=True, strip_nan_guards=False, graph_optimization="all", allow_spinning=True,
        ),
    }
    for emb in variants.values():
        emb.load()
        emb.embed(texts[:4])  # warm-up: first-run allocations
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    what = "SciFact queries" if args.short else "SciFact abstracts (title + text)"
    print(f"{n} {what}, {cores} cores, best of {args.repeats} (load avg {os.getloadavg()[0]:.1f})")
    best = {k: (float("inf"), 0.0) for k in variants}
    for _ in range(args.repeats):
        for name, emb in variants.items():
            c, t = time.process_time(), time.perf_counter()
            emb.embed(texts)
            dt, dc = time.perf_counter() - t, time.process_time() - c
            if dt < best[name][0]:
                best[name] = (dt, dc)
    for name, emb in variants.items():
        dt, dc = best[name]
        print(f"{name:6s} {n / dt:7.1f} sentences/s  {1000 * dt / n:7.2f} ms/doc  "
              f"(cpu {1000 * dc / n:7.2f} ms/doc)   {emb!r}")
    print(f"speed-up tuned/naive: {best['naive'][0] / best['tuned'][0]:.2f}x   "
          f"(load avg {os.getloadavg()[0]:.1f}; other jobs on the machine slow both)")


if __name__ == "__main__":
    main()
