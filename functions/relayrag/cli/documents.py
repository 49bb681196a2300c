"""`relayrag ingest`, `delete` and `collections`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

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
                                       "text, HTML, PNG/JPEG/TIFF images (OCR), or a BEIR corpus.jsonl."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
           progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
           follow_symlinks: bool = typer.Option(False, "--follow-symlinks",
                                                help="Read what symbolic links under PATH point at (by default "
                                                     "each is skipped and listed with the reason)."),
           manifest: Optional[Path] = typer.Option(None, "--manifest", help="JSONL file of document metadata: one "
                                                   "JSON object per document under PATH with document_path "
                                                   "(relative to the manifest's folder) and the schema's fields."),
           schema: Optional[Path] = typer.Option(None, "--schema", help="relayrag.collection.yaml: the metadata "
                                                 "fields (types, required, filterable, shown); stored with the "
                                                 "collection and used by later ingests and filters."),
           embedder: str = typer.Option("", "--embedder",
                                          help="The collection's embedder: minilm-int8 (English) | e5-small "
                                               "(multilingual, extra `multilingual`). Default: the one the "
                                               "collection was built with, else RELAYRAG_EMBEDDER. Changing it "
                                               "re-embeds the collection; queries follow the collection's.")):
    """Ingest PATH into a collection incrementally: unchanged files are skipped, files removed from PATH are
    removed from the index. With --manifest, every document needs a manifest line, and a manifest with any
    error (unknown field, missing required field, value outside an enum, duplicate path, valid_until before
    valid_from) is rejected with line numbers before anything is written (exit code 2). A change of metadata
    alone re-writes the chunks without re-embedding them. Exit code 1 if any file failed (the others are
    still ingested)."""
    with _user_errors(as_json):
        # progress goes to stderr, the JSON to stdout: both at once are fine
        summary = _service().ingest(path, collection, progress=progress, follow_symlinks=follow_symlinks,
                                    manifest=manifest, schema=schema,
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
def collections(name: Optional[str] = typer.Argument(None, help="A collection: list its documents with their "
                                                     "metadata and validity state instead."),
                as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """List collections: documents (current index version and sizes) and warehouses (tables, SQL config).
    A collection with only a warehouse is listed too. With NAME: that collection's documents, each with its
    title, validity state (current, expiring, expired, not yet valid, unknown; or needs review) and metadata."""
    if name is not None:
        with _user_errors(as_json):
            docs = _service().list_documents(name)
        if as_json:
            _print_json(docs)
            return
        for d in docs:
            meta = d["metadata"] or {}
            extra = ", ".join(f"{k}={v}" for k, v in meta.items() if k != "title")
            _say(out, (d["name"], "bold"), f" · {d['title']} · {d['state'] or 'no metadata'}"
                 + (f" · {extra}" if extra else ""))
        if not docs:
            _say(out, f"{name}: no documents")
        return
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


@app.command()
def schema(file: Optional[Path] = typer.Argument(None, help="A relayrag.collection.yaml to validate and store; "
                                                 "without it, print the stored one."),
           collection: str = typer.Option(..., "--collection", "-c", help="Collection name."),
           as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object.")):
    """Store or show a collection's metadata schema (relayrag.collection.yaml: fields with type, required,
    filterable, shown; expiring_days). It is stored where the snapshots are (the index bucket in the cloud, so
    GCS-triggered ingestion validates object metadata with it) and applies to documents ingested from then on."""
    with _user_errors(as_json):
        service = _service()
        if file is not None:
            where = service.store_schema(collection, file)
            result = {"collection": collection, "stored": where}
        else:
            stored = service.collection_schema(collection)
            names = service.collection_names() if stored is None else []
            if stored is None and collection not in names:
                # a schema may be stored before the first ingest, but a name with neither is a typo
                from relayrag.errors import NotFoundError
                from relayrag.naming import unknown_collection_message
                raise NotFoundError(unknown_collection_message(collection, names))
            result = {"collection": collection,
                      "schema": stored.model_dump(mode="json") if stored is not None else None}
    if as_json:
        _print_json(result)
    elif file is not None:
        _say(out, (collection, "bold"), f": schema stored at {result['stored']}")
    elif result["schema"] is None:
        _say(out, f"{collection}: no schema (only the built-in fields title, valid_from, valid_until, needs_review)")
    else:
        _say(out, (collection, "bold"), f": expiring_days {result['schema']['expiring_days']}")
        for name, f in result["schema"]["fields"].items():
            flags = [x for x in ("required", "filterable", "shown") if f.get(x)]
            vals = f" ({', '.join(f['values'])})" if f.get("values") else ""
            _say(out, f"  {name}: {f['type']}{vals}" + (f" [{', '.join(flags)}]" if flags else ""))
