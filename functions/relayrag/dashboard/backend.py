"""Everything the dashboard does to relayrag, in one module (the adapter the pages call).

Operations the CLI and the MCP gateway share go through relayrag.service.Service (ask on either engine,
runs, collections, ingest, delete, warehouse schema and SQL config, evaluations). The bandit's posteriors, snapshot
versions, the guard's verdict on a query and the documents bucket go through Service methods too; what only
the dashboard reads (recent runs, ingestion records and dead letters, the evaluation history in the blob
store) is read here from the service's context. No module of the dashboard imports a stage or a backend
(tests/unit/test_frontend_imports.py).
Functions raise RelayragError (or a subclass: NotFoundError) with a message fit for the page on bad input;
anything else is a bug.
"""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
import uuid
from collections.abc import Callable
from pathlib import Path

from relayrag.errors import RelayragError

SOURCES_DIR = "sources"           # RELAYRAG_HOME/sources/<collection>/: the dashboard's uploads
EVAL_PREFIX = "dashboard/evals/"  # blob store: one JSON report per evaluation run
MAX_NAME_CHARS = 180
MAX_NAME_BYTES = 200   # UTF-8 bytes of an upload's name (82 CJK characters are 246 bytes; file systems allow 255)
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def service():
    """The service over the process-wide context (looked up per call: tests and hosts may replace it)."""
    from relayrag.service import Service
    return Service()


def ctx():
    return service().ctx


def settings():
    return service().settings


def check_collection(name: str) -> str:
    from relayrag.naming import validate_collection
    try:
        validate_collection(name)
    except ValueError as exc:
        raise RelayragError(str(exc)) from None
    return name


# -- collections ----------------------------------------------------------------------------------------
def list_collections() -> list[dict]:
    """[{name, current_version, updated_at, stats, warehouse}] sorted by name (Service.list_collections; the
    reserved `_unroutable` dead-letter collection is left out)."""
    return [c.to_dict() for c in service().list_collections() if not c.name.startswith("_")]


def collection_detail(name: str) -> dict:
    """{collection, exists, warehouse, files, dead_letters, source_dir}. A valid name that has no index yet gives
    an empty collection (`exists` False): its page is where the first upload creates it. `warehouse`: its SQL
    warehouse ({tables (names), engine, config}: relayrag warehouse load) or None."""
    check_collection(name)
    c = ctx()
    meta = c.docstore.get_collection(name)
    wh = next((x.to_dict().get("warehouse") for x in service().list_collections() if x.name == name), None)
    return {"collection": meta or {"name": name, "current_version": None, "stats": {}}, "exists": meta is not None,
            "warehouse": wh,
            "versions": collection_versions(name),
            "files": service().list_documents(name) if (meta or {}).get("current_version") else [],
            "dead_letters": c.docstore.list_dead_letters(name),
            "source_dir": str(source_dir(name))}


def collection_versions(name: str) -> list[dict]:
    """The index snapshot versions stored for a collection, newest first (Service.collection_versions)."""
    return service().collection_versions(check_collection(name))


def source_dir(collection: str) -> Path:
    """Where uploads to `collection` land: RELAYRAG_HOME/sources/<collection>/ (never anywhere else)."""
    return settings().home / SOURCES_DIR / check_collection(collection)


def safe_upload_name(raw: str) -> str:
    """A client-supplied file name reduced to a safe base name, or RelayragError: the last path component
    (both / and \\ separate), NFC, no control characters, not hidden, at most MAX_NAME_CHARS, and a type
    the loaders read."""
    SUPPORTED_SUFFIXES = service().supported_suffixes()
    name = unicodedata.normalize("NFC", re.split(r"[\\/]", raw or "")[-1]).strip()
    if not name or name in (".", "..") or name.startswith("."):
        raise RelayragError(f"unusable file name {raw!r}")
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise RelayragError(f"file name {raw!r} contains control characters")
    if any(ch in BIDI_CONTROLS for ch in name):
        raise RelayragError(f"file name {raw!r} contains a bidi override (it would show another name)")
    if len(name) > MAX_NAME_CHARS:
        raise RelayragError(f"file name longer than {MAX_NAME_CHARS} characters")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise RelayragError(f"file name of {len(name.encode('utf-8'))} bytes in UTF-8; at most {MAX_NAME_BYTES} "
                            "(file systems store 255, and the upload needs room for its temporary name)")
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise RelayragError(f"{name}: unsupported file type {suffix or '(none)'!r}; supported: "
                            f"{', '.join(sorted(SUPPORTED_SUFFIXES))}")
    return name


