"""Finding and reading the files an ingest takes: sha256 of a file, the per-collection ingest lock, which
files under a folder are taken (`discover`, `LinkPolicy` for symbolic links) and one file's chunks
(`load_chunks`). Used by relayrag.ingest.pipeline, which re-exports these names."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


from relayrag.context import StageContext
from relayrag.errors import IngestError
from relayrag.ingest import loaders
from relayrag.ingest.chunking import Chunk, make_chunks
from relayrag.ingest.limits import FileBudget
from relayrag.naming import validate_collection
from relayrag.ingest.snapshot import (index_text)


log = logging.getLogger(__name__)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def collection_lock(ctx: StageContext, collection: str) -> Iterator[None]:
    validate_collection(collection)
    lock_dir = ctx.settings.home / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{collection}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass(frozen=True)
class LinkPolicy:
    """How ingest treats symbolic links under a folder (and a link given as PATH itself when `roots` is set).

    follow: read what links point at (folders too, each real folder once); otherwise every link under the
    folder is skipped with a reason. roots: when given, every file is resolved before it is read and one
    whose real path lies outside all of `roots` is refused (the MCP server's RELAYRAG_MCP_INGEST_ROOTS)."""
    follow: bool = False
    roots: tuple[Path, ...] | None = None

    def outside(self, real: Path) -> bool:
        return self.roots is not None and not any(real == r or r in real.parents for r in self.roots)


def discover(path: Path, unsupported: list[Path] | None = None, *, links: LinkPolicy = LinkPolicy(),
             refused: list[dict] | None = None) -> list[Path]:
    """Files to ingest under `path` (a file, or a folder walked recursively; hidden files skipped). Files of
    a type no loader reads (.csv, .docx ...) are left out and, when `unsupported` is given, appended to it.
    Symbolic links follow `links`; each one skipped or refused is appended to `refused` as {path, error}."""
    if path.is_file():
        return [path]
    out: list[Path] = []
    seen_dirs = {os.path.realpath(path)}
    for dirpath, dirs, files in os.walk(path, followlinks=links.follow):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirs):
            p = here / d
            if d.startswith("."):
                continue
            if p.is_symlink():
                real = Path(os.path.realpath(p))
                reason = _link_refusal(p, real, links, folder=True)
                if reason or str(real) in seen_dirs:
                    if reason and refused is not None:
                        refused.append({"path": str(p), "error": reason})
                    continue
            real_dir = os.path.realpath(p)
            if real_dir in seen_dirs:
                continue
            seen_dirs.add(real_dir)
            keep.append(d)
        dirs[:] = keep
        for f in sorted(files):
            p = here / f
            if f.startswith(".") or not p.is_file() and not p.is_symlink():
                continue
            if p.is_symlink() or links.roots is not None:
                reason = _link_refusal(p, Path(os.path.realpath(p)), links, folder=False)
                if reason:
                    if refused is not None:
                        refused.append({"path": str(p), "error": reason})
                    continue
            if not p.is_file():
                continue
            if p.suffix.lower() in loaders.SUPPORTED_SUFFIXES or loaders.is_beir_corpus(p):
                out.append(p)
            elif unsupported is not None:
                unsupported.append(p)
    return sorted(out)


def _link_refusal(p: Path, real: Path, links: LinkPolicy, *, folder: bool) -> str | None:
    """Why the file or folder `p` (real path `real`) must not be read, or None."""
    kind = "folder" if folder else "file"
    if links.outside(real):
        roots = ", ".join(str(r) for r in links.roots or ())
        return f"refused: resolves to {real}, outside the folders this server may ingest from ({roots})"
    if p.is_symlink() and not links.follow:
        return (f"skipped: symbolic link to the {kind} {real} (not followed; `relayrag ingest --follow-symlinks` "
                f"reads link targets)")
    if p.is_symlink() and not real.exists():
        return f"skipped: broken symbolic link (to {real})"
    return None


def load_chunks(path: Path, key: str, chunk_chars: int, overlap: int, name: str | None = None,
                budget: FileBudget | None = None) -> tuple[list[Chunk], dict]:
    """Load one file into chunks; `name` (default: the file's) names the document; `budget` its time budget.
    Returns (chunks, record extras: kind, title (the loader's, the one every chunk carries; not for a BEIR
    corpus, whose documents each have their own), pages, ocr_pages, warnings). Raises IngestError."""
    if loaders.is_beir_corpus(path):
        docs = list(loaders.iter_beir_corpus(path))
        chunks: list[Chunk] = []
        for d in docs:
            doc_id = d.source.rsplit("#", 1)[-1]
            chunks.extend(make_chunks(doc=doc_id, source=key, title=d.title,
                                      pages=[(p.number, p.text) for p in d.pages],
                                      max_chars=chunk_chars, overlap=overlap))
        extras = {"kind": "beir", "documents": len(docs), "warnings": []}
    else:
        d = loaders.load_document(path, budget)
        chunks = make_chunks(doc=name or path.name, source=key, title=d.title,
                             pages=[(p.number, p.text) for p in d.pages if p.text.strip()],
                             max_chars=chunk_chars, overlap=overlap)
        extras = {"kind": d.mime, "title": chunks[0].title if chunks else d.title, "pages": len(d.pages),
                  "ocr_pages": [p.number for p in d.pages if p.method == "ocr"], "warnings": d.warnings}
    if not chunks:
        raise IngestError("no extractable text (nothing to index)")
    return chunks, extras


embed_text = index_text  # the dense arm embeds what BM25 indexes


def _progress(enabled: bool):
    if not enabled:
        return contextlib.nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    return Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=Console(stderr=True), transient=True)
