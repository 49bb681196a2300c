"""`relayrag ask` (answer, citations, grounding, timings), `relayrag search` and `relayrag run` (a stored run,
readable or --json)."""

from __future__ import annotations

import re
from typing import Optional

import typer

from relayrag.cli.app import (
    _fail,
    _print_json,
    _say,
    _service,
    _user_errors,
    app,
    err,
    out,
)


FILTER_HELP = ("Metadata filter, repeatable: field=value (a|b: any of; a list field: contains), field>=value, "
               "field<=value, field=from..to (dates, numbers), valid_on=YYYY-MM-DD, include_expired=true.")


@app.command()
def ask(question: str = typer.Argument(..., help="The question."),
        collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
        stream: bool = typer.Option(False, "--stream", help="Print NDJSON stage events as they finish, then the result."),
        arm: Optional[str] = typer.Option(None, "--arm", help="Force a retrieval arm: dense | bm25 | hybrid."),
        engine: Optional[str] = typer.Option(None, "--engine", help="embedded | cloud (Cloud Workflows execution of "
                                             "RELAYRAG_WORKFLOW); default: RELAYRAG_ENGINE, else embedded."),
        timeout: float = typer.Option(900.0, "--timeout", help="Cloud engine: seconds to wait for the execution."),
        filters: Optional[list[str]] = typer.Option(None, "--filter", help=FILTER_HELP)):
    """Answer QUESTION from a collection: workflows/rag.yaml run by the embedded engine, every stage called
    through its HTTP entry point in-process; or, with --engine cloud, one execution of the deployed workflow
    through the Workflows Executions API (progress on stderr). The answer cites document and page (and the
    document's title); notes say when a cited document's validity is unknown or it needs review. Expired
    documents are left out unless --filter include_expired=true or --filter valid_on=DAY."""
    from relayrag.engine.expr import WorkflowsRuntimeError
    from relayrag.errors import RelayragError
    from relayrag.naming import validate_collection
    from relayrag.service import check_arm

    if stream and as_json:
        _fail("--stream already prints JSON (NDJSON events, then the result); use one of them")
    with _user_errors(as_json or stream):
        try:
            validate_collection(collection)
            if arm:
                check_arm(arm)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        if not question.strip():
            raise RelayragError("the question is empty")
        service = _service()
        filters = service.check_filters(collection, filters or [])
        engine = service.engine if engine is None else engine.strip().lower()
        if engine not in ("embedded", "cloud"):
            raise RelayragError(f"unknown engine {engine!r}; valid: embedded, cloud")

        def on_event(e: dict) -> None:
            r = e.get("result") or {}
            if stream:
                _print_json({"event": "stage", "name": e["step"], "ms": r.get("ms", e["ms"]),
                             "method": r.get("method"), "route": r.get("route")})
            elif engine == "cloud":
                _say(err, (f"  {e['step']} done ({float(r.get('ms') or e.get('ms') or 0):.0f} ms)", "dim"))

        def on_state(state: str, elapsed: float) -> None:
            _say(err, (f"execution {state.lower()} ({elapsed:.1f} s)", "dim"))

        try:
            if engine == "cloud":
                from relayrag.engine.cloud import describe_error
                try:
                    result = service.ask(question, collection, arm=arm, engine=engine, on_event=on_event,
                                         on_state=on_state, timeout_s=timeout, filters=filters).to_dict()
                except Exception as exc:
                    msg = describe_error(exc)
                    if msg is None:
                        raise
                    raise RelayragError(msg) from exc
            else:
                result = service.ask(question, collection, arm=arm, engine=engine, on_event=on_event,
                                     filters=filters).to_dict()
        except WorkflowsRuntimeError as exc:
            body = exc.payload.get("body")
            msg = str(body["error"]) if isinstance(body, dict) and body.get("error") else str(exc)
            for d in (body.get("details") or []) if isinstance(body, dict) else []:
                msg += f"; {d['field']}: {d['message']}" if d.get("field") else f"; {d['message']}"
            raise RelayragError(msg) from None
    if stream:
        _print_json({"event": "result", **result})
    elif as_json:
        _print_json(result)
    else:
        _warn_llm_fallback(result, service)
        _say(out, ("Q:", "bold"), " ", question)
        show_answer(result)
        flag = outcome(result)
        if result.get("filters"):
            _say(out, (f"filters: {'; '.join(result['filters'])}", "dim"))
        arm_part = f" · arm {result['arm']}" if result.get("arm") else ""  # no arm: no retrieval ran
        _say(out, (f"run {result['run_id']} · route {result['route']}{arm_part} · {flag} · "
                   + ", ".join(f"{s['name']} {s['ms']:.0f} ms" for s in result["stages"]), "dim"))