def upload_path(collection: str, name: str) -> Path:
    """The path an upload named `name` is written to, checked to lie directly in the source area."""
    base = source_dir(collection)
    base.mkdir(parents=True, exist_ok=True)
    target = (base / safe_upload_name(name)).resolve()
    if target.parent != base.resolve():
        raise RelayragError(f"file name {name!r} leaves the collection's upload folder")
    return target


def documents_bucket() -> str:
    """RELAYRAG_DOCUMENTS_BUCKET (set by infra/ on the Cloud Run service): when set, uploads go to that
    bucket under `<collection>/` and GCS-triggered ingestion (ingest_object) indexes them; empty = uploads are
    ingested here, from RELAYRAG_HOME/sources/<collection>/."""
    return os.environ.get("RELAYRAG_DOCUMENTS_BUCKET", "").strip()


def upload_to_bucket(collection: str, name: str, path: Path) -> tuple[str, int]:
    """Upload a local file as gs://BUCKET/<collection>/<name> (the collection's source area in the cloud).
    Returns (source key, the object's generation)."""
    check_collection(collection)
    return service().upload_to_bucket(documents_bucket(), f"{collection}/{safe_upload_name(name)}", path)


def wait_for_ingestion(collection: str, key: str, generation: int, *, timeout_s: float = 600.0,
                       poll_s: float = 1.0, sleep=time.sleep) -> dict:
    """Follow GCS-triggered ingestion of one object generation through the docstore: {state: ingested |
    unchanged | failed | timeout, detail}. A record holding this generation (or a newer one) means ingested;
    a dead letter of this generation means failed, with its error."""
    c = ctx()
    deadline = time.monotonic() + timeout_s
    while True:
        rec = c.docstore.get_file(collection, key)
        if rec is not None and int(rec.get("generation") or 0) >= generation:
            return {"state": "ingested", "detail": f"{rec.get('n_chunks', '?')} chunks, generation {rec.get('generation')}"}
        dead = c.docstore.get_dead_letter(collection, key)
        if dead is not None and int(dead.get("generation") or 0) == generation:
            return {"state": "failed", "detail": str(dead.get("error") or "could not be ingested")}
        if time.monotonic() >= deadline:
            return {"state": "timeout", "detail": f"not indexed after {timeout_s:.0f} s; the object is uploaded and "
                                                  "ingest_object may still index it (see its logs)"}
        sleep(poll_s)


def ingest_file(collection: str, path: Path, *,
                on_progress: Callable[[float, float, str], None] | None = None) -> dict:
    """Ingest one uploaded file (incremental: unchanged content is skipped). Returns the ingest summary
    (`relayrag ingest --json` shape). A file that cannot be ingested is removed from the source area again,
    so it is not retried by later uploads; the summary's `failed` says why."""
    summary = service().ingest(path, collection, on_progress=on_progress).to_dict()
    if summary["failed"]:
        path.unlink(missing_ok=True)
    return summary


