"""The run record: what the stages of one run hand each other through the docstore, typed.

A run is one question through workflows/rag.yaml. `classify` (or the `sql_query` tool) creates its record;
every later stage reads it and writes a patch back (`DocStore.update_run`). The record is a JSON object in
the docstore (SQLite locally, one Firestore document in the cloud: at most 1 MiB, so candidates and SQL rows
are capped by the stages that write them). This module gives that object a schema:

- `RunRecord` — the record; unknown keys are kept (`extra="allow"`), so a stage that adds a key never
  breaks a reader, and older records still validate.
- `Candidate`, `Citation`, `QueryVariant`, `ArmReward` — its structured items.
- `ClassifyRoute`, `GradeRoute`, `CheckRoute` — what the workflow switches on after classify, grade and
  hallucination_check (the `route` of their responses).
- `RunResult` and `build_result` — the user-facing result of a run that every front end shows (CLI `ask
  --json`, MCP `ask`/`get_run`, the cloud engine), derived from the record and the stage trace.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relayrag.enums import ChoiceEnum
from relayrag.metadata import citation_notes

# Firestore's document limit is 1 MiB (1,048,576 bytes, field names included); a record must fit in it.
FIRESTORE_DOCUMENT_BYTES = 1_048_576


class ClassifyRoute(ChoiceEnum):
    """classify's decision: answer from documents, answer small talk without retrieval, query tables, or find the
    page by its image (page-image search)."""

    rag = "rag"
    chitchat = "chitchat"
    sql = "sql"
    visual = "visual"


class GradeRoute(ChoiceEnum):
    """grade's decision: go on to generate, or retrieve again with the other arm (bounded by max_retries)."""

    pass_ = "pass"
    retry = "retry"


class CheckRoute(ChoiceEnum):
    """hallucination_check's decision: the answer is grounded, regenerate it, or refuse (bounded retries);
    not_found: generate found no answer; no_claims: a chitchat reply; nothing to check in either (the run ends,
    not grounded)."""

    grounded = "grounded"
    not_found = "not_found"
    no_claims = "no_claims"
    regenerate = "regenerate"
    refuse = "refuse"


class _Item(BaseModel):
    model_config = ConfigDict(extra="allow")


class Candidate(_Item):
    """A retrieved chunk of the pinned index version: `row` in the snapshot, scores added by each stage
    (retrieve_score: the arm's fused score; retrieve_rank: 1-based rank in the chosen arm's list before
    rerank; rerank_score; best_sentence: [start, end) character offsets)."""

    chunk_id: str
    row: int
    retrieve_score: float | None = None
    retrieve_rank: int | None = None


class Citation(_Item):
    """[n] in the answer: the chunk it cites, its document (file name) and 1-based page, a quote; the
    document's title; for a document with metadata (relayrag.metadata) its validity state (current, expiring,
    expired, not yet valid, unknown), valid_from / valid_until, needs_review, and the schema's shown fields; where
    the page has a page image, its `image` and `thumbnail` (a local file path or gs:// URI of a PNG)."""

    n: int
    doc: str
    page: int
    chunk_id: str
    quote: str = ""
    title: str | None = None
    validity: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    needs_review: bool | None = None
    shown: dict[str, Any] | None = None
    image: str | None = None
    thumbnail: str | None = None


class PageCandidate(_Item):
    """A page found by page-image search (colpali_search): its document, source key and 1-based page, the
    MaxSim score and 1-based rank, how many text chunks the page has, and its image / thumbnail references."""

    doc: str
    source: str
    page: int
    score: float
    rank: int
    sha256: str = ""
    n_chunks: int = 0
    image: str | None = None
    thumbnail: str | None = None


class QueryVariant(_Item):
    """A retrieval query written by hyde: the original question, a hypothetical answer or a rewrite."""

    text: str
    kind: str
    weight: float = 1.0


class ArmReward(_Item):
    """One grade attempt's reward: the chosen arm's, and every computed arm's (relative DCG@10). `reward` is None
    when no arm's top 10 held a relevant chunk: that attempt teaches the bandit nothing. `basis` names the scorer
    that found one (relayrag.retrieval.reward.reward_basis): "judge" (the reward judge, P >= 0.5), "llm" (only
    the LLM's yes/no) or "grade" (only a chunk grade kept; the judge's scores still rank the arms); None with no
    reward, and in records written before it existed."""

    arm: str | None = None
    reward: float | None = None
    basis: str | None = None
    arm_rewards: dict[str, float] = Field(default_factory=dict)


# page_search causes (colpali_search: why page-image search did not run) that a visual run's answer explains itself
# (relayrag.stages.page_answer.page_search_note): a front end does not say them again
PAGE_SEARCH_CAUSES_IN_ANSWER = frozenset({"no_model", "no_vectors", "other_model", "unavailable"})


