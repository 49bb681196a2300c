"""Text-to-SQL execution accuracy with per-question progress on disk, for runs that may not finish.

    RELAYRAG_LLM=llamacpp nice -n 10 python benchmarks/bench_text2sql.py ../shared/bench/text2sql/dev.jsonl \
        --collection chinook --out benchmarks/results/text2sql_run.jsonl [--interleave] [--limit N]

Runs `relayrag eval sql`'s own path (relayrag.service.Service.eval_sql: the sql stage's generation, the
guard, the warehouse) and appends one JSON line per scored question to --out as it goes, then a final
`{"report": ...}` line (over the questions of that invocation; `--resume` skips the ids --out already
scored, so `--summarise` reads the whole run across invocations). `--interleave` reorders the questions
round-robin by difficulty (easy, medium, hard, easy, ...) so that a run stopped early has scored a balanced
subset of every difficulty; the method (candidates, plan, linking, examples) comes from the RELAYRAG_SQL_*
settings and is written in the first
line. `summarise(path)` (or `--summarise PATH`) prints strict EX per difficulty and seconds per question of
what a (possibly partial) run file holds, optionally restricted to the ids another run file scored.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def interleave(rows: list[dict]) -> list[dict]:
    """Round-robin by `difficulty` in the order easy, medium, hard, then any other, file order within each."""
    order = ["easy", "medium", "hard"]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(str(r.get("difficulty")), []).append(r)
    keys = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    out: list[dict] = []
    while any(groups[k] for k in keys):
        for k in keys:
            if groups[k]:
                out.append(groups[k].pop(0))
    return out


def summarise(path: Path, only: set[str] | None = None) -> dict:
    """{difficulty: {n, strict, lenient, seconds}} and "all" over the question lines of a run file."""
    items = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    items = [i for i in items if "correct" in i and (only is None or i["id"] in only)]
    out: dict = {}
    for key in ["all", *sorted({str(i["difficulty"]) for i in items})]:
        sel = [i for i in items if key == "all" or str(i["difficulty"]) == key]
        if sel:
            out[key] = {"n": len(sel), "strict": round(sum(i["correct"] for i in sel) / len(sel), 3),
                        "lenient": round(sum(i["lenient"] for i in sel) / len(sel), 3),
                        "seconds_per_question": round(sum(i["seconds"] for i in sel) / len(sel), 1),
                        "llm_calls_per_question": round(sum(i.get("attempts", 0) for i in sel) / len(sel), 2)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path, nargs="?")
    ap.add_argument("--collection", default="chinook")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--interleave", action="store_true")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--difficulty", default="", help="comma-separated difficulties to run (default: all)")
    ap.add_argument("--resume", action="store_true",
                    help="skip the questions --out already scored (a run stopped early goes on where it stopped)")
    ap.add_argument("--adversarial", type=Path, action="append", default=[])
    ap.add_argument("--summarise", type=Path, help="print the summary of a run file instead of running")
    ap.add_argument("--only-ids-of", type=Path, help="with --summarise: only the ids this other run file scored")
    args = ap.parse_args(argv)
    if args.summarise:
        only = None
        if args.only_ids_of:
            only = {json.loads(x)["id"] for x in args.only_ids_of.read_text().splitlines()
                    if x.strip() and "correct" in json.loads(x)}
        print(json.dumps(summarise(args.summarise, only), indent=1))
        return 0
    if not args.dataset or not args.out:
        ap.error("dataset and --out are required")
    from relayrag.service import Service
    rows = [json.loads(x) for x in args.dataset.read_text(encoding="utf-8").splitlines() if x.strip()]
    if args.difficulty:
        rows = [r for r in rows if str(r.get("difficulty")) in args.difficulty.split(",")]
    if args.interleave:
        rows = interleave(rows)
    if args.limit:
        rows = rows[: args.limit]
    if args.resume and args.out.exists():
        done = {json.loads(x).get("id") for x in args.out.read_text(encoding="utf-8").splitlines()
                if x.strip() and "correct" in json.loads(x)}
        rows = [r for r in rows if r.get("id") not in done]
    svc = Service()
    st = svc.settings
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as tmp:
        tmp.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "a", encoding="utf-8") as out:
        out.write(json.dumps({"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                              "load_avg": os.getloadavg(), "llm": st.llm.value if hasattr(st.llm, "value") else st.llm,
                              # getattr: the script also measures builds from before these settings
                              "candidates": getattr(st, "sql_candidates", None), "plan": getattr(st, "sql_plan", None),
                              "linking": getattr(st, "sql_linking", None),
                              "examples": str(getattr(st, "sql_examples", None)),
                              "threads": st.llm_threads, "n": len(rows)}) + "\n")
        out.flush()

        def item(it: dict) -> None:
            out.write(json.dumps({**it, "load_avg": os.getloadavg()[0]}, ensure_ascii=False, default=str) + "\n")
            out.flush()

        try:
            report = svc.eval_sql(Path(tmp.name), args.collection, adversarial=args.adversarial, on_item=item)
        finally:
            os.unlink(tmp.name)
        report.pop("items", None)
        out.write(json.dumps({"report": report, "load_avg": os.getloadavg()}, default=str) + "\n")
    print(json.dumps(summarise(args.out), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
