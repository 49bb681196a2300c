"""sql: Text-to-SQL over the collection's warehouse, answered with the query as its citation.

Without an LLM (method `verified`): a question that asks what one of the SQL config's examples asks runs that
example's reviewed SQL, a template's slots filled with the question's values (relayrag.sql.verified), guarded
like any SQL, and the answer says so; any other question gets method `no-llm`: what was not matched and the
closest templates (or, with no templates, how to configure an LLM).
Called by the workflow (`documents_fallback`) on a collection that also has documents, that case answers route
`documents` instead: the workflow goes on to retrieval, and a "not found" from generate adds the sql note.

Method `llm` (Text-to-SQL needs an LLM):
1. the warehouse schema as compact JSON (tables, columns, types, keys, sample values) + the question →
   schema-constrained JSON `{sql, tables, assumptions}` at temperature 0 (BigQuery Standard SQL);
2. the guard (`relayrag.sql.guard`) inside `Warehouse.query`: one read-only SELECT over the allowed
   tables, LIMIT capped; anything else is refused and nothing runs;
3. execution (rows capped); on a database error, or a parse / unknown-table refusal, ONE repair round
   that feeds the error back; a refusal of a write or of a denied function is final;
4. the answer: a sentence from the LLM in the question's language, the rows, and the SQL and tables
   as its source. The run record gets `sql`, `rows` (capped), `row_count`, `sql_tables`, `sql_attempts`.
"""

from __future__ import annotations

import json

from pydantic import Field

from relayrag.backends.llm import LLMError, complete_json
from relayrag.context import StageContext
from relayrag.sql.generate import (  # noqa: F401  (re-exported: tests and callers import them from here)
    MAX_ROWS,
    REPAIRABLE,
    SQL_SCHEMA,
    SYSTEM,
    TIMEOUT_S,
    _columns_hint,
    candidates_for,
    generate_and_run,
)
from relayrag.stages.base import Stage, StageRequest, StageResponse, load_run, write_run
from relayrag.text import has_cjk

RECORD_ROWS = 100        # rows stored in the run record / shown by `ask --json`
ANSWER_ROWS = 20         # rows given to the LLM for the answer sentence and shown in the answer text

NO_LLM = ("Text-to-SQL needs an LLM to write the query, and none is configured. Enable one with "
          "RELAYRAG_LLM=openai and RELAYRAG_LLM_BASE_URL=http://HOST:PORT/v1 (any OpenAI-compatible server: "
          "vLLM, llama.cpp server, Ollama; RELAYRAG_LLM_MODEL names the model), or RELAYRAG_LLM=vertex with "
          "RELAYRAG_GCP_PROJECT for Gemini on Vertex AI (needs relayrag's gcp extra), or RELAYRAG_LLM=llamacpp "
          "for Qwen2.5-Coder-1.5B in-process (needs relayrag's local-llm extra).")
NO_LLM_JA = ("テキストからSQLを書くにはLLMが必要ですが、設定されていません。RELAYRAG_LLM=openai と "
             "RELAYRAG_LLM_BASE_URL=http://HOST:PORT/v1（OpenAI互換サーバー: vLLM、llama.cpp server、Ollama）、"
             "RELAYRAG_LLM=vertex と RELAYRAG_GCP_PROJECT（Vertex AI の Gemini、gcp extra が必要）、または "
             "RELAYRAG_LLM=llamacpp（プロセス内の Qwen2.5-Coder-1.5B、local-llm extra が必要）で有効にしてください。")
NO_WAREHOUSE = ("This collection has no warehouse to query. Load tables with `relayrag warehouse load PATH "
                "--collection {collection}` (CSV, Parquet or a SQLite file).")

ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                 "additionalProperties": False}



class SqlRequest(StageRequest):
    """The run_id (the stage reads its inputs from the run record) and whether the caller can go on to the
    documents when no query can be written (the workflow can; a direct `sql_query` call cannot)."""

    documents_fallback: bool = Field(False, description="With no LLM and no verified query for the question, "
                                     "answer route `documents` when the collection also has documents: the "
                                     "classifier sent a question naming a table here, and the documents may "
                                     "answer it (the workflow then goes on to retrieval).")


class SqlResponse(StageResponse):
    available: bool = False
    ok: bool = False
    row_count: int = 0
    attempts: int = 0
    refused: bool = False