def show_answer(result: dict) -> None:
    """The answer as `ask` and `run` both print it: the A: line, the SQL line, notes, citations with their
    quotes and page images, the related passages of a "not found" or a refusal (marked as not an answer), and
    why page-image search did not decide a visual question."""
    from relayrag.records import PAGE_SEARCH_CAUSES_IN_ANSWER
    answer = result.get("answer") or ""
    _say(out, ("A:", "bold"), " ", answer or "—")
    sql_line(result)
    for note in result.get("notes", []):
        _say(out, ("Note:", "yellow"), " ", note)
    for c in result.get("citations", []):
        quote = display_quote(c.get("quote") or "", answer, c["n"])
        _say(out, f"  [{c['n']}] {c['doc']}{citation_label(c)}, page {c['page']}: “{quote}”")
        if c.get("image"):
            _say(out, (f"      page image: {c['image']}", "dim"))
    for r in result.get("related", []):
        _say(out, (f"  related, not an answer: {r['doc']}, page {r['page']}: “{(r.get('quote') or '')[:200]}”", "dim"))
        if r.get("image"):
            _say(out, (f"      page image: {r['image']}", "dim"))
    ps = result.get("page_search") or {}
    if (ps.get("status") == "off" and result.get("route") == "visual"
            and ps.get("cause") not in PAGE_SEARCH_CAUSES_IN_ANSWER):  # why the image did not decide, once
        _say(out, (f"page-image search: {ps.get('reason', 'off')}", "dim"))


def outcome(result: dict) -> str:
    """A run's outcome, one word for the `ask` footer and the `run` view alike: refused (the SQL guard or the
    hallucination check refused), not found, small talk, grounded or not grounded."""
    return ("refused" if result.get("refused") else "not found" if result.get("found") is False
            else "small talk" if result.get("route") == "chitchat"
            else "grounded" if result.get("grounded") else "not grounded")


def sql_line(result: dict) -> None:
    """The "SQL:" line of an sql-route result, unless the answer already shows the query (an answered query ends
    with "Source: SQL over …" and the SQL): the SQL and its row count, or "refused, not run" for a statement the
    guard refused (nothing ran, so there is no row count)."""
    sql = result.get("sql")
    if not sql or sql in (result.get("answer") or ""):
        return
    n = result.get("row_count", 0)
    _say(out, ("SQL:", "bold"), " ", sql, " (refused, not run)" if result.get("refused")
         else f" ({n} row{'s' if n != 1 else ''})")


def citation_label(c: dict) -> str:
    """ (title; validity; needs review; shown fields) after the name of a cited document that has metadata
    (relayrag.metadata); "" for one without (its title is only the extracted first line)."""
    if c.get("validity") is None:
        return ""
    parts = [c["title"]] if c.get("title") and c.get("title") != c.get("doc") else []
    if c.get("validity"):
        parts.append(f"validity {c['validity']}")
    if c.get("needs_review"):
        parts.append("needs review")
    parts += [f"{k}: {v}" for k, v in (c.get("shown") or {}).items()]
    return f" ({'; '.join(parts)})" if parts else ""


