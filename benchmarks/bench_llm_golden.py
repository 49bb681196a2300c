"""The LLM workflow measured beside the no-LLM one on a golden set (issue 31, item 7): the set's first N questions
and all of its unanswerable ones through the whole workflow, with the LLM configured in the environment
(RELAYRAG_LLM=llamacpp, RELAYRAG_LLM_MODEL=qwen2.5-coder-0.5b | qwen2.5-coder-1.5b) and without one, same run.
Reports per method: answer accuracy, citation precision, refusal recall, wrong answers marked grounded
(answerable and unanswerable), answers from the model's own knowledge (route chitchat, or no citation, to a
document question) and seconds per question; writes benchmarks/results/llm_golden_<model>.json.
Run through `nox -s llm_golden -- GOLDEN.jsonl CORPUS_DIR` (not in CI: hours on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path


def grounded_wrong(rows: list[dict]) -> int:
    """Answers marked grounded that contain no expected string (answerable and unanswerable questions)."""
    return sum(1 for r in rows if not r["refused"] and r["grounded"]
               and not (r["contains_expected"] if r["unanswerable"] else r["correct"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("golden", type=Path)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--collection", default="llm-golden")
    ap.add_argument("--first", type=int, default=30)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from relayrag.context import default_context
    from relayrag.evaluation.answers import evaluate_answers, load_golden
    from relayrag.ingest.pipeline import ingest

    ctx = default_context()
    if ctx.llm is None:
        raise SystemExit("configure an LLM first (RELAYRAG_LLM=llamacpp)")
    items = load_golden(args.golden)
    picked = items[:args.first] + [it for it in items[args.first:] if it["unanswerable"]]
    summary = ingest(ctx, args.corpus, args.collection)
    if summary.failed:
        raise SystemExit(f"ingest failed: {summary.failed[0]}")
    report = evaluate_answers(ctx, picked, args.collection)
    out = {"golden": str(args.golden), "model": os.environ.get("RELAYRAG_LLM_MODEL", "default"), "n": len(picked),
           "methods": {}}
    for name, m in report["methods"].items():
        rows, o = m["rows"], m["overall"]
        own = sum(1 for r in rows if not r["refused"] and (r.get("route") == "chitchat" or not r.get("n_citations")))
        out["methods"][name] = {
            "answer_accuracy": o["answer_accuracy"], "citation_precision": o["citation_precision"],
            "refusal_recall": o["refusal_recall"], "grounded_wrong": grounded_wrong(rows),
            "own_knowledge_answers": own,
            "seconds_per_question": round(statistics.mean(r["latency_ms"] for r in rows) / 1000, 1) if rows else None}
    path = args.out or Path("benchmarks/results") / f"llm_golden_{out['model']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
