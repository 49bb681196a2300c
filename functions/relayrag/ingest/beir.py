"""BEIR corpora (`corpus.jsonl`, one {"_id", "title", "text"} object per line) as loaded documents."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Iterator

from relayrag.errors import IngestError
from relayrag.ingest.document import BEIR_MIME, LoadedDocument, Page


def is_beir_corpus(path: Path) -> bool:
    """True for a file named `corpus.jsonl`, or a `*.jsonl` file whose first non-blank line is a JSON
    object with "_id" and "text" keys. Never raises (unreadable or missing -> False); reads at most 1 MiB."""
    path = Path(path)
    try:
        if not path.is_file():
            return False
        if path.name.lower() == "corpus.jsonl":
            return True
        if path.suffix.lower() != ".jsonl":
            return False
        with path.open("rb") as fh:
            for raw in iter(lambda: fh.readline(1 << 20), b""):
                if raw.strip():
                    obj = json.loads(raw.decode("utf-8-sig"))
                    return isinstance(obj, dict) and "_id" in obj and "text" in obj
    except (OSError, ValueError):
        return False
    return False


def iter_beir_corpus(path: Path) -> Iterator[LoadedDocument]:
    """Yield one `LoadedDocument` per line of a BEIR `corpus.jsonl` ({"_id", "title", "text"}).

    Each document has one page (method "text") whose text is `title + "\\n" + text` (title omitted when
    empty), source "<path>#<_id>", mime "application/x-beir". Blank lines are skipped. Raises
    `IngestError` naming the 1-based line number for a line that is not UTF-8, not a JSON object, or
    lacks "_id"/"text"; and for a missing or empty file.
    """
    path = Path(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise IngestError(f"{path}: file not found") from None
    except OSError as e:
        raise IngestError(f"{path}: cannot read file ({e.strerror or e})") from None
    with fh:
        any_bytes = False
        for lineno, raw in enumerate(fh, 1):
            any_bytes = True
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            if not raw.strip():
                continue
            where = f"{path.name} line {lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise IngestError(
                    f"{where}: not UTF-8 text: undecodable byte 0x{raw[e.start]:02x} at column {e.start + 1}"
                ) from None
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise IngestError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(obj, dict):
                raise IngestError(f"{where}: expected a JSON object with _id, title, text; got {type(obj).__name__}")
            missing = [k for k in ("_id", "text") if k not in obj]
            if missing:
                raise IngestError(f"{where}: missing key(s) {', '.join(missing)} (a BEIR corpus line needs _id and text)")
            doc_id, text, title = obj["_id"], obj["text"], obj.get("title") or ""
            if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
                raise IngestError(f"{where}: _id must be a non-empty string or integer, got {doc_id!r}")
            if not isinstance(text, str) or not isinstance(title, str):
                raise IngestError(f"{where}: title and text must be strings")
            title, text = title.strip(), text.strip()
            body = f"{title}\n{text}" if title else text
            yield LoadedDocument(
                source=f"{path}#{doc_id}", title=title, pages=[Page(1, body, "text")], mime=BEIR_MIME, warnings=[]
            )
        if not any_bytes:
            raise IngestError(f"{path.name}: empty file (0 bytes)")