@app.command()
def search(query: str = typer.Argument(..., help="What to look for (a question or keywords)."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           k: int = typer.Option(5, "-k", min=1, max=100, help="How many chunks to show."),
           arm: str = typer.Option("hybrid", "--arm", help="dense | bm25 | hybrid."),
           filters: Optional[list[str]] = typer.Option(None, "--filter", help=FILTER_HELP),
           as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Retrieval only, no LLM and no run record: the top chunks for QUERY, filters applied inside retrieval
    (expired documents are left out unless --filter include_expired=true)."""
    with _user_errors(as_json):
        result = _service().search(query, collection, k=k, arm=arm, filters=filters or []).model_dump(mode="json")
    if as_json:
        _print_json(result)
        return
    if result["hits"] and result.get("good_match") is False:
        _say(out, ("no good match:", "bold yellow"), f" none of these {len(result['hits'])} chunks looks relevant to the "
             "query (each P(relevant) < 0.5, and none holds enough of its words); they are only the closest ones")
    for h in result["hits"]:
        label = f" ({h['title']}; validity {h['validity']})" if h.get("validity") else ""
        rel = f" · P(relevant) {h['p_relevant']:.2f}" if h.get("p_relevant") is not None else ""
        if h.get("relevant") and (h.get("p_relevant") or 0) < 0.5:  # why a hit with a low P still counts
            rel += f" · holds {h['words']:.0%} of the query's words"
        _say(out, (f"{h['rank']}. {h['doc']}", "bold"), label, f", page {h['page']} · score {h['score']:.4f}{rel}")
        _say(out, "   ", " ".join(h["text"].split())[:300])
    if not result["hits"]:
        _say(out, "no chunk matched")


def _warn_llm_fallback(result: dict, service) -> None:
    """One stderr warning when any stage fell back to its no-LLM method because the LLM failed."""
    failed = [s for s in result.get("stages", []) if s.get("llm_error")]
    if failed:
        names = ", ".join(dict.fromkeys(s["name"] for s in failed))
        _say(err, ("warning:", "yellow"), f" the LLM failed, so {names} used the no-LLM method; "
             f"{service.llm_endpoint()}: {failed[0]['llm_error']}")


MARKERS = re.compile(r"((?:\s*\[\d+\])+)")
QUOTE_CHARS = 400  # a longer quote is shown as a window around the sentence it supports


def display_quote(quote: str, answer: str, n: int, limit: int = QUOTE_CHARS) -> str:
    """The part of citation `n`'s quote to show: the whole quote when it is at most `limit` characters;
    else a window around the answer sentence(s) that cite [n] where the quote contains them verbatim
    (the extractive answer quotes its sentences; a table row comes after its header, so a plain prefix
    could end before the row), never cutting those sentences; else the first `limit` characters. Cuts
    are marked with '…'."""
    if len(quote) <= limit:
        return quote
    parts = MARKERS.split(answer)
    spans = []
    for text, marks in zip(parts[0::2], parts[1::2]):
        if n in {int(m) for m in re.findall(r"\[(\d+)\]", marks)}:
            sent = " ".join(text.split())
            at = quote.find(sent) if sent else -1
            if at >= 0:
                spans.append((at, at + len(sent)))
    if not spans:
        return quote[:limit].rstrip() + " …"
    s, e = min(a for a, _ in spans), max(b for _, b in spans)
    room = max(0, limit - (e - s))
    start = max(0, s - (room * 2) // 3)  # more context before (a table's header), less after
    end = min(len(quote), e + (room - (s - start)))
    return ("… " if start else "") + quote[start:end].strip() + (" …" if end < len(quote) else "")


@app.command()
def run(run_id: str = typer.Argument(..., help="A run_id printed by `ask`."),
        as_json: bool = typer.Option(False, "--json", help="Print the run's record and per-stage trace as one JSON "
                                     "object ({run, trace})")):
    """Show a stored run: question, route, arm (and the bandit's draws), outcome (grounded, not grounded, not
    found, refused or small talk, as `ask` says it), reward, the answer as `ask` prints it (SQL, notes, citations,
    the related passages of a "not found") and one line per stage with its time and method. --json prints the
    record and trace for machines (an error is `{"error": ...}` and exit code 2)."""
    with _user_errors(as_json=as_json):
        detail = _service().get_run(run_id)
    if as_json:
        _print_json({"run": detail.record, "trace": detail.trace})
        return
    show_run(detail.record, detail.trace, detail.result.to_dict())


REWARD_BASIS = {  # relayrag.records.ArmReward.basis: which scorer found a relevant chunk in an arm's top 10
    "judge": "the reward judge rated a passage in an arm's top 10 relevant",
    "llm": "the LLM judged a passage in an arm's top 10 relevant",
    "grade": "grade kept a passage in an arm's top 10; the reward judge rated none >= 0.5",
}


def reward_line(rec: dict, result: dict) -> str:
    """The text after `reward:` in `relayrag run`: the value and which scorer decided it (the last grade
    attempt's `rewards` entry), or why there is none — so a reward of "—" next to grade's n_relevant 3 says
    that grade's relevant passages were not in any arm's top 10 rather than contradicting it."""
    reward = result.get("reward")
    last = (rec.get("rewards") or [{}])[-1]
    if isinstance(reward, (int, float)):
        why = REWARD_BASIS.get(str(last.get("basis")))
        return f" {reward:.3f} (DCG@10 vs the best arm's, by the reward judge's scores{'; ' + why if why else ''})"
    if not rec.get("arm_lists"):
        return " — (none: no retrieval)"
    kept = len(rec.get("relevant") or [])
    if rec.get("rewards") and "basis" not in last:  # recorded before grade's verdict counted (no `basis`)
        return " — (none: the reward judge rated no passage in an arm's top 10 >= 0.5)"
    if kept:
        return (f" — (none: grade kept {kept} passage{'s' if kept != 1 else ''}, none in an arm's top 10, and the"
                " reward judge rated none there >= 0.5)")
    return " — (none: neither grade nor the reward judge found a relevant passage)"


def show_run(rec: dict, trace: list[dict], result: dict) -> None:
    """A run for a person (`relayrag run`): what was asked and how it was answered, then its stages."""
    import time as _time
    flag = outcome(result)
    when = rec.get("created_at")
    stamp = _time.strftime("%Y-%m-%d %H:%M:%S", _time.localtime(when)) if isinstance(when, (int, float)) else "—"
    _say(out, ("run", "bold"), f" {result['run_id']} · {stamp}"
         + (" · evaluation run" if str(result["run_id"]).startswith("eval-") else ""))
    _say(out, ("Q:", "bold"), " ", result.get("question") or "")
    _say(out, ("collection:", "bold"), f" {result.get('collection') or '—'} · ", ("route:", "bold"),
         f" {result.get('route') or '—'} · ", ("outcome:", "bold"), f" {flag}")
    draws = rec.get("arm_draws") or {}
    arm = result.get("arm") or "—"
    if draws:
        arm += " (Thompson draws: " + ", ".join(f"{a} {v:.3f}" for a, v in draws.items()) + ")"
    elif result.get("arm"):
        arm += " (forced)"
    _say(out, ("arm:", "bold"), f" {arm} · ", ("reward:", "bold"), reward_line(rec, result),
         f" · retries {result.get('retry_count', 0)} · regenerations {result.get('regen_count', 0)}")
    if result.get("filters"):
        _say(out, ("filters:", "bold"), " ", "; ".join(result["filters"]))
    show_answer(result)
    total = sum(float(t.get("ms") or 0) for t in trace)
    _say(out, ("stages", "bold"), f" ({len(trace)}, {total:.0f} ms in all):")
    width = max((len(str(t.get("name", ""))) for t in trace), default=5)
    for t in trace:
        ms = t.get("ms")
        extra = f" · route {t['route']}" if t.get("route") else ""
        _say(out, f"  {str(t.get('name', '')).ljust(width)} {float(ms or 0):8.1f} ms  {t.get('method') or ''}{extra}")
        if t.get("llm_error"):
            _say(out, ("    LLM failed, used the no-LLM method: ", "yellow"), str(t["llm_error"]))
    _say(out, ("JSON: relayrag run " + str(result["run_id"]) + " --json", "dim"))
