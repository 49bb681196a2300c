"""Memory a loaded index snapshot takes per chunk (the sizing formula in infra/README.md comes from this).

Ingests the first N documents of a BEIR corpus (default: the shared SciFact corpus) into a fresh
RELAYRAG_HOME, then, in a fresh process each, measures the resident memory of
(a) the stage runtime before loading (imports + embedder, as a cold stage has them),
(b) after `ctx.snapshot(collection)`: chunks (Python dicts), the float16 dense matrix, the bm25s index.
Prints one JSON line: n_chunks, dim, rss_base_mib, rss_loaded_mib, bytes_per_chunk (all but dense) and the
dense part (2 * dim). Usage: python benchmarks/bench_snapshot_memory.py [--docs 1000] [--corpus PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = r"""
import json, os, resource, sys
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
from relayrag.context import default_context
ctx = default_context()
ctx.embedder.embed(["warm up"], kind="query")
import bm25s, numpy, tracemalloc  # noqa: F401
base = rss()
tracemalloc.start()
snap = ctx.snapshot(sys.argv[1])
held, peak = tracemalloc.get_traced_memory()  # Python and numpy allocations still held / at the peak of loading
print(json.dumps({"n_chunks": len(snap), "base": base, "loaded": rss(), "held": held, "peak": peak}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--corpus", type=Path, default=Path("/work/shared/bench/scifact/corpus.jsonl"))
    ap.add_argument("--reuse", type=Path, help="a folder this script made before (skips the ingest)")
    args = ap.parse_args()
    home = args.reuse or Path(tempfile.mkdtemp(prefix="relayrag-mem-"))
    env = {**os.environ, "RELAYRAG_HOME": str(home / "home")}
    if not args.reuse:
        sample = home / "corpus.jsonl"
        with args.corpus.open("rb") as src, sample.open("wb") as dst:
            for i, line in enumerate(src):
                if i >= args.docs:
                    break
                dst.write(line)
        subprocess.run([sys.executable, "-m", "relayrag.cli", "ingest", str(sample), "-c", "m", "--json",
                        "--no-progress"], env=env, check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([sys.executable, "-c", PROBE, "m"], env=env, check=True, capture_output=True, text=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    from relayrag.ingest.snapshot import prefix  # noqa: E402
    snap_dir = home / "home" / "blobs" / prefix("m")
    files = {p.name: p.stat().st_size for p in snap_dir.rglob("*") if p.is_file()}
    dim = 384
    n = r["n_chunks"]
    print(json.dumps({"n_chunks": n, "rss_base_mib": round(r["base"] / 2**20, 1),
                      "rss_loaded_mib": round(r["loaded"] / 2**20, 1),
                      "held_bytes_per_chunk": round(r["held"] / n), "peak_bytes_per_chunk": round(r["peak"] / n),
                      "dense_bytes_per_chunk": 2 * dim,
                      "held_bytes_per_chunk_without_dense": round(r["held"] / n - 2 * dim),
                      "snapshot_file_bytes_per_chunk": round(sum(files.values()) / n), "home": str(home)}))


if __name__ == "__main__":
    main()
