"""Embedding throughput of the default embedder (int8 all-MiniLM-L6-v2 on onnxruntime), tuned vs naive.

Both run in the same process on the same SciFact abstracts (title + " " + text), one after the other,
several times; the best repeat of each is reported (the least disturbed by other jobs on the machine).

tuned = relayrag's defaults: texts sorted by token length and batched with neighbours, each batch padded to
        its own longest text, the softmax NaN guards stripped from the graph, all graph optimisations,
        one intra-op thread per core, batch 8.
naive = what a first attempt does: the unmodified graph, onnxruntime's default session options, batches of
        32 in input order, every text padded to 256 tokens.

Usage: python benchmarks/bench_embedder.py [--n 500] [--repeats 3] [--threads 0] [--batch-size 8]
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


def load_texts(data: Path, n: int) -> list[str]:
    texts = []
    with (data / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            texts.append((d.get("title", "") + " " + d.get("text", "")).strip())
            if len(texts) == n:
                break
    return texts


def measure(emb: OnnxMiniLMEmbedder, texts: list[str], repeats: int) -> float:
    emb.load()
    emb.embed(texts[:4])  # warm-up: first-run allocations
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        emb.embed(texts)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500, help="abstracts to embed (default 500)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats per variant; the best is kept")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads for tuned (0 = all cores)")
    ap.add_argument("--batch-size", type=int, default=8, help="tuned batch size")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "scifact")
    args = ap.parse_args()

    texts = load_texts(args.data, args.n)
    n = len(texts)
    tuned = OnnxMiniLMEmbedder(threads=args.threads, batch_size=args.batch_size)
    naive = OnnxMiniLMEmbedder(
        threads=0, batch_size=32, sort_by_length=False, pad_to_max_length=True,
        strip_nan_guards=False, graph_optimization="all",
    )
    naive.threads = 0  # onnxruntime's own default (one thread per physical core)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{n} SciFact abstracts, {cores} cores, best of {args.repeats} (load avg {os.getloadavg()[0]:.1f})")
    rows = []
    for name, emb in (("tuned", tuned), ("naive", naive)):
        dt = measure(emb, texts, args.repeats)
        rows.append((name, dt))
        print(f"{name:6s} {n / dt:7.1f} sentences/s  {1000 * dt / n:7.2f} ms/doc   {emb!r}", flush=True)
    (_, t_tuned), (_, t_naive) = rows
    print(f"speed-up tuned/naive: {t_naive / t_tuned:.2f}x   (load avg {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
