"""`relayrag eval beir|answers|sql`: retrieval, answer-quality and Text-to-SQL evaluation."""

from __future__ import annotations

from pathlib import Path

import typer

from relayrag.cli.app import (
    _console,
    _print_json,
    _say,
    _service,
    _user_errors,
    err,
    eval_app,
    out,
)


@eval_app.command("beir")
def eval_beir(dataset: Path = typer.Argument(..., help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv."),
              collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
              as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
              limit: int = typer.Option(0, "--limit", help="Evaluate only the first N test queries (0 = all); "
                                                 "the whole corpus is "
                                "still ingested (SciFact: about 10 min on 2 cores for the chunk vectors, once, "
                                "and longer with the sentence vectors: RELAYRAG_SENTENCE_VECTORS)."),
              split: str = typer.Option("test", "--split", help="qrels file name under qrels/."),
              pipeline: bool = typer.Option(True, "--pipeline/--no-pipeline", help="Also score the full pipeline "
                                            "(about 2 s per query on 2 cores)."),
              block: int = typer.Option(50, "--block", min=1, help="Learning-curve block size (queries)."),
              oracle: bool = typer.Option(False, "--oracle", help="Also replay the bandit rewarded with the qrels' "
                                          "nDCG@10 (an upper bound on what a reward can teach).")):
    """Ingest (if needed) and score a BEIR dataset: nDCG@10, Recall@100, MRR@10 for each fixed arm, the
    contextual bandit replayed online with the no-LLM judge's rewards (its learning curve per block of
    queries, regret against the best fixed arm, picks; per query script), and the full pipeline's final
    ranking with the arms it picked. All queries of the split by default."""
    with _user_errors(as_json):
        report = _service().eval_beir(dataset, collection, limit=limit or None, split=split, pipeline=pipeline,
                                      progress=not as_json, block=block, oracle=oracle)
    if as_json:
        _print_json(report)
        return
    _say(out, (report["dataset"], "bold"), f": {report['queries']} queries")
    rows = dict(report["arms"])
    if report.get("pipeline"):
        rows["pipeline"] = report["pipeline"]
    for name, m in rows.items():
        _say(out, f"  {name:13s} nDCG@10 {m['ndcg@10']:.4f}  Recall@100 {m['recall@100']:.4f}  MRR@10 {m['mrr@10']:.4f}")
    for name in ("bandit", "bandit_oracle"):
        for c, m in (report["arms"].get(name) or {}).get("contexts", {}).items():
            _say(out, (f"  {name}, {c} queries ({m['queries']}): nDCG@10 {m['ndcg@10']:.4f} vs best fixed "
                       f"{m['best_fixed']} {m['fixed'][m['best_fixed']]:.4f}; after the first {block}: "
                       f"{m['ndcg@10_after_first_block']:.4f} vs {m['best_fixed_after_first_block']:.4f}; "
                       f"regret {m['regret']:.2f}; picks {m['picks']}", "bold"))
            for row in m["curve"]:
                _say(out, "    " + "  ".join(f"{k} {v}" for k, v in row.items()))
    if report.get("pipeline"):
        _say(out, f"  pipeline picks: {report['pipeline']['picks']}")
    _say(out, f"  timings: {report['timings']}")


@eval_app.command("answers")
def eval_answers(golden: Path = typer.Argument(..., help="Golden set JSONL, one question per line: {\"id\", \"question\", "
                                          "\"answers\": [expected strings, any one suffices], \"doc\", \"page\" (where the "
                                          "answer is), \"category\", \"unanswerable\": true|false}; or a BEIR folder with "
                                          "answers.jsonl (ja-qa), whose corpus is ingested into the collection."),
                 collection: str = typer.Option(..., "--collection", "-c", help="Collection to answer from."),
                 twin: bool = typer.Option(False, "--twin", help="BEIR folder only: ingest the corpus WITHOUT the "
                                           "questions' gold paragraphs and expect every question to be refused "
                                           "(the unanswerable twin); an answer that still states a gold string "
                                           "(another paragraph says it) is not counted as grounded-unanswerable."),
                 limit: int = typer.Option(0, "--limit", help="Evaluate only the first N questions (0 = all)."),
                 arm: str = typer.Option("", "--arm", help="Force a retrieval arm (dense | bm25 | hybrid) to measure "
                                         "answering apart from the bandit's choice; default: the bandit."),
                 compare_llm: bool = typer.Option(True, "--compare-llm/--no-llm-run", help="With an LLM configured, "
                                                  "also run the set with the LLM methods (the no-LLM run always happens)."),
                 rows: bool = typer.Option(False, "--rows", help="With --json: include one row per question."),
                 as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Answer quality on a golden set, overall and per category: answer accuracy (the answer contains an
    expected string), citation precision (the first citation is the expected document/page), refusal
    precision/recall, faithfulness (no-LLM support check; plus an LLM judge when an LLM is configured),
    grounded answers to unanswerable questions, answer length and p50 latency. Runs the no-LLM methods, and
    the LLM methods too when RELAYRAG_LLM is set."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    svc = _service()
    with _user_errors(as_json):
        bar = Progress(TextColumn("answers"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                       console=_console(stderr=True), disable=as_json)
        task = bar.add_task("answers", total=None)

        def advance(row: dict) -> None:
            if bar.tasks[0].total is None:  # known once the set is loaded (and ingested): the bar starts then,
                bar.update(task, total=row["n_runs"])  # so a missing or bad set is one error line, no empty bar
                bar.start()
            bar.advance(task)
            from relayrag.records import miss_line
            miss = miss_line(row)
            if miss and not as_json:  # a wrong answer is shown as it happens, above the bar
                bar.console.print(miss, markup=False, highlight=False, soft_wrap=True)
        try:
            report = svc.eval_answers(golden, collection, twin=twin, limit=limit or None, arm=arm or None,
                                      compare_llm=compare_llm, on_item=advance)
        finally:
            if bar.live.is_started:
                bar.stop()
    if not rows:
        for m in report["methods"].values():
            m.pop("rows", None)
    if as_json:
        _print_json(report)
        return
    _say(out, (report["golden"], "bold"), f": {report['n']} questions, collection {collection}")
    for name, m in report["methods"].items():
        _say(out, (f"{name} methods", "bold"))
        for line in answers_table(m):
            _say(out, line)
    if not any(m["by_category"].get("ja") for m in report["methods"].values()):
        _say(out, ("  ja: no Japanese questions in this set (a question with CJK text counts as ja too; "
                   "the ja-qa BEIR folder has them)", "dim"))
    _say(out, ("  rates in %; refusal P/R: precision and recall of refusals against the unanswerable questions; "
               "refused ans.: answerable questions refused; faithful: answer sentences the cited passages support; "
               "grounded una.: unanswerable questions answered as grounded; —: no question to measure it on", "dim"))


ANSWER_COLUMNS = (("n", "n", "n"), ("accuracy", "answer_accuracy", "%"), ("citation", "citation_precision", "%"),
                  ("refusal P", "refusal_precision", "%"), ("refusal R", "refusal_recall", "%"),
                  ("refused ans.", "refusal_rate_answerable", "%"), ("faithful", "faithfulness", "%"),
                  ("judge", "faithfulness_llm", "%"), ("grounded una.", "grounded_unanswerable", "n"),
                  ("chars", "answer_chars", "n"), ("p50 ms", "latency_ms_p50", "n"))


def answers_table(method: dict) -> list[str]:
    """One method's report ({overall, by_category}) as aligned text rows: a header, `overall`, then each
    category (ja last among them as sorted); rates as percentages with one decimal, counts and
    milliseconds as whole numbers, "—" where a metric has no question to be measured on. The LLM judge's
    column is left out when no row has it."""
    groups = {"overall": method["overall"], **method["by_category"]}
    cols = [c for c in ANSWER_COLUMNS if c[1] != "faithfulness_llm"
            or any(g.get(c[1]) is not None for g in groups.values())]

    def cell(v, kind: str) -> str:
        if v is None:
            return "—"
        return f"{100 * v:.1f}" if kind == "%" else f"{float(v):.0f}"
    width = max(len(k) for k in groups) + 2
    head = "  " + "category".ljust(width) + "".join(label.rjust(max(len(label), 5) + 2) for label, _, _ in cols)
    rows = [head]
    for name, g in groups.items():
        rows.append("  " + name.ljust(width) + "".join(cell(g.get(key), kind).rjust(max(len(label), 5) + 2)
                                                       for label, key, kind in cols))
    return rows


@eval_app.command("sql")
def eval_sql(dataset: Path = typer.Argument(..., help="JSONL, one question per line: {\"id\", \"question\", "
                                         "\"gold_result\": [[value, ...], ...] (the expected rows), "
                                         "\"order_matters\": true|false, and optionally \"difficulty\" and "
                                         "\"lang\" (reported per group)}."),
             collection: str = typer.Option(..., "--collection", "-c", help="Collection with a warehouse."),
             adversarial: list[Path] = typer.Option([], "--adversarial", help="JSONL of guard attacks (repeatable), "
                                                    "one per line: {\"id\", \"input\", \"kind\": \"sql\" (raw SQL "
                                                    "sent to the warehouse through the guard) | \"nl\" (a request "
                                                    "through the whole LLM path)}. Each must be refused and the "
                                                    "database left unchanged."),
             limit: int = typer.Option(0, "--limit", help="Evaluate only the first N questions (0 = all)."),
             as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Execution accuracy of Text-to-SQL (strict and lenient, by difficulty and language) and the guard's
    refusals.

    Matching: the rows the generated SQL returns and `gold_result` are normalised (numbers rounded to 2
    decimals, 5.0 equals 5, datetimes as 'YYYY-MM-DD HH:MM:SS', null stays null) and compared as multisets
    of rows, or as lists when `order_matters`. Strict: the same number of columns, in any order; lenient:
    extra columns in the prediction are allowed. An error, a timeout or a refusal scores 0.

    Generation is the sql stage's: RELAYRAG_SQL_CANDIDATES candidates (0 = the backend's default), chosen
    by agreement of their results, with RELAYRAG_SQL_PLAN, RELAYRAG_SQL_LINKING and RELAYRAG_SQL_EXAMPLES;
    the report names them (`method`) with seconds and LLM calls per question.

    The questions and "nl" attacks need an LLM (RELAYRAG_LLM). Without one, the "sql" attacks and the
    unchanged-database check still run and the rest is reported as skipped (accuracy null). Each attack is
    counted as what happened to it: refused by the guard, stopped by a limit (time, memory, result size), a
    database error, or ran to completion. Exit code 1 if the database changed or an attack ran to completion;
    2 on bad input or nothing to evaluate."""
    def progress(item: dict) -> None:
        if not as_json:
            mark = ("ok" if item.get("correct") else "--") if "correct" in item else \
                ("RAN" if item["outcome"] == "ran" else item["outcome"])
            _say(err, (f"{item['id']}: {mark}", "dim"))
    with _user_errors(as_json):
        report = _service().eval_sql(dataset, collection, adversarial=list(adversarial), limit=limit or None,
                                     on_item=progress)
    g = report["guard"]
    failed = not g["db_unchanged"] or g["ran"] > 0
    if as_json:
        _print_json(report)
    else:
        if report["n"]:
            _say(out, (report["dataset"], "bold"), f" ({report['n']} questions, {report['llm']}): EX "
                 f"{report['accuracy']:.3f} (lenient {report['lenient_accuracy']:.3f}), "
                 f"false refusals {report['false_refusals']}")
            m = report.get("method") or {}
            _say(out, f"  {m.get('candidates')} candidates, plan {m.get('plan')}, linking {m.get('linking')}, "
                 f"examples {m.get('examples')}; {report.get('seconds_per_question')} s and "
                 f"{report.get('llm_calls_per_question')} LLM calls per question")
            for key in ("by_difficulty", "by_lang"):
                _say(out, "  " + ", ".join(f"{k} {v['accuracy']:.3f} (n={v['n']})" for k, v in report[key].items()))
        if g["total"]:
            _say(out, f"guard: {g['refused']}/{g['total']} refused, {g['stopped']} stopped by a limit, "
                 f"{g['errors']} database errors, {g['ran']} ran; database unchanged: {g['db_unchanged']}")
        if report.get("skipped"):
            sk = report["skipped"]
            _say(err, ("skipped:", "yellow"), f" {sk['questions']} questions and {sk['nl_attacks']} natural-language "
                 f"attacks: {sk['reason']}")
    raise typer.Exit(1 if failed else 0)


@eval_app.command("export-feedback")
def eval_export_feedback(collection: str = typer.Option(..., "--collection", "-c", help="Collection whose "
                                                        "verdicts to export."),
                         out_path: Path = typer.Option(None, "--out", "-o", help="Write the golden set to this "
                                                       "file (replaced); default: stdout.")):
    """Turn people's 👎 verdicts that carry a correct answer (--answer) or document (--doc/--page) into
    golden-set lines for `relayrag eval answers`: {"id", "question", "answers", "doc", "page", "category":
    "feedback", "unanswerable": false}, one per question (verdicts on the same question merged: every given
    answer accepted, the most named document expected). A case with a document but no answer is scored on
    its citation alone. Ids are stable across exports. The count goes to stderr."""
    from relayrag import jsonl
    from relayrag.feedback import golden_cases
    with _user_errors():
        svc = _service()
        if collection not in svc.collection_names():
            from relayrag.errors import NotFoundError
            from relayrag.naming import unknown_collection_message
            raise NotFoundError(unknown_collection_message(collection, svc.collection_names()))
        cases = golden_cases(svc.ctx.docstore, collection)
        text = "".join(jsonl.dumps(c) + "\n" for c in cases)
        if out_path is None:
            import sys
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            Path(out_path).write_text(text, encoding="utf-8")
        _say(err, ("export-feedback", "bold"), f" {len(cases)} case{'s' if len(cases) != 1 else ''} from "
             f"{collection}" + (f" → {out_path}" if out_path else ""))
