"""False positives of the no-LLM review on gold SQL: every gold query reviewed as if a model wrote it (no LLM).

    RELAYRAG_HOME=... python benchmarks/replay_gold_review.py tests/fixtures/text2sql/dev.jsonl \
        benchmarks/golden/chinook-blind/dev.jsonl [--collection chinook] [--verbose]

For each question of the datasets (bench_text2sql.py's format: `question`, `gold_sql`, `gold_result`,
`order_matters`): `relayrag.sql.checks.review(gold_sql, question, schema=...)`, then the gold query and the
reviewed query are both run on the collection's warehouse (loaded from examples/chinook/chinook.sqlite when
the home has none). A gold whose reviewed result no longer matches its stored `gold_result` (strict
execution match, as `relayrag eval sql`) while the gold query itself does is CHANGED: a rule that broke a
right answer. Issues the review raises on a gold query are counted too (each would send a right answer to
a repair round and rank it below a clean candidate). Golds the warehouse cannot run as written (SQLite-only
functions) are counted as `not_runnable`; when the review rewrites one, the rewrite is written as SQLite SQL by
sqlglot and run on the SQLite file read-only, and judged against `gold_result` the same way. Prints one line per gold
with fixes or issues, then a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _sqlite_rows(sql: str) -> list:
    """Rows of `sql` (BigQuery dialect, written as SQLite by sqlglot) on examples/chinook/chinook.sqlite,
    opened read-only; [] when it fails."""
    import sqlite3
    import sqlglot
    try:
        con = sqlite3.connect(f"file:{REPO / 'examples' / 'chinook' / 'chinook.sqlite'}?mode=ro", uri=True)
        try:
            return [list(r) for r in con.execute(sqlglot.transpile(sql, read="bigquery", write="sqlite")[0])]
        finally:
            con.close()
    except Exception:  # noqa: BLE001 - any failure is a wrong answer
        return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", type=Path, nargs="+")
    ap.add_argument("--collection", default="chinook")
    ap.add_argument("--verbose", action="store_true", help="print the reviewed SQL of every changed gold")
    args = ap.parse_args(argv)
    from relayrag.evaluation.sql import execution_match
    from relayrag.settings import load_settings
    from relayrag.sql.checks import review
    from relayrag.sql.plan import plan_question
    from relayrag.sql.warehouse import load_warehouse, open_warehouse
    home = Path(load_settings().home)
    wh = open_warehouse(home, args.collection)
    if wh is None:
        load_warehouse(home, args.collection, [REPO / "examples" / "chinook" / "chinook.sqlite"])
        wh = open_warehouse(home, args.collection)
    schema = wh.schema()
    total = fixed = changed = with_issues = not_runnable = 0
    codes: dict[str, int] = {}
    for path in args.datasets:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            g = json.loads(line)
            total += 1
            om = bool(g.get("order_matters"))
            rv = review(g["gold_sql"], g["question"], plan_question(g["question"]), schema)
            for c in rv.fixes + [i.code for i in rv.issues]:
                codes[c] = codes.get(c, 0) + 1
            base = wh.query(g["gold_sql"])
            base_ok = bool(base.ok and execution_match(g["gold_result"], base.rows, order_matters=om))
            not_runnable += not base_ok
            if rv.fixes:
                fixed += 1
                if base_ok:
                    res = wh.query(rv.sql)
                    ok = bool(res.ok and execution_match(g["gold_result"], res.rows, order_matters=om))
                else:
                    ok = execution_match(g["gold_result"], _sqlite_rows(rv.sql), order_matters=om)
                lost = not ok
            else:
                lost = False
            changed += lost
            with_issues += bool(rv.issues)
            if rv.fixes or rv.issues:
                print(g["id"], rv.fixes, [i.code for i in rv.issues], "CHANGED" if lost else "")
                if lost and args.verbose:
                    print("   ", rv.sql)
    print(json.dumps({"golds": total, "reviewed_with_fixes": fixed, "changed": changed,
                      "with_issues": with_issues, "not_runnable_as_written": not_runnable, "codes": codes}))
    wh.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
