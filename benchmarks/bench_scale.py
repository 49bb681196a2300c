"""Scale benchmark: what adding (and deleting) one document costs at N chunks, and what a stage instance pays
to load the collection, for N in --sizes (default 5,000 / 50,000 / 200,000 chunks).

Collections are synthetic, built without embedding: SciFact abstracts (the shared corpus) chunked as ingest
chunks them, repeated with a perturbation (sentence order shuffled, a variant tag appended, so every chunk has
its own content hash), one source per document, with seeded random unit float16 vectors (the vectors' values
do not change what a write or a load costs; their size does). The seeded version names the real embedder, so
ingest reuses those vectors and embeds only the new document. Then, with the real pipeline and MiniLM:

- add: `ingest(ctx, new_file, collection)` of one unseen SciFact abstract, --reps times (a new document each):
  wall seconds and CPU seconds of this process (time.process_time: less sensitive to the other processes on a
  shared machine than wall time), median and interquartile range, bytes written to and read from the blob
  store (a counting wrapper), chunks embedded, and which adds ran a merge. One more add runs under cProfile
  (not counted) and its top functions by cumulative time are recorded (`add_profile`), to see what grows with N.
- delete: `ingest(..., remove_paths=[that file])`: seconds and bytes written.
- load: a fresh interpreter (a cold stage instance) runs `ctx.snapshot(collection)`: seconds, resident memory
  added (RSS after - before) and peak RSS (ru_maxrss).
- stage instance (`--stages`): in a fresh interpreter, a cold stage instance of the old path loads the run's
  pinned version whole (`ctx.snapshot(collection, version)`: what rerank, grade, generate and
  hallucination_check each did) and runs classify + retrieve (forced hybrid) for a run, plus the whole pipeline
  for a second run of the same question; then in another fresh interpreter the new path
  (`stages.base.run_snapshot` → relayrag.retrieval.view) reads only that run's rows, and rerank, grade,
  generate and hallucination_check run on it: seconds, resident memory added, whole loads (must be 0), and
  whether answer and citations equal the whole-version run's.
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
    from relayrag.retrieval.sentences import SPAN_RULES
    # the version records today's sentence-vector rules (else the first add would rebuild every row's sentence
    # vectors once: the upgrade path); the seeded segment stores none (lookups there embed at query time), so
    # its files and a whole load are ~4 KB per chunk smaller than a real collection's with sentence vectors
    manifest = {"embedder": ctx.embedder.model_id, "created_at": time.time(), "sentence_vectors": {"spans": SPAN_RULES}}
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


STAGE_WHOLE = r"""
import json, os, resource, sys, time
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
from relayrag.context import default_context
from relayrag.stage_registry import STAGES
from relayrag.stages.base import execute
ctx = default_context()
ctx.embedder.embed(["warm up"], kind="query")
import bm25s, numpy  # noqa: F401
collection, question = sys.argv[1], sys.argv[2]
version = ctx.current_version(collection)
base = rss()
t0 = time.perf_counter(); c0 = time.process_time()
snap = ctx.snapshot(collection, version)
t1 = time.perf_counter(); c1 = time.process_time()
loaded = rss()
out = {"load_s": t1 - t0, "load_cpu_s": c1 - c0, "rss_added": loaded - base}
for run_id, stages in (("bench-view", ["retrieve"]),
                       ("bench-whole", ["retrieve", "rerank", "grade", "generate", "hallucination_check"])):
    st, body = execute(STAGES["classify"], {"run_id": run_id, "question": question, "collection": collection}, ctx)
    assert st == 200, body
    for name in stages:
        t = time.perf_counter()
        st, body = execute(STAGES[name], {"run_id": run_id, **({"arm": "hybrid"} if name == "retrieve" else {})}, ctx)
        assert st == 200, (name, body)
        out.setdefault(run_id, {})[name + "_ms"] = round((time.perf_counter() - t) * 1000, 1)
rec = ctx.docstore.get_run("bench-whole")
out["answer"], out["citations"] = rec.get("answer"), rec.get("citations")
out["candidates"] = [c["chunk_id"] for c in rec.get("candidates") or []]
print(json.dumps(out))
"""

STAGE_VIEW = r"""
import json, os, resource, sys, time
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
import relayrag.context as C
from relayrag.context import default_context
from relayrag.stage_registry import STAGES
from relayrag.stages.base import execute, run_snapshot
whole_loads = []
real = C._load
C._load = lambda *a, **k: whole_loads.append(a[2]) or real(*a, **k)
ctx = default_context()
ctx.embedder.embed(["warm up"], kind="query")
import bm25s, numpy  # noqa: F401
run = ctx.docstore.get_run("bench-view")
base = rss()
t0 = time.perf_counter(); c0 = time.process_time()
snap = run_snapshot(ctx, run)
t1 = time.perf_counter(); c1 = time.process_time()
out = {"load_s": t1 - t0, "load_cpu_s": c1 - c0, "rss_added": rss() - base, "rows_held": len(snap.chunks),
       "rows_wanted": len({c["row"] for c in run["candidates"]} | {r for v in run["arm_lists"].values() for r in v})}
for name in ["rerank", "grade", "generate", "hallucination_check"]:
    t = time.perf_counter()
    st, body = execute(STAGES[name], {"run_id": "bench-view"}, ctx)
    assert st == 200, (name, body)
    out[name + "_ms"] = round((time.perf_counter() - t) * 1000, 1)
