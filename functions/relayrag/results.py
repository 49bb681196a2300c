"""The pydantic results `relayrag.service.Service` returns (re-exported there): search hits and results, an
ingest's summary, a warehouse's and a collection's description, a stored run, a guarded SQL query's result, the
classifier's route decision and a workflow run. `RunResult` (an `ask`) lives in relayrag.records."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relayrag.records import RunResult

class SearchHit(BaseModel):
    """One retrieved chunk: 1-based rank, the arm's fused score, where it comes from, and its text."""

    rank: int
    score: float
    p_relevant: float | None = None  # the reward judge's P(relevant) (relayrag.retrieval.reward); None if not judged
    words: float | None = None  # the IDF-weighted share of the query's words the chunk holds; None if not judged
    relevant: bool | None = None  # judged a match: P(relevant) >= 0.5, or it holds enough of the query's words
                                  # (service.words_needed); None if not judged
    doc: str
    page: int
    chunk_id: str
    title: str = ""
    text: str
    source: str | None = None
    image: str | None = None  # the page's image and thumbnail (PNG: a local path or gs:// URI), if it has one
    thumbnail: str | None = None
    metadata: dict[str, Any] | None = None  # the document's metadata (relayrag.metadata), when it has any
    validity: str | None = None             # current | expiring | expired | not yet valid | unknown


class SearchResult(BaseModel):
    """Retrieval only: the top-k chunks of `collection` for `query` at index `version`. `matches` counts the
    chunks that passed the filters within the ranking depth (all chunks when filtering)."""

    query: str
    collection: str
    version: str
    arm: str
    filters: dict[str, Any] = Field(default_factory=dict)
    matches: int
    hits: list[SearchHit]
    good_match: bool | None = None  # some hit is `relevant`; False: none is (the CLI says "no good match")


class IngestResult(BaseModel):
    """relayrag.ingest.pipeline.IngestSummary.to_dict(), typed: collection, new index version, file counts,
    per-file failures and warnings, chunks embedded and total, seconds, page images (indexed / rendered /
    embedded) and the page-image search status line; delete adds `deleted_paths`."""

    model_config = ConfigDict(extra="allow")

    collection: str
    version: str | None
    files: dict[str, int]
    failed: list[dict] = Field(default_factory=list)
    warnings: list[dict] = Field(default_factory=list)
    chunks_embedded: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    pages: dict[str, int] = Field(default_factory=dict)  # page images: indexed, rendered, embedded (this ingest)
    page_search: str = ""  # page-image search on (pages, model), or why it is off and how to turn it on
    embedder_note: str = ""  # first ingest of a CJK corpus: the multilingual embedder chosen, or how to install it

    def to_dict(self) -> dict:
        return self.model_dump(mode="json", exclude_unset=True)


class WarehouseInfo(BaseModel):
    """A collection's tables (warehouse engine `duckdb` or `bigquery`) and where its SQL config is stored (None:
    no config)."""

    model_config = ConfigDict(extra="allow")

    tables: list[str]
    engine: str
    config: str | None = None


class CollectionInfo(BaseModel):
    """A collection: its current index version (None: tables only), docstore metadata (stats: n_files,
    n_documents, n_chunks; updated_at: epoch seconds) and its warehouse (None: no tables)."""

    model_config = ConfigDict(extra="allow")

    name: str
    current_version: str | None = None
    stats: dict = Field(default_factory=dict)
    warehouse: WarehouseInfo | None = None

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")


class RunDetail(BaseModel):
    """A stored run: its record (candidates dropped: internal row numbers), its stage trace, and the
    user-facing result derived from both."""

    run_id: str
    record: dict
    trace: list[dict]
    result: RunResult


class SqlQueryResult(BaseModel):
    """The sql stage alone on a question. status: ok (sql, tables, columns, rows, row_count), refused (the
    guard's reason: nothing ran), error (the database error after one repair round), unavailable (no LLM)."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    collection: str
    question: str
    status: Literal["ok", "refused", "error", "unavailable"]
    answer: str = ""
    enhanced_question: str | None = None
    message: str | None = None
    reason: str | None = None
    error: str | None = None
    sql: str | None = None
    tables: list[str] = Field(default_factory=list)
    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    attempts: int = 0


class RouteDecision(BaseModel):
    """The no-LLM classifier's route for a question: rag (documents), sql (tables), chitchat (and any route a
    later classifier adds); its confidence (0-1) and what the collection holds."""

    route: str
    confidence: float
    has_documents: bool
    has_warehouse: bool


class WorkflowRun(BaseModel):
    """One workflow run: its return value, and the run's result when the workflow wrote a run record."""

    workflow: str
    run_id: str
    value: Any = None
    result: RunResult | None = None
