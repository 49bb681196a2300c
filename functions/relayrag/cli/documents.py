"""`relayrag ingest`, `delete` and `collections`."""

from __future__ import annotations

from pathlib import Path

import typer

from relayrag.cli.app import (
    _print_json,
    _print_summary,
    _say,
    _service,
    _user_errors,
    app,
    out,
)


@app.command()
def ingest(path: Path = typer.Argument(..., help="A file or a folder (walked recursively). PDF, Markdown, "
                                       "text, HTML, or a BEIR corpus.jsonl."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
           progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
           follow_symlinks: bool = typer.Option(False, "--follow-symlinks",
                                                help="Read what symbolic links under PATH point at (by default "
                                                     "each is skipped and listed with the reason)."),
           embedder: str = typer.Option("", "--embedder",
                                          help="The collection's embedder: minilm-int8 (English) | e5-small "
                                               "(multilingual, extra `multilingual`). Default: the one the "
                                               "collection was built with, else RELAYRAG_EMBEDDER. Changing it "
                                               "re-embeds the collection; queries follow the collection's.")):
    """Ingest PATH into a collection incrementally: unchanged files are skipped, files removed from PATH are
    removed from the index. Exit code 1 if any file failed (the others are still ingested)."""
    with _user_errors(as_json):
        # progress goes to stderr, the JSON to stdout: both at once are fine
        summary = _service().ingest(path, collection, progress=progress, follow_symlinks=follow_symlinks,
                                    embedder=embedder or None).to_dict()
    _print_json(summary) if as_json else _print_summary(summary)
    raise typer.Exit(1 if summary["failed"] else 0)


@app.command()
def delete(paths: list[str] = typer.Argument(..., help="Ingested file paths (or file names) to remove."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Remove documents from a collection: chunks, BM25, vectors and ingestion records. A PATH matches an
    ingested file's path, a folder above it, or its file name. Exit code 1 if a PATH matched nothing."""
    with _user_errors(as_json):
        summary = _service().delete(collection, paths).to_dict()
    files_left = summary.pop("files_left")
    if as_json:
        _print_json(summary)
    else:
        if summary["deleted_paths"]:
            n = len(summary["deleted_paths"])
            _say(out, (collection, "bold"), f": deleted {n} file{'s' if n != 1 else ''}; version "
                 f"{summary['version']}, {files_left} files and {summary['chunks_total']} chunks left "
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
    with _user_errors(as_json):
        cols = [c.to_dict() for c in _service().list_collections()]
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
