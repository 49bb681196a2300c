"""Bounded views of results for MCP clients: limits, clipping, quotes, citations, ingest summaries."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

# -- limits: what one tool result may carry ------------------------------------------------------------
QUOTE_CHARS = 300          # a citation / search quote
ANSWER_CHARS = 4000        # an answer
MAX_CITATIONS = 10
MAX_SEARCH_K = 20
MAX_FAILED = 50            # per-file errors listed by ingest / delete
MAX_DOCUMENTS = 200
MAX_COLLECTIONS = 200
MAX_STAGES = 60            # trace entries returned by get_run
MAX_JSON_CHARS = 20_000    # a workflow's return value, a stage's outputs
MAX_SQL_ROWS = 50          # rows returned by sql_query (the run record keeps up to 100)
CELL_CHARS = 300           # a text cell of an sql_query row


def clip(text: Any, limit: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def cap_json(value: Any, limit: int = MAX_JSON_CHARS) -> Any:
    """`value` if its JSON is at most `limit` characters, else a marker with a clipped JSON preview."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    if len(text) <= limit:
        return value
    return {"truncated": True, "chars": len(text), "preview": clip(text, limit)}


def iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds") if ts else None


def citation_view(c: dict) -> dict:
    out = {k: c[k] for k in ("n", "doc", "page", "chunk_id") if k in c}
    out["quote"] = clip(c.get("quote", ""), QUOTE_CHARS)
    out.update({k: c[k] for k in ("image", "thumbnail") if c.get(k)})
    if c.get("title"):
        out["title"] = clip(c["title"], 200)
    for k in ("validity", "valid_from", "valid_until", "needs_review"):
        if c.get(k) is not None:
            out[k] = c[k]
    if c.get("shown"):
        out["shown"] = {k: clip(v, 200) if isinstance(v, str) else v for k, v in list(c["shown"].items())[:20]}
    return out


MAX_IMAGES = 3  # page thumbnails returned as MCP image content blocks with one ask / search result


def thumbnails(result: dict) -> list[str]:
    """The page thumbnails a result shows, best first, each once (at most MAX_IMAGES): an ask result's citations'
    pages, then (visual route) the pages found by their image, then related passages; a search result's hits."""
    refs = [c.get("thumbnail") for key in ("citations", "pages", "related", "results") for c in result.get(key) or []]
    return list(dict.fromkeys(r for r in refs if r))[:MAX_IMAGES]


def result_view(result: dict) -> dict:
    """A run's user-facing result (relayrag.records.build_result), bounded."""
    cites = result.get("citations") or []
    out = dict(result)
    out["answer"] = clip(result.get("answer", ""), ANSWER_CHARS)
    out["citations"] = [citation_view(c) for c in cites[:MAX_CITATIONS]]
    if len(cites) > MAX_CITATIONS:
        out["citations_omitted"] = len(cites) - MAX_CITATIONS
    return out


def sql_cell(v: Any) -> Any:
    return clip(v, CELL_CHARS) if isinstance(v, str) else v


def best_quote(text: str, query: str, limit: int = QUOTE_CHARS) -> str:
    """The part of a chunk that best matches the query: starts at the sentence with most query terms."""
    if len(text) <= limit:
        return text
    from relayrag.retrieval.tokenize import tokenize
    from relayrag.text import split_sentences
    terms = set(tokenize(query))
    spans = split_sentences(text)
    if not terms or not spans:
        return clip(text, limit)
    best = max(range(len(spans)), key=lambda i: (len(terms & set(tokenize(text[spans[i][0]:spans[i][1]]))), -i))
    start = spans[best][0]
    prefix = "…" if start > 0 else ""
    return prefix + clip(text[start:], limit - len(prefix))


def bounded_summary(summary: dict) -> dict:
    failed = summary.get("failed") or []
    warnings = summary.get("warnings") or []
    out = dict(summary)
    out["failed"] = [{"path": f.get("path"), "error": clip(f.get("error"), 500)} for f in failed[:MAX_FAILED]]
    out["warnings"] = [{"path": w.get("path"), "warning": clip(w.get("warning"), 300)} for w in warnings[:MAX_FAILED]]
    if len(failed) > MAX_FAILED:
        out["failed_omitted"] = len(failed) - MAX_FAILED
    if len(warnings) > MAX_FAILED:
        out["warnings_omitted"] = len(warnings) - MAX_FAILED
    return out
