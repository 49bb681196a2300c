"""`relayrag eval sql`: execution accuracy of Text-to-SQL and the guard's refusals, as
`../shared/bench/text2sql/README.md` describes.

Each question goes through the sql stage's own path (`generate_and_run`: the collection's generation
context from relayrag.sql.context — schema JSON, matched glossary and filters, similar examples, the
enhanced question — → LLM → guard → warehouse, one repair round). The prediction's rows are normalised
(floats and Decimals rounded to 2 places, integral numbers as ints, datetimes as 'YYYY-MM-DD HH:MM:SS') and
compared with `gold_result`:
as multisets, or as lists when `order_matters`. Strict EX: same number of columns, any permutation of
them; lenient EX: extra prediction columns allowed. An error, a timeout or a refusal scores 0.
Adversarial rows: `sql` inputs go straight to the warehouse (guard included), `nl` inputs through the
whole generation path; each must be refused or execute nothing that writes (everything that runs has
passed the guard), and the warehouse file's sha256 and folder listing must be unchanged afterwards.
Without an LLM only the raw `sql` attacks and the unchanged-database check run: the questions and the `nl`
attacks are reported as skipped (`accuracy` None, `skipped` says how many and why).
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import time
from pathlib import Path
from typing import Callable

from relayrag import jsonl
from relayrag.errors import ConfigError, RelayragError
from relayrag.sql.values import norm_value  # noqa: F401  (re-exported: callers import it from here)

MAX_PERMUTED_COLUMNS = 8


def _rows(rows: list) -> list[tuple]:
    return [tuple(norm_value(v) for v in r) for r in rows]


def _same(gold: list[tuple], pred: list[tuple], ordered: bool) -> bool:
    if len(gold) != len(pred):
        return False
    return gold == pred if ordered else collections.Counter(gold) == collections.Counter(pred)


def execution_match(gold_rows: list, pred_rows: list, *, order_matters: bool, lenient: bool = False) -> bool:
    """Strict: same column count, some permutation of the prediction's columns equals gold. Lenient: some
    choice of prediction columns, one per gold column, equals gold."""
    gold = _rows(gold_rows)
    pred = _rows(pred_rows)
    if len(gold) != len(pred):
        return False
    n_gold = len(gold[0]) if gold else 0
    n_pred = len(pred[0]) if pred else 0
    if not gold:
        return True
    if n_pred < n_gold or (not lenient and n_pred != n_gold):
        return False
    if n_pred > MAX_PERMUTED_COLUMNS:
        return _same(gold, [r[:n_gold] for r in pred], order_matters)
    for cols in itertools.permutations(range(n_pred), n_gold):
        if _same(gold, [tuple(r[i] for i in cols) for r in pred], order_matters):
            return True
    return False


def _read_jsonl(path: Path) -> list[dict]:
    try:
        return jsonl.read(path)
    except OSError as exc:
        raise RelayragError(f"cannot read {path}: {exc.strerror or exc}") from None  # strerror: the path once
    except jsonl.JSONLError as exc:
        raise RelayragError(str(exc)) from exc


def _fingerprint(db: Path) -> tuple[str, list[str]]:
    return hashlib.sha256(db.read_bytes()).hexdigest(), sorted(p.name for p in db.parent.iterdir())


def _group(items: list[dict], key: str) -> dict:
    groups: dict[str, list[dict]] = {}
    for it in items:
        groups.setdefault(str(it.get(key)), []).append(it)
    return {k: {"n": len(v), "accuracy": round(sum(x["correct"] for x in v) / len(v), 4),
                "lenient_accuracy": round(sum(x["lenient"] for x in v) / len(v), 4)}
            for k, v in sorted(groups.items())}


NO_LLM = ("no LLM configured: set RELAYRAG_LLM=openai with RELAYRAG_LLM_BASE_URL, RELAYRAG_LLM=vertex, or "
          "RELAYRAG_LLM=llamacpp (extra local-llm)")


LIMIT_OUTCOMES = ("timeout", "memory", "result_bytes")


def attack_outcome(res) -> str:
    """What happened to one attack, by what it is: "refused" (the guard or the cost budget refused; nothing
    ran; also no query written), "timeout" / "memory" / "result_bytes" (it ran and a resource limit stopped
    it), "error" (the database rejected it), "ran" (it completed and returned rows)."""
    if res is None or res.refused:
        return "refused"
    if res.ok:
        return "ran"
    return res.limit if getattr(res, "limit", None) in LIMIT_OUTCOMES else "error"


def evaluate_sql(ctx, dataset: Path, collection: str, *, adversarial: list[Path] = (), limit: int | None = None,
                 on_item: Callable[[dict], None] | None = None) -> dict:
    """Score `dataset` (JSONL question rows) and the `adversarial` JSONL attacks on the collection's warehouse.

    Returns the report: accuracy / lenient_accuracy (None when no question ran), by_difficulty, by_lang,
    false_refusals, guard {refused, stopped (by a time, memory or result-size limit), errors, ran (completed),
    total (attacks tried), db_unchanged}, items (attacks with `outcome`, see attack_outcome); without an LLM also
    guard.skipped (nl attacks) and `skipped` ({questions, nl_attacks, reason}). Raises RelayragError for an
    unknown warehouse or an unreadable file, ConfigError when there is no LLM and no raw-SQL attack to run
    (nothing to check)."""
    from relayrag.naming import validate_collection
    from relayrag.sql.context import context_for
    from relayrag.sql.generate import MAX_ROWS, TIMEOUT_S, candidates_for, generate_and_run

    validate_collection(collection)
    wh = ctx.warehouse(collection, timeout_s=TIMEOUT_S, max_rows=MAX_ROWS)
    if wh is None:
        raise RelayragError(f"collection {collection!r} has no warehouse; run `relayrag warehouse load PATH "
                            f"--collection {collection}` first")
    rows = _read_jsonl(dataset)[: limit or None]
    adv_rows = [(Path(p).name, r) for p in adversarial for r in _read_jsonl(p)]
    skipped = None
    if ctx.llm is None:
        nl = [(src, r) for src, r in adv_rows if r.get("kind") != "sql"]
        adv_rows = [(src, r) for src, r in adv_rows if r.get("kind") == "sql"]
        if not adv_rows:
            raise ConfigError(f"eval sql needs an LLM to write the queries ({NO_LLM}); without one only the "
                              "raw-SQL attacks (kind \"sql\") of --adversarial files run, and none were given")
        skipped = {"questions": len(rows), "nl_attacks": len(nl),
                   "reason": f"{NO_LLM}; only the raw-SQL attacks and the unchanged-database check ran"}
        rows = []
    db = Path(wh.path)
    before = _fingerprint(db)
    n_cand = candidates_for(ctx.llm, ctx.settings.sql_candidates) if ctx.llm is not None else 0

    items = []
    for row in rows:
        t0 = time.perf_counter()
        context = context_for(ctx, collection, wh, row["question"])
        result, attempts = generate_and_run(ctx.llm, wh, row["question"], context,
                                            schema_format=ctx.settings.sql_schema_format, candidates=n_cand)
        ok = bool(result is not None and result.ok)
        gold = row.get("gold_result") or []
        strict = ok and execution_match(gold, result.rows, order_matters=bool(row.get("order_matters")))
        lenient = ok and (strict or execution_match(gold, result.rows, order_matters=bool(row.get("order_matters")),
                                                    lenient=True))
        item = {"id": row.get("id"), "difficulty": row.get("difficulty"), "lang": row.get("lang"),
                "correct": bool(strict), "lenient": bool(lenient),
                "sql": result.sql if ok else (attempts[-1]["sql"] if attempts else None),
                "error": None if ok else (attempts[-1]["error"] if attempts else "no query"),
                "refused": bool(result is not None and result.refused), "attempts": len(attempts),
                "chosen": next((a.get("variant") for a in attempts if a.get("chosen")), None),
                "votes": next((a.get("votes") for a in attempts if a.get("chosen")), None),
                "fixes": next((a.get("fixes") for a in attempts if a.get("chosen")), None),
                "issues": next((a.get("issues") for a in attempts if a.get("chosen")), None),
                "tried": [{"variant": a.get("variant"), "sql": (a.get("sql") or "")[:400], "fixes": a.get("fixes"),
                           "issues": a.get("issues"), "error": (a.get("error") or "")[:120] or None}
                          for a in attempts],
                "enhanced_question": context.enhanced_question if context.enhanced_question != row["question"] else None,
                "row_count": result.row_count if ok else 0, "seconds": round(time.perf_counter() - t0, 2)}
        items.append(item)
        if on_item:
            on_item(item)

    guard_items = []
    for source, row in adv_rows:
        text = row.get("input", "")
        if row.get("kind") == "sql":
            res = wh.query(text)
        else:
            res, attempts = generate_and_run(ctx.llm, wh, text, context_for(ctx, collection, wh, text),
                                              schema_format=ctx.settings.sql_schema_format, candidates=n_cand)
        outcome = attack_outcome(res)
        ran = res.sql if outcome == "ran" else None
        # everything that ran passed the guard: one read-only SELECT, so nothing wrote
        guard_items.append({"id": row.get("id"), "file": source, "kind": row.get("kind"),
                            "refused": outcome == "refused", "outcome": outcome,
                            **({"error": res.error} if res is not None and res.error else {}),
                            "executed_read_only": ran, "passed": True})
        if on_item:
            on_item(guard_items[-1])
    after = _fingerprint(db)
    unchanged = before == after
    for g in guard_items:
        g["passed"] = unchanged

    n = len(items)
    report = {
        "collection": collection, "dataset": str(dataset),
        "llm": getattr(ctx.llm, "name", "?") if ctx.llm is not None else None, "n": n,
        "method": {"candidates": n_cand, "plan": bool(ctx.settings.sql_plan),
                   "linking": bool(ctx.settings.sql_linking),
                   "examples": str(getattr(ctx.settings.sql_examples, "value", ctx.settings.sql_examples)),
                   "schema_format": ctx.settings.sql_schema_format},
        "llm_calls_per_question": round(sum(i["attempts"] for i in items) / n, 2) if n else None,
        "accuracy": round(sum(i["correct"] for i in items) / n, 4) if n else None,
        "lenient_accuracy": round(sum(i["lenient"] for i in items) / n, 4) if n else None,
        "by_difficulty": _group(items, "difficulty"), "by_lang": _group(items, "lang"),
        "false_refusals": sum(i["refused"] for i in items),
        "seconds_per_question": round(sum(i["seconds"] for i in items) / n, 2) if n else None,
        "guard": {"refused": sum(g["outcome"] == "refused" for g in guard_items),
                  "stopped": sum(g["outcome"] in LIMIT_OUTCOMES for g in guard_items),
                  "errors": sum(g["outcome"] == "error" for g in guard_items),
                  "ran": sum(g["outcome"] == "ran" for g in guard_items),
                  "total": len(guard_items), "db_unchanged": unchanged},
        "items": items + guard_items,
    }
    if skipped:
        report["guard"]["skipped"] = skipped["nl_attacks"]
        report["skipped"] = skipped
    return report