def _finish(ctx: StageContext, run_id: str, answer: str, *, method: str, available: bool, ok: bool = False,
            sql: str | None = None, rows: list | None = None, columns: list | None = None, row_count: int = 0,
            tables: list | None = None, attempts: list | None = None, refused: bool = False) -> SqlResponse:
    write_run(ctx, run_id, {
        "answer": answer, "citations": [], "grounded": ok, "refused": refused, "found": ok,
        "sql": sql, "rows": (rows or [])[:RECORD_ROWS], "columns": columns or [], "row_count": row_count,
        "sql_tables": tables or [], "sql_attempts": attempts or []})
    return SqlResponse(run_id=run_id, method=method, available=available, ok=ok, row_count=row_count,
                       attempts=len(attempts or []), refused=refused)


def _render_rows(columns: list[str], rows: list[list], limit: int = ANSWER_ROWS) -> str:
    def cell(v) -> str:
        return "NULL" if v is None else str(v)
    lines = [" | ".join(columns)] + [" | ".join(cell(v) for v in r) for r in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"… {len(rows) - limit} more rows")
    return "\n".join(lines)


def _answer_sentence(llm, question: str, columns: list[str], rows: list[list]) -> str:
    from relayrag.sql.context import question_language
    lang = question_language(question)  # named outright for CJK: small models drift into English
    try:
        out = complete_json(llm, [
            {"role": "system", "content": "Answer the user's question in one or two sentences, in the language "
             "of the question, using only the query result given. Do not invent numbers."
             + (f" The question is in {lang}: write the answer in {lang}." if lang else "")},
            {"role": "user", "content": f"Question: {question}\nQuery result (columns, then rows): "
             + json.dumps({"columns": columns, "rows": rows[:ANSWER_ROWS]}, ensure_ascii=False, default=str)}],
            ANSWER_SCHEMA, temperature=0.0, max_tokens=300)
        return str(out.get("answer") or "").strip()
    except (LLMError, KeyError, ValueError):
        return ""


def _without_llm(ctx: StageContext, run_id: str, collection: str, question: str, wh,
                 documents_fallback: bool = False) -> SqlResponse:
    """A verified template's SQL when the question matches one of the SQL config's examples (its slots filled
    from the question, relayrag.sql.verified), guarded like any SQL: a filled template the guard refuses is not
    run. Else the no-LLM answer: with templates, two lines (what was not matched, the closest templates); without
    any, how to configure an LLM. With `documents_fallback` and documents in the collection, no match answers
    route `documents` instead: the record's route becomes `rag` and `sql_fallback` keeps the no-LLM text,
    which generate adds to a "not found" answer."""
    from relayrag.errors import ConfigError
    from relayrag.sql.guard import guard_sql
    from relayrag.sql.verified import match_verified
    try:
        cfg = ctx.sql_config(collection)
    except ConfigError:
        cfg = None
    examples = list(cfg.examples) if cfg is not None else []
    match, miss = match_verified(question, cfg, ctx.embedder, wh) if examples else (None, None)
    if match is None:
        answer = _no_match_answer(question, miss)
        response = _finish(ctx, run_id, answer, method="no-llm", available=False)
        meta = ctx.docstore.get_collection(collection) if documents_fallback else None
        if meta and meta.get("current_version"):
            write_run(ctx, run_id, {"route": "rag", "route_method": "sql without an LLM → documents",
                                    "sql_fallback": answer})
            return response.model_copy(update={"route": "documents", "method": "no-llm → documents"})
        return response
    attempts = [{"sql": match.sql, "error": None, "verified": match.question, "template": match.template,
                 "slots": match.slots}]
    verdict = guard_sql(match.sql, allowed_tables=wh.tables(), dialect=wh.dialect,
                        max_rows=getattr(wh, "max_rows", MAX_ROWS))
    if not verdict.ok:  # never run: the filled template is refused like any other SQL
        attempts[0]["error"] = f"refused: {verdict.reason}"
        return _finish(ctx, run_id, f"The verified query “{match.template}” was refused by the SQL guard and not run: "
                       f"{verdict.reason}", method="verified", available=True, sql=match.sql, attempts=attempts,
                       refused=True)
    result = wh.query(match.sql)
    attempts[0].update({"sql": result.sql or match.sql, "error": result.error})
    if not result.ok:
        return _finish(ctx, run_id, f"The verified query “{match.template}” failed: {result.error}",
                       method="verified", available=True, sql=result.sql or match.sql, attempts=attempts,
                       refused=result.refused)
    from relayrag.sql.ties import cutoff_ties, tie_note
    filled = ", ".join(f"{k} = {v}" for k, v in match.slots.items())
    ja = has_cjk(question)
    if ja:
        lead = (f"このコレクションのSQL設定の検証済みクエリ「{match.template}」"
                f"{f'（{filled}）' if filled else ''}で答えました。LLMは使っていません。")
    else:
        lead = (f"Answered by the verified query “{match.template}” of this collection's SQL config"
                f"{f' with {filled}' if filled else ''}; no LLM was used.")
    ties = cutoff_ties(result.sql, result.columns, result.rows, wh)
    if ties is not None:  # a top-N whose LIMIT cut off rows tied with the last one shown
        lead += (" " if not ja else "") + tie_note(ties, japanese=ja)
        attempts[0]["cutoff_ties"] = {"measure": ties.measure, "value": ties.value, "rows": ties.tied,
                                      "possibly_more": ties.more}
    return _answered(ctx, run_id, lead, result, method="verified", attempts=attempts)


