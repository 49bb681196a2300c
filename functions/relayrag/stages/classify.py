"""classify: route a question to rag, chitchat, sql or visual, and open the run record.

No-LLM method `few-shot-embedding`: cosine k-NN (k=3) of the question's MiniLM embedding against
labelled example utterances, plus lexical checks — a message made only of courtesy phrases (greeting, thanks,
goodbye: relayrag.smalltalk) or with no content words left after greeting/stopword removal is chitchat; a
question with content words never is. Anything uncertain goes to rag (the safe default: it cites or
refuses). `visual` — the question asks what a figure, diagram, chart, photo, drawing or scanned page shows or
looks like (`visual_cue`: those words and "what does … look like", "show me", in English and Japanese) — goes
to page-image search (colpali_search), which falls back to text retrieval, saying why, when the collection
has no page vectors. `sql` is chosen only for collections with a warehouse (`relayrag warehouse load`): by the no-LLM
method when the collection has no documents, or when the question names one of the warehouse's tables or
touches a term of its SQL config (glossary / filter sets, any language: "売上" → revenue).
LLM method `llm`: schema-constrained JSON label.
"""

from __future__ import annotations

import enum
import functools
import re
from typing import Any

import numpy as np
from pydantic import Field

from relayrag.backends.embedder import query_vector
from relayrag.backends.llm import LLMError, complete_json
from relayrag.context import StageContext
from relayrag.errors import StageError
from relayrag.metadata import filter_items, parse_filters
from relayrag.naming import COLLECTION_PATTERN, MAX_QUESTION_CHARS, unknown_collection_message
from relayrag.records import new_run
from relayrag.smalltalk import courtesy_kinds
from relayrag.retrieval.tokenize import tokenize
from relayrag.stages.base import Stage, StageRequest, StageResponse, llm_failure, write_run


class Route(str, enum.Enum):
    rag = "rag"
    chitchat = "chitchat"
    sql = "sql"
    visual = "visual"


# What a question about what a page *shows* says (figures, diagrams, charts, photos, scans, appearance). Plain
# "figures" is left out: "sales figures" are numbers.
_VISUAL_EN = re.compile(
    r"\bfig\.|\b(figure|figures\s+\d|diagrams?|charts?|graphs?|plots?|photos?|photographs?|pictures?|images?|illustrations?|"
    r"drawings?|schematics?|maps?|screenshots?|logos?|scan(?:ned)?|sketch(?:es)?|infographics?|flowcharts?)\b"
    r"|\blooks?\s+like\b|\bshow\s+me\b|\b(?:what|which)\b[^?]*\b(?:shows?|depicts?|pictured|illustrates?)\b",
    re.IGNORECASE)
_VISUAL_JA = re.compile(r"図|グラフ|写真|画像|イラスト|チャート|スキャン|見た目|外観|どのように見え|どんな見た目")


def visual_cue(question: str) -> str | None:
    """The words that make `question` a question about what a page shows, or None."""
    m = _VISUAL_EN.search(question) or _VISUAL_JA.search(question)
    return m.group(0) if m else None


CHITCHAT_EXAMPLES = [
    "hi", "hello", "hello there", "hey", "good morning", "good evening", "how are you?", "how's it going?",
    "thanks", "thank you", "thanks a lot, that helped", "bye", "goodbye", "see you later", "who are you?",
    "what can you do?", "what is your name?", "nice to meet you", "you're great", "ok cool", "lol",
    "こんにちは", "こんばんは", "おはようございます", "ありがとう", "ありがとうございます", "さようなら",
    "あなたは誰ですか", "よろしくお願いします", "元気ですか",
]
RAG_EXAMPLES = [
    "What is the estimated cost of the proposed airworthiness directive?",
    "Which states had the most firearm background checks?",
    "How do self-locking nuts work?", "What does the document say about ethanol prices?",
    "Summarize the main findings.", "What are the side effects of the drug?",
    "When was the regulation published?", "Who is responsible for the inspection?",
    "How many work hours does the modification take?", "Explain the procedure for engine shutdown.",
    "Does vitamin D reduce the risk of fractures?", "What is the difference between the two methods?",
    "東京の人口は何人ですか", "この文書の目的は何ですか", "費用はいくらですか",
]


class ClassifyRequest(StageRequest):
    question: str = Field(..., min_length=1, max_length=MAX_QUESTION_CHARS)
    collection: str = Field(..., min_length=1, max_length=64, pattern=COLLECTION_PATTERN)
    filters: list[str] | dict[str, Any] | str | None = Field(
        None, description="Metadata filters for retrieval (relayrag.metadata): 'field=value' strings (or a map); "
                          "valid_on=YYYY-MM-DD, include_expired=true. Checked against the collection's schema.")


