"""Citations to the wrong record among near-identical ones (issue 31): N templated notes "Note i: the badge number
of clerk i is B…" (a BEIR corpus.jsonl, one document per note), Q random clerks asked "What is the badge number of
clerk i?" through the whole no-LLM workflow (`relayrag.engine.local.ask`). Reports, over the Q answers: right
answers (the clerk's badge number in the answer), citations in all, and citations that point at another clerk's
note (the target is 0). Run the same command with the old code on PYTHONPATH for the baseline, same machine:

    PYTHONPATH=functions python benchmarks/bench_entity_citations.py --notes 10000 --questions 20 --seed 31
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path


def badge(i: int) -> str:
    return f"B{(i * 7919 + 13) % 100000:05d}"


def write_corpus(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(1, n + 1):
            f.write(json.dumps({"_id": f"note-{i}", "title": "",
                                "text": f"Note {i}: the badge number of clerk {i} is {badge(i)}."}) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10000)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--home", default=None, help="RELAYRAG_HOME to use (default: a fresh temporary folder)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    home = args.home or tempfile.mkdtemp(prefix="bench-entity-")
    os.environ["RELAYRAG_HOME"] = home
    os.environ.pop("RELAYRAG_LLM", None)
    from relayrag.context import default_context
    from relayrag.engine.local import ask
    from relayrag.ingest.pipeline import ingest

    ctx = default_context()
    data = Path(home) / "notes"
    data.mkdir(parents=True, exist_ok=True)
    corpus = data / "corpus.jsonl"
    write_corpus(corpus, args.notes)
    t0 = time.perf_counter()
    summary = ingest(ctx, corpus, "notes")
    ingest_s = time.perf_counter() - t0
    if summary.failed:
        raise SystemExit(f"ingest failed: {summary.failed[0]}")
    rng = random.Random(args.seed)
    clerks = rng.sample(range(1, args.notes + 1), args.questions)
    rows = []
    t0 = time.perf_counter()
    for i in clerks:
        res = ask(f"What is the badge number of clerk {i}?", "notes", ctx=ctx)
        cits = res.get("citations") or []
        wrong = [c for c in cits if c.get("doc") not in (f"note-{i}", f"note-{i}.txt")]
        rows.append({"clerk": i, "right": badge(i) in res.get("answer", ""), "citations": len(cits),
                     "wrong_citations": len(wrong), "grounded": bool(res.get("grounded")),
                     "cited_docs": [c.get("doc") for c in cits]})
    ask_s = time.perf_counter() - t0
    out = {"notes": args.notes, "questions": args.questions, "seed": args.seed,
           "right_answers": sum(r["right"] for r in rows), "citations": sum(r["citations"] for r in rows),
           "wrong_citations": sum(r["wrong_citations"] for r in rows),
           "grounded_wrong": sum(1 for r in rows if r["grounded"] and not r["right"]),
           "ingest_s": round(ingest_s, 1), "ask_s_mean": round(ask_s / max(1, len(rows)), 2), "rows": rows}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{out['right_answers']}/{args.questions} right; citations {out['citations']}, pointing at another "
              f"record {out['wrong_citations']}; grounded wrong {out['grounded_wrong']}; ingest {out['ingest_s']} s, "
              f"{out['ask_s_mean']} s per question")


if __name__ == "__main__":
    main()