def _no_match_answer(question: str, miss) -> str:
    """The no-LLM answer when no template matches, in the question's language: how to configure an LLM when
    the collection has no templates; else two lines, what was not matched and the closest templates."""
    ja = has_cjk(question)
    if miss is None:
        return NO_LLM_JA if ja else NO_LLM
    if ja:
        line = ("この質問にはLLMが必要です（未設定: RELAYRAG_LLM）。検証済みテンプレートにも一致しません: "
                f"{miss.reason_ja or '一致するものがありません'}。")
        return line + ("\n近いテンプレート: " + "、".join(f"「{q}」" for q in miss.closest) if miss.closest else "")
    line = ("Text-to-SQL needs an LLM for this question (none is configured: set RELAYRAG_LLM), and no verified "
            f"template matches it: {miss.reason or 'none is close'}.")
    return line + ("\nClosest templates: " + "; ".join(f"“{q}”" for q in miss.closest) + "." if miss.closest else "")


def _answered(ctx: StageContext, run_id: str, lead: str, result, *, method: str, attempts: list) -> SqlResponse:
    """The answer of a query that ran: `lead` (a sentence; "" for none), the rows (ANSWER_ROWS shown) or "no rows",
    and the SQL with its tables as the source; the record gets sql, rows, columns, row_count and tables."""
    parts = [lead] if lead else []
    if result.row_count == 0:
        parts.append("The query returned no rows.")
    else:
        more = " (capped)" if result.truncated else ""
        parts.append(f"Result ({result.row_count} row{'s' if result.row_count != 1 else ''}{more}):\n"
                     + _render_rows(result.columns, result.rows))
    parts.append(f"Source: SQL over {', '.join(result.tables) or 'no table'}:\n{result.sql}")
    return _finish(ctx, run_id, "\n\n".join(parts), method=method, available=True, ok=True, sql=result.sql,
                   rows=result.rows, columns=result.columns, row_count=result.row_count, tables=result.tables,
                   attempts=attempts)


def run(req: SqlRequest, ctx: StageContext) -> SqlResponse:
    rec = load_run(ctx, req.run_id)
    collection, question = rec["collection"], rec["question"]
    wh = ctx.warehouse(collection, timeout_s=TIMEOUT_S, max_rows=MAX_ROWS)
    if wh is None:
        return _finish(ctx, req.run_id, NO_WAREHOUSE.format(collection=collection), method="no-warehouse",
                       available=False)
    if ctx.llm is None:
        return _without_llm(ctx, req.run_id, collection, question, wh, req.documents_fallback)

    from relayrag.sql.context import context_for
    context = context_for(ctx, collection, wh, question)
    write_run(ctx, req.run_id, {"sql_context": context.summary()})
    result, attempts = generate_and_run(ctx.llm, wh, question, context,
                                        schema_format=ctx.settings.sql_schema_format,
                                        candidates=candidates_for(ctx.llm, ctx.settings.sql_candidates))

    if result is None or not result.ok:
        last = attempts[-1] if attempts else {"error": "no query was generated"}
        refused = bool(result is not None and result.refused)
        if refused:
            answer = (f"I can only answer with one read-only SELECT over this collection's tables, so I did not "
                      f"run the query. {last['error']}")
        else:
            answer = f"I could not answer this from the tables: {last['error']}"
        return _finish(ctx, req.run_id, answer, method="llm", available=True, sql=last.get("sql"),
                       attempts=attempts, refused=refused)

    return _answered(ctx, req.run_id, _answer_sentence(ctx.llm, question, result.columns, result.rows), result,
                     method="llm", attempts=attempts)


STAGE = Stage("sql", SqlRequest, SqlResponse, run,
              lambda r: {"available": r.available, "ok": r.ok, "row_count": r.row_count, "attempts": r.attempts,
                         "refused": r.refused})