class ClassifyResponse(StageResponse):
    confidence: float = 0.0


@functools.lru_cache(maxsize=4)
def _prototypes(embedder) -> tuple[np.ndarray, list[str]]:
    texts = CHITCHAT_EXAMPLES + RAG_EXAMPLES
    labels = [Route.chitchat.value] * len(CHITCHAT_EXAMPLES) + [Route.rag.value] * len(RAG_EXAMPLES)
    # embedded once per model and stored (relayrag.backends.model_cache): a fresh process (each `relayrag ask`, a
    # cold start) would otherwise embed the 50-odd examples again before its first question
    from relayrag.backends import model_cache
    identity = getattr(embedder, "cache_identity", None)
    if identity is None:  # an embedder that cannot say which weights it runs is embedded each time
        return embedder.embed(texts, kind="query"), labels
    name = "prototypes-" + model_cache.key(identity(), texts)
    return model_cache.cached_array(name, lambda: embedder.embed(texts, kind="query")), labels


@functools.cache
def _greeting_tokens() -> frozenset[str]:
    return frozenset(tokenize(" ".join(CHITCHAT_EXAMPLES)))  # on first use: tokenize's stopwords import bm25s


def classify_no_llm(question: str, embedder) -> tuple[Route, float]:
    """chitchat or rag, with a confidence: a message made only of courtesy phrases (relayrag.smalltalk:
    "Thank you very much!", "bye", "ありがとうございます") is chitchat; so is one with no content words left after
    greeting/stopword removal, or one whose 3 nearest labelled examples are mostly small talk with at most two
    content words. Anything else is rag."""
    if courtesy_kinds(question):
        return Route.chitchat, 0.95
    content = [t for t in tokenize(question) if t not in _greeting_tokens()]
    vecs, labels = _prototypes(embedder)
    sims = vecs @ query_vector(embedder, question)
    top = np.argsort(-sims)[:3]
    votes = sum(1 for i in top if labels[i] == Route.chitchat.value)
    if not content and len(question) < 80:
        return Route.chitchat, 0.9
    if votes >= 2 and sims[top[0]] >= 0.75 and len(content) <= 2:
        return Route.chitchat, float(sims[top[0]])
    return Route.rag, float(1.0 - votes / 3 * 0.5)


SCHEMA = {"type": "object", "properties": {"route": {"type": "string", "enum": ["rag", "chitchat", "sql", "visual"]}},
          "required": ["route"], "additionalProperties": False}


def mentions_table(question: str, tables: list[str]) -> bool:
    """Does the question name a warehouse table (stemmed: "customers" matches Customer)?"""
    q = set(tokenize(question))
    return any(set(tokenize(t)) <= q for t in tables if tokenize(t))


def sql_terms(ctx: StageContext, collection: str, question: str) -> tuple[list[str], bool]:
    """The collection's SQL-config terms (glossary and filter names with synonyms, for the LLM prompt) and
    whether the question touches one (relayrag.sql.context.match_terms: stemmed words, CJK substrings).
    ([], False) without a config or when the stored config is unreadable."""
    from relayrag.errors import ConfigError
    from relayrag.sql.context import match_terms
    try:
        cfg = ctx.sql_config(collection)
    except ConfigError:
        return [], False
    if cfg is None:
        return [], False
    terms = [t for section in (cfg.glossary, cfg.filters) for name, e in section.items()
             for t in [name.replace("_", " "), *e.synonyms]]
    return terms, bool(match_terms(question, cfg))