def delete_document(collection: str, key: str) -> dict:
    """Remove exactly the source stored under `key` (chunks, vectors, record); when it is an upload in the
    source area, its file is deleted too. An object of the documents bucket (cloud) is deleted from the bucket
    and GCS-triggered ingestion removes it from the index; this waits (up to 120 s) until its record is gone.
    RelayragError if the collection has no such document."""
    check_collection(collection)
    c = ctx()
    if c.docstore.get_file(collection, key) is None:
        raise RelayragError(f"collection {collection!r} has no document {key!r}")
    bucket = documents_bucket()
    if bucket and key.startswith(f"gs://{bucket}/{collection}/"):
        service().delete_from_bucket(bucket, key[len(f"gs://{bucket}/"):])
        deadline = time.monotonic() + 120
        while c.docstore.get_file(collection, key) is not None:
            if time.monotonic() > deadline:
                raise RelayragError(f"deleted {key} from the bucket, but it is still indexed after 120 s; "
                                    "ingest_object removes it when the deletion event arrives")
            time.sleep(1.0)
        meta = c.docstore.get_collection(collection) or {}
        return {"version": meta.get("current_version"), "chunks_total": (meta.get("stats") or {}).get("n_chunks")}
    summary = service().delete(collection, [key], require_match=True).to_dict()
    p = Path(key)
    if "://" not in key and p.parent == source_dir(collection).resolve():
        p.unlink(missing_ok=True)
    return summary


# -- ask and runs ---------------------------------------------------------------------------------------
def check_filters(collection: str, filters: str) -> list[str]:
    """Metadata filters from the Ask form (`;` or newlines between them), checked against the collection's
    schema (Service.check_filters). RelayragError naming the problem."""
    return service().check_filters(check_collection(collection), filters)


def ask(question: str, collection: str, *, arm: str | None, on_event: Callable[[dict], None],
        engine: str | None = None, filters: str | list[str] | None = None) -> dict:
    """Run the RAG workflow (Service.ask): embedded (in-process) or cloud (an execution through the Workflows
    Executions API, RELAYRAG_WORKFLOW), per RELAYRAG_ENGINE. on_event gets one interpreter-shaped event per
    finished stage. filters: metadata filters (a list, or one string with `;` or newlines between them).
    Returns the result dict (`ask --json`). RelayragError on bad input or a failed run."""
    from relayrag.engine.expr import WorkflowsRuntimeError
    from relayrag.service import check_arm
    check_collection(collection)
    if not question.strip():
        raise RelayragError("the question is empty")
    if arm:
        try:
            check_arm(arm)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
    svc = service()
    items = svc.check_filters(collection, filters) if filters else []  # FilterError before the run starts
    try:
        return svc.ask(question, collection, arm=arm or None, engine=engine, on_event=on_event,
                       filters=items).to_dict()
    except RelayragError:
        raise
    except WorkflowsRuntimeError as exc:
        body = exc.payload.get("body")
        msg = body.get("error") if isinstance(body, dict) and body.get("error") else str(exc)
        raise RelayragError(msg) from None
    except Exception as exc:
        from relayrag.engine.cloud import describe_error
        msg = describe_error(exc)  # Google API errors of the cloud engine, as one line
        if msg is None:
            raise
        raise RelayragError(msg) from exc


def engine_name() -> str:
    return service().engine


def list_runs(limit: int = 50) -> list[dict]:
    """Recent run records, newest first (candidates dropped), evaluation runs included (`evaluation` True)."""
    from relayrag.records import is_eval_run
    runs = ctx().docstore.list_runs(limit)
    for r in runs:
        r.pop("candidates", None)
        r["evaluation"] = is_eval_run(r)
    return runs


PRODUCTION_SCAN = 5  # production_runs reads up to this many times `limit` records to skip evaluation runs


def production_runs(limit: int) -> tuple[list[dict], int]:
    """(the `limit` most recent runs that are not evaluation runs, newest first; how many evaluation runs were
    skipped on the way). Reads at most PRODUCTION_SCAN * limit records, so a long evaluation can leave fewer
    than `limit` production runs in the window."""
    runs = list_runs(limit * PRODUCTION_SCAN)
    production = [r for r in runs if not r["evaluation"]][:limit]
    if not production:
        return [], sum(1 for r in runs if r["evaluation"])
    oldest = production[-1]["created_at"] if len(production) == limit else None
    skipped = sum(1 for r in runs if r["evaluation"] and (oldest is None or r["created_at"] >= oldest))
    return production, skipped