class RunRecord(BaseModel):
    """The docstore record of one run. Keys appear as the stages run; every field but the identity is
    optional. Unknown keys are kept (`extra="allow"`)."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    question: str = ""
    collection: str = ""
    created_at: float | None = None
    # classify
    route: ClassifyRoute | None = None
    route_method: str | None = None
    filters: list[str] = Field(default_factory=list)  # metadata filters as given (relayrag.metadata)
    # hyde
    queries: list[QueryVariant] = Field(default_factory=list)
    # retrieve (snapshot_version pins the index version every later stage reads)
    arm: str | None = None
    arm_draws: dict[str, Any] = Field(default_factory=dict)
    bandit_context: str | None = None          # the question's script (relayrag.retrieval.bandit)
    dense_readable: bool | None = None         # whether the embedder reads the question
    fusion_weights: dict[str, float] = Field(default_factory=dict)
    arm_lists: dict[str, list[int]] = Field(default_factory=dict)  # top-10 snapshot rows per computed arm
    snapshot_version: str | None = None
    filters_applied: dict[str, Any] | None = None  # what retrieve applied: conditions, valid_on, rows passing
    candidates: list[Candidate] = Field(default_factory=list)
    candidate_ids: list[str] | None = None    # distributed backend: chunk id of each candidate-snapshot row
    bm25_stats: dict[str, Any] | None = None  # {n, avgdl, df, matches} of the run's query tokens, whole version (retrieval.view)
    # rerank / grade
    reranked_k: int | None = None
    relevant: list[Any] = Field(default_factory=list)
    reward: int | float | None = None
    rewards: list[ArmReward] = Field(default_factory=list)
    retry_count: int = 0
    # colpali_search: pages found by their image, and whether / why page-image search ran
    # (page_search: {status: on|off, mode: visual|fuse, model, n_pages, reason})
    page_candidates: list[PageCandidate] = Field(default_factory=list)
    page_search: dict[str, Any] | None = None
    # generate / hallucination_check
    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    found: bool = True
    grounded: bool = False
    refused: bool = False
    regen_count: int = 0
    answer_sentences: list[dict[str, Any]] = Field(default_factory=list)
    answerability: dict[str, Any] | None = None  # support signals of the best sentence (stages/answerability.py)
    answers_question: bool | None = None  # hallucination_check: does the answer answer the question?
    related: list[dict[str, Any]] = Field(default_factory=list)  # "not found": closest passages, not an answer
    # sql
    sql: str | None = None
    rows: list[list[Any]] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    row_count: int = 0

    def json_bytes(self) -> int:
        """Size of the record as JSON (UTF-8), to compare with FIRESTORE_DOCUMENT_BYTES."""
        return len(self.model_dump_json(exclude_unset=True).encode("utf-8"))


def new_run(run_id: str, question: str, collection: str, **fields: Any) -> dict:
    """A fresh run record (what classify, or a front end running one stage alone, creates): identity, the
    question, counters at 0, and `fields` (e.g. route, route_method). Validated as a RunRecord."""
    import time
    rec = {"run_id": run_id, "question": question, "collection": collection, "created_at": time.time(),
           "retry_count": 0, "regen_count": 0, **fields}
    RunRecord.model_validate(rec)
    return rec


_FIELD_ADAPTERS: dict[str, Any] = {}


def check_patch(patch: dict) -> dict:
    """`patch` if every key RunRecord types holds a value of that type and its JSON fits a Firestore document;
    unknown keys pass (stages may add keys). Raises RelayragError naming the key and why."""
    import json

    from pydantic import TypeAdapter, ValidationError

    from relayrag.errors import RelayragError
    for key, value in patch.items():
        field = RunRecord.model_fields.get(key)
        if field is None or key == "run_id":
            continue
        adapter = _FIELD_ADAPTERS.get(key)
        if adapter is None:
            adapter = _FIELD_ADAPTERS[key] = TypeAdapter(field.annotation)  # type: ignore[arg-type]
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in (key, *first["loc"]))
            raise RelayragError(f"run record patch: {where}: {first['msg']}") from None
    size = len(json.dumps(patch, ensure_ascii=False, default=str).encode("utf-8"))
    if size > FIRESTORE_DOCUMENT_BYTES // 2:
        raise RelayragError(f"run record patch of {size:,} bytes (keys {', '.join(sorted(patch))}) would not fit a "
                            f"Firestore document ({FIRESTORE_DOCUMENT_BYTES:,} bytes with the rest of the record)")
    return patch


class StageTiming(BaseModel):
    """One stage call of a run: name, milliseconds, the method it used, and why its LLM call failed if it
    fell back to the no-LLM method (only then)."""

    model_config = ConfigDict(extra="allow")

    name: str
    ms: int | float
    method: str | None = None
    llm_error: str | None = None
    llm_fallbacks: int | None = None


class RunResult(BaseModel):
    """The user-facing result of a run (CLI `ask --json`, MCP `ask`, the cloud engine's `ask`)."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    question: str | None = None
    collection: str | None = None
    route: str | None = None
    answer: str = ""
    citations: list[Citation] = Field(default_factory=list)
    arm: str | None = None
    grounded: bool = False
    refused: bool = False
    found: bool = True
    reward: int | float | None = None
    retry_count: int = 0
    regen_count: int = 0
    stages: list[StageTiming] = Field(default_factory=list)
    llm_fallbacks: int = 0  # stage calls of this run that fell back to their no-LLM method
    related: list[dict[str, Any]] = Field(default_factory=list)
    pages: list[PageCandidate] = Field(default_factory=list)  # visual route: the pages found by their image
    page_search: dict[str, Any] | None = None
    sql: str | None = None
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    notes: list[str] = Field(default_factory=list)  # about the cited documents' validity and review state
    filters: list[str] = Field(default_factory=list)  # the metadata filters the run was asked with

    def to_dict(self) -> dict:
        """The JSON object front ends print: the keys `build_result` set, nothing added."""
        return self.model_dump(mode="json", exclude_unset=True)


EVAL_RUN_PREFIX = "eval-"  # run_ids of evaluation runs (relayrag.evaluation); production runs get a bare hex id


def eval_run_id() -> str:
    """A fresh run_id that marks its run as an evaluation run (EVAL_RUN_PREFIX + 12 hex digits)."""
    import uuid
    return f"{EVAL_RUN_PREFIX}{uuid.uuid4().hex[:12]}"


def is_eval_run(run: dict) -> bool:
    """Whether a run record (with its `run_id`, as docstore `list_runs` returns it) is an evaluation run: its
    run_id starts with EVAL_RUN_PREFIX or it says `origin: "eval"`. Dashboards leave such runs out of
    production statistics."""
    return str(run.get("run_id") or "").startswith(EVAL_RUN_PREFIX) or run.get("origin") == "eval"


def miss_line(row: dict) -> str | None:
    """The live progress line of a question the set got wrong (None otherwise): an answerable question answered
    without an expected string, refused, or an unanswerable one answered; with the answer's text."""
    answer = " ".join(str(row.get("answer") or "").split())
    short = answer if len(answer) <= 160 else answer[:159] + "…"
    if row.get("unanswerable"):
        if row.get("refused"):
            return None
        return f"answered an unanswerable question {row['id']}: {row.get('question', '')} → {short}"
    if row.get("correct") is not False:
        return None
    expected = " | ".join(str(x) for x in row.get("expected") or [])
    if row.get("refused"):
        return f"refused {row['id']}: {row.get('question', '')} (expected {expected})"
    return f"wrong {row['id']}: {row.get('question', '')} → {short} (expected {expected})"


CITATION_KEYS = ("n", "doc", "page", "chunk_id", "quote", "title", "validity", "valid_from", "valid_until",
                 "needs_review", "shown", "image", "thumbnail")


def result_from_record(run_id: str, run: dict, trace: list[dict]) -> RunResult:
    """`RunResult` from a stored record (a dict as the docstore returns it) and its trace."""
    return RunResult.model_validate({
        "run_id": run_id,
        "question": run.get("question"),
        "collection": run.get("collection"),
        "route": run.get("route"),
        "answer": run.get("answer", ""),
        "citations": [{k: c[k] for k in CITATION_KEYS if k in c} for c in run.get("citations", [])],
        # sentences about the cited documents: unknown validity, needs review, expired (only when any applies)
        **({"notes": notes} if (notes := citation_notes(run.get("citations") or [])) else {}),
        **({"filters": run["filters"]} if run.get("filters") else {}),
        "arm": run.get("arm"),
        "grounded": bool(run.get("grounded", False)),
        "refused": bool(run.get("refused", False)),
        "found": bool(run.get("found", True)),
        "reward": run.get("reward"),
        "retry_count": run.get("retry_count", 0),
        "regen_count": run.get("regen_count", 0),
        # llm_error: why a stage's LLM call failed and it fell back to its no-LLM method (only then)
        # llm_fallbacks: that stage's fallbacks in a row in the serving process (a dead LLM path keeps growing)
        "stages": [{"name": t["name"], "ms": t["ms"], "method": t["method"],
                    **({"llm_error": t["llm_error"]} if t.get("llm_error") else {}),
                    **({"llm_fallbacks": t["llm_fallbacks"]} if t.get("llm_fallbacks") else {})} for t in trace],
        # llm_fallbacks: stage calls of this run that fell back (only when some did, like llm_error)
        **({"llm_fallbacks": n} if (n := sum(1 for t in trace if t.get("llm_error"))) else {}),
        # sql route: the query that answered, its rows (capped) and how many it returned
        "sql": run.get("sql"),
        "rows": run.get("rows", []),
        "row_count": run.get("row_count", 0),
        # not found / refused: the closest passages, offered as related reading (only then)
        **({"related": [{k: r[k] for k in ("doc", "page", "chunk_id", "quote", "image", "thumbnail") if k in r}
                        for r in run["related"]]} if run.get("related") else {}),
        # page-image search: the pages it found (doc, page, score, image, thumbnail) and whether / why it ran
        **({"pages": run["page_candidates"]} if run.get("page_candidates") else {}),
        **({"page_search": run["page_search"]} if run.get("page_search") else {}),
    })


def build_result(ctx, run_id: str) -> dict:
    """The user-facing result of a run, from its record and trace in `ctx.docstore` (see `RunResult`)."""
    run = ctx.docstore.get_run(run_id) or {}
    return result_from_record(run_id, run, ctx.docstore.get_trace(run_id)).to_dict()