rec = ctx.docstore.get_run("bench-view")
out["answer"], out["citations"] = rec.get("answer"), rec.get("citations")
out["candidates"] = [c["chunk_id"] for c in rec.get("candidates") or []]
out["whole_loads"] = len(whole_loads)
out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(out))
"""

QUESTION = "Does vitamin D supplementation reduce the risk of bone fractures in older adults?"


def _probe(home: Path, script: str, *args: str) -> dict:
    env = {**os.environ, "RELAYRAG_HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"probe failed: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def probe_stages(home: Path, collection: str) -> dict:
    """A cold stage instance, old path (whole version) vs new (the run's rows): see the module docstring."""
    load0 = os.getloadavg()[0]
    whole = _probe(home, STAGE_WHOLE, collection, QUESTION)
    view = _probe(home, STAGE_VIEW)
    same = (view["answer"] == whole["answer"] and view["citations"] == whole["citations"]
            and view["candidates"] == whole["candidates"])
    mib = 2 ** 20
    return {"whole": {"load_s": round(whole["load_s"], 3), "load_cpu_s": round(whole["load_cpu_s"], 3),
                      "rss_added_mib": round(whole["rss_added"] / mib, 1), **whole["bench-whole"]},
            "view": {"load_s": round(view["load_s"], 3), "load_cpu_s": round(view["load_cpu_s"], 3),
                     "rss_added_mib": round(view["rss_added"] / mib, 1), "rows_held": view["rows_held"],
                     "rows_wanted": view["rows_wanted"], "whole_loads": view["whole_loads"],
                     **{k: view[k] for k in view if k.endswith("_ms")}},
            "same_answer_citations_candidates": same, "answer": view["answer"][:200],
            "load1": [load0, os.getloadavg()[0]]}


def iqr(values: list[float]) -> list[float]:
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    return [round(q[0], 4), round(q[2], 4)]


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


def _segments(ctx, collection: str) -> int:
    from relayrag.ingest import snapshot as S
    version = ctx.current_version(collection)
    return len(S.version_segments(S.read_manifest(ctx.blobstore, collection, version), version))


def _top(profile, n: int = 15) -> list[str]:
    """The n functions of a profile with the most cumulative time: 'cum_s tot_s calls file:line(name)'."""
    import pstats
    st = pstats.Stats(profile)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][3])[:n]  # type: ignore[attr-defined]
    return [f"{v[3]:.4f} {v[2]:.4f} {v[1]} {k[0].rsplit('/', 2)[-1]}:{k[1]}({k[2]})" for k, v in rows]


def run_size(n: int, docs: list[dict], extra_docs: list[dict], reps: int, full_rewrite: bool,
             stages: bool = False) -> dict:
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
    for i in range(reps + 1):
        d = extra_docs[i]
        f = tmp / "new" / f"{d['_id']}.txt"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"{d.get('title', '')}\n\n{d['text']}", encoding="utf-8")
        files.append(f)
        store.written = store.read = store.puts = 0
        before = _segments(ctx, collection)
        load0 = os.getloadavg()[0]
        profile = None
        if i == reps:  # one more add, profiled, not counted
            import cProfile
            profile = cProfile.Profile()
            profile.enable()
        t0, c0 = time.perf_counter(), time.process_time()
        s = pipeline.ingest(ctx, f, collection)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if profile is not None:
            profile.disable()
            result["add_profile"] = _top(profile)
            break
        if s.failed or s.ingested != 1:
            raise SystemExit(f"ingest failed: {s.to_dict()}")
        after = _segments(ctx, collection)
        adds.append({"s": dt, "cpu": dc, "written": store.written, "read": store.read, "puts": store.puts,
                     "embedded": s.chunks_embedded, "load1": load0, "total": s.chunks_total,
                     "merged": after != before + 1, "segments": after})
    result["add"] = {"seconds_median": round(statistics.median(a["s"] for a in adds), 4),
                     "seconds_iqr": iqr([a["s"] for a in adds]),
                     "cpu_seconds_median": round(statistics.median(a["cpu"] for a in adds), 4),
                     "cpu_seconds_iqr": iqr([a["cpu"] for a in adds]),
                     "seconds": [round(a["s"], 4) for a in adds], "cpu_seconds": [round(a["cpu"], 4) for a in adds],
                     "bytes_written": [a["written"] for a in adds], "bytes_read": [a["read"] for a in adds],
                     "bytes_written_median": int(statistics.median(a["written"] for a in adds)),
                     "bytes_read_median": int(statistics.median(a["read"] for a in adds)),
                     "merged": [a["merged"] for a in adds], "segments": [a["segments"] for a in adds],
                     "chunks_embedded": [a["embedded"] for a in adds], "load1": [round(a["load1"], 1) for a in adds]}
    if stages:
        result["stage_instance"] = probe_stages(home, collection)
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
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--stages", action="store_true", help="also measure a cold stage instance: whole version "
                    "(old path) vs the run's rows (relayrag.retrieval.view)")
    ap.add_argument("--full-rewrite", action="store_true", help="also time a merge of everything (segment layout)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    all_docs = load_docs()
    docs, extra = all_docs[:-20], all_docs[-20:]
    for n in args.sizes:
        r = {"label": args.label, "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "cpus": os.cpu_count(),
             **run_size(n, docs, extra, args.reps, args.full_rewrite, args.stages)}
        line = json.dumps(r)
        print(line, flush=True)
        if args.out:
            with args.out.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")


if __name__ == "__main__":
    main()