def get_run(run_id: str) -> dict:
    """{result (the `ask --json` dict), record (the run record without candidates), trace} (Service.get_run);
    NotFoundError if unknown."""
    from relayrag.errors import NotFoundError
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", run_id or ""):
        raise NotFoundError(f"unknown run_id {run_id!r}")
    d = service().get_run(run_id)
    return {"result": d.result.to_dict(), "record": d.record, "trace": d.trace}


def citation(run_id: str, n: int) -> dict:
    """Citation `n` of a run: {n, doc, page, chunk_id, quote} with the full quoted passage."""
    rec = get_run(run_id)["record"]
    for cit in rec.get("citations") or []:
        if int(cit.get("n", -1)) == n:
            return cit
    raise RelayragError(f"run {run_id} has no citation [{n}]")


PAGE_SIZES = ("thumbnail", "image")  # the page renderings a citation may carry (relayrag.ingest.pages)


def citation_page(run_id: str, n: int, size: str) -> bytes:
    """PNG bytes of citation `n`'s page rendering of run `run_id`: `size` "thumbnail" (long side 256 px) or
    "image" (the full page). Only the reference stored in the run's own record is read, and only when it lies
    under the blob store's pages/ (Service.page_image), so no request names a file. NotFoundError when the cited
    source has no page image (text, Markdown, HTML) or it is gone; RelayragError for an unknown size."""
    from relayrag.errors import NotFoundError
    if size not in PAGE_SIZES:
        raise RelayragError(f"unknown page size {size!r} (one of {', '.join(PAGE_SIZES)})")
    ref = citation(run_id, n).get(size)
    if not ref:
        raise NotFoundError(f"citation [{n}] of run {run_id} has no page image (its source is not a PDF or image)")
    return service().page_image(ref)


def arms(collection: str, quality: bool = False) -> dict[str, dict[str, tuple[float, float]]]:
    """The contextual bandit's posteriors of `collection` per query context (Service.arm_posteriors): the win
    posteriors, or with quality=True the graded-reward ones."""
    return service().arm_posteriors(check_collection(collection), quality=quality)


# -- warehouse ------------------------------------------------------------------------------------------
def warehouse(collection: str) -> dict:
    """{schema, config_text, config_error} (Service.warehouse_schema / sql_config_text); NotFoundError when the
    collection has no warehouse."""
    from relayrag.errors import NotFoundError
    check_collection(collection)
    svc = service()
    try:
        schema, config_error = svc.warehouse_schema(collection), None
    except NotFoundError:
        raise
    except RelayragError as exc:  # a stored SQL config that no longer validates: show the whole warehouse
        wh = ctx().warehouse(collection, apply_config=False)
        if wh is None:
            raise
        schema, config_error = wh.schema(), str(exc)
    try:
        config_text = svc.sql_config_text(collection)[0]
    except NotFoundError:
        config_text = None
    except RelayragError as exc:
        config_text, config_error = None, config_error or str(exc)
    return {"schema": schema, "config_text": config_text, "config_error": config_error,
            "examples": first_row_values(collection, schema)}


EXAMPLE_ROWS = 3  # rows read per table for the Warehouse page's example values


def first_row_values(collection: str, schema: dict) -> dict[str, dict[str, list[str]]]:
    """{table: {column: up to EXAMPLE_ROWS distinct values of its first rows}}: example values for the columns
    the schema gives no sample values (those are kept for low-cardinality text, the ones the SQL stage is shown).
    Read with one guarded `SELECT * ... LIMIT 3` per table on a local (DuckDB) warehouse; {} for BigQuery, where
    every query is billed, and for a table the guard refuses or that fails."""
    wh = ctx().warehouse(collection, apply_config=False)
    if wh is None or getattr(wh, "engine", "") != "duckdb":
        return {}
    out: dict[str, dict[str, list[str]]] = {}
    for t in schema.get("tables") or []:
        name = str(t.get("name", ""))
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            continue  # only plain identifiers are put in SQL text
        res = wh.query(f"SELECT * FROM {name} LIMIT {EXAMPLE_ROWS}")
        if not res.ok:
            continue
        cols: dict[str, list[str]] = {}
        for i, col in enumerate(res.columns):
            vals = [str(r[i])[:40] for r in res.rows if i < len(r) and r[i] is not None]
            cols[col] = list(dict.fromkeys(vals))
        out[name] = cols
    return out


