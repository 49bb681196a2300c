"""Scale benchmark: what adding (and deleting) one document costs at N chunks, and what a stage instance pays
to load the collection, for N in --sizes (default 5,000 / 50,000 / 200,000 chunks).

Collections are synthetic, built without embedding: SciFact abstracts (the shared corpus) chunked as ingest
chunks them, repeated with a perturbation (sentence order shuffled, a variant tag appended, so every chunk has
its own content hash), one source per document, with seeded random unit float16 vectors (the vectors' values
do not change what a write or a load costs; their size does). The seeded version names the real embedder, so
ingest reuses those vectors and embeds only the new document. Then, with the real pipeline and MiniLM:

- add: `ingest(ctx, new_file, collection)` of one unseen SciFact abstract: seconds, bytes written to and read
  from the blob store (a counting wrapper), chunks embedded. Median of --reps.
- delete: `ingest(..., remove_paths=[that file])`: seconds and bytes written.
- load: a fresh interpreter (a cold stage instance) runs `ctx.snapshot(collection)`: seconds, resident memory
  added (RSS after - before) and peak RSS (ru_maxrss).
- full rewrite (segment layout only, `--full-rewrite`): `pipeline.merge(..., everything=True)`, the cost every
  ingest paid with whole snapshots (all chunks, vectors and BM25 statistics written again), as the same-run
  baseline.

The machine's load average is recorded with every measurement (2 shared vCPUs here: times are inflated and
noisy; ratios within one run are what the results compare). Prints one JSON line per N; --out appends them.
Usage: python benchmarks/bench_scale.py [--sizes 5000 50000] [--reps 3] [--out results/scale.jsonl]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CORPUS = Path("/work/shared/bench/scifact/corpus.jsonl")
DIM = 384


class CountingStore:
    """A blob store wrapper counting bytes put and got (everything else passes through)."""

    def __init__(self, inner):
        self.inner = inner
        self.written = self.read = self.puts = 0

    def put_bytes(self, key, data):
        self.written += len(data)
        self.puts += 1
        return self.inner.put_bytes(key, data)

    def get_bytes(self, key):
        data = self.inner.get_bytes(key)
        self.read += len(data)
        return data

    def get_range(self, key, start, end):
        data = self.inner.get_range(key, start, end)
        self.read += len(data)
        return data

    def local_path(self, key):
        return None  # force every read through get_bytes, as on GCS, so bytes read are counted

    def __getattr__(self, name):
        return getattr(self.inner, name)


def load_docs(limit: int | None = None) -> list[dict]:
    docs = []
    with CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if d.get("text", "").strip():
                docs.append(d)
            if limit and len(docs) >= limit:
                break
    return docs


def synthetic_chunks(docs: list[dict], n_chunks: int, seed: int = 0) -> tuple[list[dict], dict[str, int]]:
    """≈n_chunks chunk dicts (one source per perturbed document) and {source: n_chunks}."""
    from relayrag.ingest.chunking import make_chunks
    from relayrag.text import split_sentences
    rng = random.Random(seed)
    out: list[dict] = []
    per_source: dict[str, int] = {}
    rep = 0
    while len(out) < n_chunks:
        for d in docs:
            text = d["text"]
            sents = [text[s:e] for s, e in split_sentences(text)] or [text]
            if rep:
                rng.shuffle(sents)
            body = " ".join(sents) + (f" Variant {rep}." if rep else "")
            source = f"/synthetic/r{rep}/{d['_id']}.txt"
            chunks = make_chunks(doc=f"{d['_id']}-{rep}.txt", source=source, title=d.get("title", ""),
                                 pages=[(1, body)])
            out.extend(c.to_dict() for c in chunks)
            per_source[source] = len(chunks)
            if len(out) >= n_chunks:
                break
        rep += 1
    return out, per_source


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), np.float16)
    for b in range(0, n, 20_000):
        v = rng.standard_normal((min(20_000, n - b), DIM), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out[b:b + len(v)] = v
    return out


def seed_collection(ctx, collection: str, chunks: list[dict], per_source: dict[str, int]) -> str:
    """Write the synthetic chunks as the collection's current version (whichever layout this checkout writes)
    and commit one file record per source. Returns the version."""
    from relayrag.ingest import snapshot as S
    vectors = unit_vectors(len(chunks))
    version = S.new_version()
    manifest = {"embedder": ctx.embedder.model_id, "created_at": time.time()}
    if hasattr(S, "write_segment"):  # segment layout: one base segment, listed by the version
        seg = S.write_segment(ctx.blobstore, collection, chunks, vectors)
        S.write_version(ctx.blobstore, collection, version, [S.SegmentRef(seg.id, seg.n_rows)], manifest)
    else:  # whole-snapshot layout (before segments)
        S.write_snapshot(ctx.blobstore, collection, version, chunks, vectors, manifest)
    now = time.time()
    records = [{"path": src, "name": src.rsplit("/", 1)[-1], "sha256": hashlib.sha256(src.encode()).hexdigest(),
                "size": 1500, "n_chunks": n, "ingested_at": now, "kind": "text/plain"}
               for src, n in per_source.items()]
    stats = {"n_chunks": len(chunks), "n_documents": len(per_source), "n_files": len(per_source)}
    ctx.docstore.commit_ingest(collection, version, stats, records, [], expected_version=None)
    return version


PROBE = r"""
import json, os, resource, sys, time
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
from relayrag.context import default_context
ctx = default_context()
ctx.embedder.embed(["warm up"], kind="query")
import bm25s, numpy  # noqa: F401
base = rss()
t0 = time.perf_counter()
snap = ctx.snapshot(sys.argv[1])
t1 = time.perf_counter()
snap.bm25.scores("cell biology protein")
print(json.dumps({"n_chunks": len(snap), "load_s": t1 - t0, "base": base, "loaded": rss(),
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def probe_load(home: Path, collection: str) -> dict:
    env = {**os.environ, "RELAYRAG_HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", PROBE, collection], env=env, capture_output=True,
                         text=True)
    if out.returncode:
        raise SystemExit(f"load probe failed: {out.stderr[-2000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {"load_s": round(r["load_s"], 3), "rss_added_mib": round((r["loaded"] - r["base"]) / 2**20, 1),
            "rss_peak_mib": round(r["peak"] / 2**20, 1), "rss_base_mib": round(r["base"] / 2**20, 1)}


def blob_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in (home / "blobs").rglob("*") if p.is_file())


def run_size(n: int, docs: list[dict], extra_docs: list[dict], reps: int, full_rewrite: bool) -> dict:
    from relayrag.context import StageContext, build_blobstore, build_docstore
    from relayrag.ingest import pipeline
    from relayrag.settings import load_settings

    tmp = Path(tempfile.mkdtemp(prefix=f"scale-{n}-", dir=os.environ.get("BENCH_TMP") or None))
    home = tmp / "home"
    os.environ["RELAYRAG_HOME"] = str(home)
    load_settings.cache_clear()  # settings are cached per process: each size has its own home
    settings = load_settings()
    store = CountingStore(build_blobstore(settings))
    ctx = StageContext(settings, store, build_docstore(settings))
    ctx.embedder.embed(["warm up"], kind="document")
    collection = "scale"
    t0 = time.perf_counter()
    chunks, per_source = synthetic_chunks(docs, n)
    seed_collection(ctx, collection, chunks, per_source)
    seed_s = time.perf_counter() - t0
    result: dict = {"n_chunks": len(chunks), "n_sources": len(per_source), "seed_s": round(seed_s, 1),
                    "stored_bytes": blob_bytes(home), "layout": "segments" if hasattr(
                        __import__("relayrag.ingest.snapshot", fromlist=["x"]), "write_segment") else "whole"}
    del chunks
    adds = []
    files = []
    for i in range(reps):
        d = extra_docs[i]
        f = tmp / "new" / f"{d['_id']}.txt"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"{d.get('title', '')}\n\n{d['text']}", encoding="utf-8")
        files.append(f)
        store.written = store.read = store.puts = 0
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        s = pipeline.ingest(ctx, f, collection)
        dt = time.perf_counter() - t0
        if s.failed or s.ingested != 1:
            raise SystemExit(f"ingest failed: {s.to_dict()}")
        adds.append({"s": dt, "written": store.written, "read": store.read, "puts": store.puts,
                     "embedded": s.chunks_embedded, "load1": load0, "total": s.chunks_total})
    result["add"] = {"seconds_median": round(statistics.median(a["s"] for a in adds), 3),
                     "seconds": [round(a["s"], 3) for a in adds],
                     "bytes_written_median": int(statistics.median(a["written"] for a in adds)),
                     "bytes_read_median": int(statistics.median(a["read"] for a in adds)),
                     "chunks_embedded": [a["embedded"] for a in adds], "load1": [a["load1"] for a in adds]}
    store.written = store.read = 0
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    s = pipeline.ingest(ctx, files[0], collection, remove_paths=[str(files[0])])
    result["delete"] = {"seconds": round(time.perf_counter() - t0, 3), "bytes_written": store.written,
                        "bytes_read": store.read, "deleted": s.deleted, "load1": load0}
    result["load"] = {**probe_load(home, collection), "load1": os.getloadavg()[0]}
    if full_rewrite:
        store.written = store.read = 0
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        pipeline.merge(ctx, collection, everything=True)
        result["full_rewrite"] = {"seconds": round(time.perf_counter() - t0, 3), "bytes_written": store.written,
                                  "bytes_read": store.read, "load1": load0}
        result["load_after_merge"] = {**probe_load(home, collection), "load1": os.getloadavg()[0]}
    result["stored_bytes_end"] = blob_bytes(home)
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5_000, 50_000, 200_000])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--full-rewrite", action="store_true", help="also time a merge of everything (segment layout)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    all_docs = load_docs()
    docs, extra = all_docs[:-20], all_docs[-20:]
    for n in args.sizes:
        r = {"label": args.label, "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "cpus": os.cpu_count(),
             **run_size(n, docs, extra, args.reps, args.full_rewrite)}
        line = json.dumps(r)
        print(line, flush=True)
        if args.out:
            with args.out.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")


if __name__ == "__main__":
    main()
