"""No-LLM Text-to-SQL on paraphrases of the verified questions: answered correctly / wrongly / declined, with
the method of another git revision measured in the same run (issue 25).

    python benchmarks/bench_sql_templates.py PARAPHRASES.jsonl --baseline-ref c4fcd87 \
        [--out benchmarks/results/sql_templates.json]

Each row of PARAPHRASES.jsonl has `question` and `gold_sql` and/or `gold_result` (rows, or {"rows": …}); other
keys (`template`, `near_miss_of`) are reported per group but not used to score. For each method (`before`: the
baseline revision's code and its examples/chinook/relayrag.sql.yaml, extracted with `git archive`; `after`: this
working tree) a child process with that code on its path loads the bundled Chinook warehouse with that config
into a fresh RELAYRAG_HOME and asks every question through `Service.sql_query` with no LLM (RELAYRAG_LLM=none):
the sql stage's no-LLM path, as MCP's sql_query and the assistant run it. A question is *answered* when the
stage ran a query (status ok); it is *correct* when its rows equal the gold rows as multisets after rounding
(relayrag.evaluation.sql.execution_match, order ignored; `strict`: same columns in any order; `lenient`:
extra columns in the answer allowed, e.g. a count shown next to the countries asked for), else *wrong*.
Gold rows come from `gold_result`, else from running `gold_sql` on the warehouse. A question that is not
answered is *declined*. Shares are over all rows.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def worker(questions_file: Path, config: Path, out: Path) -> None:
    """Child: ask every question without an LLM; one JSON line per question to `out`."""
    from relayrag.service import Service
    from relayrag.sql.warehouse import load_warehouse
    rows = json.loads(questions_file.read_text(encoding="utf-8"))
    home = Path(os.environ["RELAYRAG_HOME"])
    load_warehouse(home, "chinook", [REPO / "examples" / "chinook" / "chinook.sqlite"], config=config)
    svc = Service()
    with out.open("w", encoding="utf-8") as fh:
        for q in rows:
            t0 = time.perf_counter()
            r = svc.sql_query(q, "chinook")
            fh.write(json.dumps({"question": q, "status": r.status, "rows": r.rows if r.status == "ok" else None,
                                 "sql": r.sql, "answer": r.answer[:600],
                                 "seconds": round(time.perf_counter() - t0, 3)}, ensure_ascii=False) + "\n")


def _gold_rows(row: dict, wh) -> list | None:
    g = row.get("gold_result")
    if isinstance(g, dict):
        g = g.get("rows")
    if isinstance(g, list):
        return g
    if row.get("gold_sql"):
        res = wh.query(row["gold_sql"])
        return res.rows if res.ok else None
    return None


def run_method(name: str, src: Path, questions: list[str], tmp: Path) -> list[dict]:
    qfile = tmp / "questions.json"
    qfile.write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    out = tmp / f"{name}.jsonl"
    env = {**os.environ, "PYTHONPATH": str(src / "functions"), "RELAYRAG_HOME": str(tmp / f"home-{name}"),
           "RELAYRAG_LLM": "none"}
    code = ("import sys; sys.path.insert(0, %r); from bench_sql_templates import worker; from pathlib import Path; "
            "worker(Path(%r), Path(%r), Path(%r))" % (str(REPO / "benchmarks"), str(qfile),
                                                      str(src / "examples" / "chinook" / "relayrag.sql.yaml"), str(out)))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=str(tmp))
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def score(rows: list[dict], answers: list[dict], gold: list[list | None]) -> dict:
    from relayrag.evaluation.sql import execution_match
    out: dict = {"n": len(rows), "correct": 0, "correct_strict": 0, "wrong": 0, "declined": 0, "by_group": {},
                 "rows": []}
    groups: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row, ans, g in zip(rows, answers, gold):
        group = f"template {row['template']}" if row.get("template") else f"near miss of {row.get('near_miss_of')}"
        if ans["status"] != "ok":
            verdict = "declined"
        elif g is not None and execution_match(g, ans["rows"] or [], order_matters=False, lenient=True):
            verdict = "correct"
            out["correct_strict"] += int(execution_match(g, ans["rows"] or [], order_matters=False))
        else:
            verdict = "wrong"
        out[verdict] += 1
        groups[group][verdict] += 1
        out["rows"].append({"question": row["question"], "group": group, "verdict": verdict, "sql": ans["sql"],
                            "answer": ans["answer"], "seconds": ans["seconds"]})
    n = max(1, len(rows))
    out.update({k + "_share": round(out[k] / n, 3) for k in ("correct", "correct_strict", "wrong", "declined")})
    out["by_group"] = {k: dict(v) for k, v in sorted(groups.items())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paraphrases", type=Path)
    ap.add_argument("--baseline-ref", required=True, help="git revision whose code and config are `before`")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "sql_templates.json")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.paraphrases.read_text(encoding="utf-8").splitlines() if line.strip()]
    sys.path.insert(0, str(REPO / "functions"))
    from relayrag.sql.warehouse import load_warehouse, open_warehouse
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = tmp / "baseline"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.baseline_ref, "functions",
                                  "examples/chinook"], check=True, capture_output=True).stdout
        (tmp / "base.tar").write_bytes(archive)
        with tarfile.open(tmp / "base.tar") as tar:
            tar.extractall(base, filter="data")
        load_warehouse(tmp / "gold", "chinook", [REPO / "examples" / "chinook" / "chinook.sqlite"])
        wh = open_warehouse(tmp / "gold", "chinook")
        gold = [_gold_rows(r, wh) for r in rows]
        questions = [r["question"] for r in rows]
        report = {"paraphrases": str(args.paraphrases), "baseline_ref": args.baseline_ref,
                  "head": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip(),
                  "load": os.getloadavg(), "methods": {}}
        for name, src in (("before", base), ("after", REPO)):
            t0 = time.time()
            answers = run_method(name, src, questions, tmp)
            report["methods"][name] = {**score(rows, answers, gold), "seconds": round(time.time() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    for name, m in report["methods"].items():
        print(f"{name:7s} n={m['n']} correct={m['correct']} ({m['correct_share']:.3f}; strict {m['correct_strict']}) "
              f"wrong={m['wrong']} declined={m['declined']}  {m['seconds']} s")
    print(f"per question: {args.out}")


if __name__ == "__main__":
    main()