def verify(collection: str, question: str, sql: str, slots: str) -> dict:
    """Add a verified query / template to the collection's SQL config (Service.sql_verify); `slots` as typed in
    the form ("n=count, genre=value:Genre.Name", commas or new lines)."""
    return service().sql_verify(check_collection(collection), question, sql, [slots])


def guarded_query(collection: str, sql: str) -> dict:
    """The guard's verdict on `sql` and, when it passes, the query's result (Service.guarded_query)."""
    return service().guarded_query(check_collection(collection), sql)


# -- evaluation -----------------------------------------------------------------------------------------
def dataset_roots() -> list[Path]:
    raw = os.environ.get("RELAYRAG_DASHBOARD_DATASETS", "")
    return [Path(p).expanduser() for p in raw.split(",") if p.strip()]


def list_datasets() -> list[dict]:
    """Stored evaluation sets under RELAYRAG_DASHBOARD_DATASETS (comma-separated folders): BEIR folders
    (corpus.jsonl, queries.jsonl, qrels/test.tsv; the root itself or one level below) and Text-to-SQL
    question files (*.jsonl whose first row has `gold_result`) and answer-quality golden sets (*.jsonl whose
    first row has `question` and `answers` or `unanswerable`; `relayrag eval answers`).
    [{id, kind: beir|sql|answers, path}]"""
    out: dict[str, dict] = {}
    for root in dataset_roots():
        if not root.is_dir():
            continue
        for d in [root, *sorted(p for p in root.iterdir() if p.is_dir())]:
            if (d / "corpus.jsonl").is_file() and (d / "queries.jsonl").is_file() and (d / "qrels").is_dir():
                out.setdefault(d.name, {"id": d.name, "kind": "beir", "path": str(d)})
        for f in sorted(root.glob("*.jsonl")) + sorted(root.glob("*/*.jsonl")):
            try:
                with f.open(encoding="utf-8") as fh:
                    first = json.loads(fh.readline() or "{}")
            except (OSError, ValueError):
                continue
            if isinstance(first, dict) and "gold_result" in first:
                out.setdefault(f.stem, {"id": f.stem, "kind": "sql", "path": str(f)})
            elif isinstance(first, dict) and "question" in first and ("answers" in first or "unanswerable" in first):
                out.setdefault(f.stem, {"id": f.stem, "kind": "answers", "path": str(f)})
    return sorted(out.values(), key=lambda d: d["id"])


def dataset_fits(kind: str, collection: dict) -> bool:
    """Whether a stored set of `kind` can run on `collection` (a list_collections entry): a SQL set needs its
    warehouse, an answer-quality set its documents; a BEIR set ingests its own corpus into any collection."""
    if kind == "sql":
        return bool(collection.get("warehouse"))
    if kind == "answers":
        return bool(collection.get("current_version"))
    return True


def eval_choice(datasets: list[dict], collections: list[dict], dataset_id: str | None = None,
                collection: str | None = None) -> tuple[str | None, str | None]:
    """(dataset id, collection name) the Evaluation page selects: the ones asked for (the page's query string,
    so a reload keeps the user's choice) when they exist, else the first collection and, for it, the first set
    that fits it (`dataset_fits`; an answers or SQL set before a BEIR one, which would ingest its corpus into
    the collection), else the first set. None where there is none."""
    by_name = {c["name"]: c for c in collections}
    col = collection if collection in by_name else (collections[0]["name"] if collections else None)
    ids = {d["id"] for d in datasets}
    if dataset_id in ids:
        return dataset_id, col
    if col is None:
        return (datasets[0]["id"] if datasets else None), None
    fitting = [d for d in datasets if dataset_fits(d["kind"], by_name[col])]
    fitting.sort(key=lambda d: d["kind"] == "beir")  # stable: keeps the id order within each group
    pick = fitting[0] if fitting else (datasets[0] if datasets else None)
    return (pick["id"] if pick else None), col