def run(req: ClassifyRequest, ctx: StageContext) -> ClassifyResponse:
    warehouse = ctx.warehouse_record(req.collection)
    has_warehouse = warehouse is not None  # `relayrag warehouse load` wrote one for this collection
    meta = ctx.docstore.get_collection(req.collection)
    if meta is None and not has_warehouse:
        from relayrag.sql.registry import warehouse_collections
        known = sorted({c["name"] for c in ctx.docstore.list_collections()}
                       | set(warehouse_collections(ctx.settings.home)))  # as Service.list_collections lists them
        raise StageError(unknown_collection_message(req.collection, known))
    has_documents = bool(meta and meta.get("current_version"))
    tables = list(warehouse.get("tables") or []) if warehouse else []
    terms, touches_terms = sql_terms(ctx, req.collection, req.question) if warehouse else ([], False)
    items = filter_items(req.filters)
    if items:  # checked here, so a bad filter fails before anything runs (retrieve applies them)
        parse_filters(items, ctx.schemas.get(req.collection))
    ctx.docstore.create_run(req.run_id, new_run(req.run_id, req.question, req.collection,
                                                **({"filters": items} if items else {})))
    method, route, conf, llm_error = "few-shot-embedding", None, 0.0, None
    if ctx.llm is not None:
        try:
            allowed = "rag, chitchat, visual" + (", sql" if has_warehouse else "")
            tables_note = (f" The database has the tables: {', '.join(tables[:50])}." if has_warehouse else "")
            if terms:
                tables_note += f" Business terms answered from the database: {', '.join(terms[:80])}."
            out = complete_json(ctx.llm, [
                {"role": "system", "content": "Classify the user's message for a document assistant. "
                 f"Labels: {allowed}. rag = needs facts from the documents; chitchat = greeting, thanks, "
                 "small talk or questions about the assistant; visual = asks what a figure, diagram, chart, photo, "
                 "drawing or scanned page shows or looks like; sql = needs numbers from database tables."
                 + tables_note},
                {"role": "user", "content": req.question}], SCHEMA, max_tokens=20)
            route = Route(out["route"])
            if route == Route.chitchat and classify_no_llm(req.question, ctx.embedder)[0] != Route.chitchat:
                # the LLM chooses only among the routes the no-LLM checks allow: a question with content words
                # is never small talk (a small model labels how-to questions "chitchat" and then answers them
                # from its own knowledge)
                route = Route.rag
            if route == Route.sql and not has_warehouse:
                route = Route.rag
            if route == Route.visual and not has_documents:
                route = Route.sql if has_warehouse else Route.rag
            method, conf = "llm", 1.0
        except (LLMError, KeyError, ValueError) as exc:
            route, llm_error = None, llm_failure(exc)  # fall back to the no-LLM method; the trace says which ran
    if route is None:
        route, conf = route_no_llm(req.question, ctx.embedder, has_documents=has_documents, tables=tables,
                                   has_warehouse=has_warehouse, touches_terms=touches_terms)
        if ctx.llm is not None:
            method = "few-shot-embedding (llm failed)"
    if route == Route.rag and has_warehouse and not has_documents:
        route = Route.sql  # nothing to retrieve from: the tables are the collection's only source
    patch: dict[str, Any] = {"route": route.value, "route_method": method}
    if route == Route.chitchat:  # what the small-talk reply says the collection can answer (generate reads it)
        patch["small_talk"] = {"has_documents": has_documents, "has_tables": has_warehouse, "tables": tables[:20]}
    write_run(ctx, req.run_id, patch)
    return ClassifyResponse(run_id=req.run_id, route=route.value, method=method, confidence=round(conf, 3),
                            llm_error=llm_error)


def route_without_llm(ctx: StageContext, collection: str, question: str) -> tuple[str, float, bool, bool]:
    """The no-LLM branch of `run` on its own, writing nothing: (route, confidence, has_documents,
    has_warehouse). For front ends that route without running the pipeline (the assistant's deterministic
    router, relayrag.agent)."""
    warehouse = ctx.warehouse_record(collection)
    meta = ctx.docstore.get_collection(collection)
    has_warehouse, has_documents = warehouse is not None, bool(meta and meta.get("current_version"))
    tables = list(warehouse.get("tables") or []) if warehouse else []
    touches_terms = sql_terms(ctx, collection, question)[1] if warehouse else False
    route, conf = route_no_llm(question, ctx.embedder, has_documents=has_documents, tables=tables,
                               has_warehouse=has_warehouse, touches_terms=touches_terms)
    if route == Route.rag and has_warehouse and not has_documents:
        route = Route.sql
    return route.value, conf, has_documents, has_warehouse


def route_no_llm(question: str, embedder, *, has_documents: bool, has_warehouse: bool, tables: list[str],
                 touches_terms: bool) -> tuple[Route, float]:
    """The no-LLM classifier, one for the stage and for front ends that only ask where a question goes (MCP
    `classify`, the assistant's router): classify_no_llm, then a warehouse-only collection (or a question
    naming a table or touching an SQL-config term) goes to sql, and a question about what a page shows
    (visual_cue) in a collection with documents goes to visual."""
    route, conf = classify_no_llm(question, embedder)
    if route == Route.rag and has_warehouse and (not has_documents or mentions_table(question, tables)
                                                 or touches_terms):
        return Route.sql, (0.9 if not has_documents else 0.6)
    if route == Route.rag and has_documents and visual_cue(question):
        return Route.visual, 0.8
    return route, conf


STAGE = Stage("classify", ClassifyRequest, ClassifyResponse, run,
              lambda r: {"route": r.route, "confidence": r.confidence})
