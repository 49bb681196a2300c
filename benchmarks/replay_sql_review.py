"""Replay the chosen SQL of a recorded Text-to-SQL run through the no-LLM review and rescore it (no LLM).

    RELAYRAG_HOME=... python benchmarks/replay_sql_review.py benchmarks/results/text2sql_i19_full30.jsonl \
        tests/fixtures/text2sql/dev.jsonl --collection chinook

For each question line of the run file (bench_text2sql.py's format): the recorded SQL (the guard's
`LIMIT 1000` taken off), `relayrag.sql.checks.review` with the question, the reviewed SQL run on the
collection's warehouse and scored like `relayrag eval sql` (strict execution match with the dataset's
`gold_result`). Prints one line per question (right before → after, the fixes and issues) and the counts of
questions the review turned right (FIXED) and wrong (BROKEN). What a rule does to recorded answers, in
seconds, before an LLM run measures it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--collection", default="chinook")
    args = ap.parse_args(argv)
    from relayrag.settings import load_settings
    from relayrag.sql.checks import review
    from relayrag.evaluation.sql import execution_match
    from relayrag.sql.plan import plan_question
    from relayrag.sql.warehouse import open_warehouse
    wh = open_warehouse(Path(load_settings().home), args.collection)
    if wh is None:
        print(f"no warehouse for {args.collection!r}", file=sys.stderr)
        return 2
    schema = wh.schema()
    gold = {d["id"]: d for d in (json.loads(x) for x in args.dataset.read_text().splitlines() if x.strip())}
    fixed = broken = 0
    for line in args.run.read_text().splitlines():
        d = json.loads(line) if line.strip() else {}
        if d.get("id") not in gold or not d.get("sql"):
            continue
        g = gold[d["id"]]
        sql = re.sub(r"\s+LIMIT 1000$", "", d["sql"])
        rv = review(sql, g["question"], plan_question(g["question"]), schema)
        res = wh.query(rv.sql)
        ok = bool(res.ok and execution_match(g["gold_result"], res.rows, order_matters=bool(g.get("order_matters"))))
        fixed += ok and not d["correct"]
        broken += d["correct"] and not ok
        flag = "" if ok == d["correct"] else ("  FIXED" if ok else "  BROKEN")
        print(d["id"], d["correct"], "->", ok, rv.fixes, [i.code for i in rv.issues], flag)
    print(json.dumps({"fixed": fixed, "broken": broken}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