def dataset(dataset_id: str) -> dict:
    for d in list_datasets():
        if d["id"] == dataset_id:
            return d
    raise RelayragError(f"unknown dataset {dataset_id!r} (stored sets come from RELAYRAG_DASHBOARD_DATASETS)")


def run_eval(dataset_id: str, collection: str, *, limit: int | None, pipeline: bool,
             on_progress: Callable[[str], None], on_item: Callable[[dict], None]) -> dict:
    """Run a BEIR (relayrag.evaluation.retrieval.evaluate_beir), answer-quality (relayrag.evaluation.answers) or
    Text-to-SQL (relayrag.evaluation.sql.evaluate_sql) evaluation and store its report in the blob store for
    the history chart. Returns the stored entry {id, dataset, kind, collection, at, seconds, report}."""
    d = dataset(dataset_id)
    check_collection(collection)
    c = ctx()
    t0 = time.time()
    if d["kind"] == "beir":
        # ingest first with progress (loading, then each embedding batch); evaluate_beir's own ingest then finds
        # the corpus unchanged and skips it
        last = [0.0]

        def ingest_progress(done: float, total: float, message: str) -> None:
            if time.monotonic() - last[0] >= 1.0 or done >= total:
                last[0] = time.monotonic()
                on_progress(f"ingest {100 * done / max(total, 1):.0f} %: {message}")
        on_progress("ingesting corpus.jsonl (unchanged content is skipped)")
        s = service().ingest(Path(d["path"]) / "corpus.jsonl", collection, on_progress=ingest_progress)
        if s.failed:
            raise RelayragError(f"ingesting {d['id']} failed: {s.failed[0]['error']}")
        on_progress(f"index ready ({s.chunks_total} chunks); scoring every arm and the bandit"
                    + (" and the full pipeline" if pipeline else ""))
        report = service().eval_beir(Path(d["path"]), collection, limit=limit, pipeline=pipeline)
    elif d["kind"] == "answers":
        on_progress("asking every question of the golden set (no-LLM method; the LLM method too when configured)")
        report = service().eval_answers(Path(d["path"]), collection, limit=limit, on_item=on_item)
        for m in report.get("methods", {}).values():  # the stored entry keeps the metrics, not every answer
            m.pop("rows", None)
    else:
        attacks = sorted(Path(d["path"]).parent.glob("adversarial*.jsonl"))
        on_progress(f"{len(attacks)} guard attack file(s) alongside: {', '.join(p.name for p in attacks) or 'none'}")
        report = service().eval_sql(Path(d["path"]), collection, adversarial=attacks, limit=limit, on_item=on_item)
        report.pop("items", None)
    entry = {"id": uuid.uuid4().hex[:12], "dataset": d["id"], "kind": d["kind"], "collection": collection,
             "at": t0, "seconds": round(time.time() - t0, 2), "report": report}
    c.blobstore.put_bytes(f"{EVAL_PREFIX}{int(t0 * 1000):015d}-{entry['id']}.json",
                          json.dumps(entry, ensure_ascii=False).encode("utf-8"))
    return entry


def eval_history(dataset_id: str | None = None, limit: int = 100) -> list[dict]:
    """Stored evaluation entries, oldest first (optionally of one dataset)."""
    store = ctx().blobstore
    out = []
    for key in sorted(store.list(EVAL_PREFIX))[-max(1, limit) * 4:]:
        try:
            entry = json.loads(store.get_bytes(key))
        except (FileNotFoundError, ValueError):
            continue
        if dataset_id is None or entry.get("dataset") == dataset_id:
            out.append(entry)
    return out[-limit:]
