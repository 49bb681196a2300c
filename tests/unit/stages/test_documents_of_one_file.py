"""One file can hold many documents: a BEIR corpus.jsonl is one source whose lines are documents, each on its page 1.
A sentence's page heading, its document's opening and a table's identity belong to its own document, never to the
first document of the file (every ja-qa sentence used to read under the heading of the corpus's first line)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from relayrag.stages.extractive import doc_key, doc_openings, page_headings, page_key


def _chunk(doc: str, text: str, start: int = 0, page: int = 1, source: str = "corpus.jsonl") -> dict:
    return {"source": source, "doc": doc, "page": page, "start": start, "text": text,
            "chunk_id": f"{source}:{doc}:{page}:{start}"}


def test_each_document_of_one_file_has_its_own_heading_and_opening():
    rain = _chunk("ja-001", "梅雨\n梅雨は6月から7月にかけて続く雨の季節である。")
    ferry = _chunk("ja-002", "青函連絡船\n青函連絡船は青森と函館を結んでいた。")
    later = _chunk("ja-002", "1988年に廃止された。", start=40)
    chunks = [rain, ferry, later]
    headings = page_headings(None, chunks)
    openings = doc_openings(None, chunks)
    assert headings[page_key(ferry)] == headings[page_key(later)] != headings[page_key(rain)]
    assert "梅雨" not in headings[page_key(ferry)]
    assert openings[doc_key(later)].startswith("青函連絡船")
    assert openings[doc_key(rain)].startswith("梅雨")
    assert len(openings) == 2


def test_pages_of_one_document_and_documents_of_other_files_stay_apart():
    a1 = _chunk("report.pdf", "Annual Report\nRevenue rose.", page=1, source="report.pdf")
    a2 = _chunk("report.pdf", "Staff\nHeadcount was 40.", page=2, source="report.pdf")
    b1 = _chunk("notes.md", "Minutes\nThe board met.", source="notes.md")
    keys = {page_key(c) for c in (a1, a2, b1)}
    assert len(keys) == 3
    openings = doc_openings(SimpleNamespace(chunks=[a2, b1, a1]), [a2, b1])
    assert openings[doc_key(a2)].startswith("Annual Report")  # the document's first page, not the cited one
    assert openings[doc_key(b1)].startswith("Minutes")


def test_an_ingested_beir_corpus_keeps_documents_apart(tmp_path, home):
    """Ingested for real: the snapshot's chunks of two lines of one corpus.jsonl share source and page 1."""
    from relayrag.context import default_context
    from relayrag.ingest.pipeline import ingest
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in [
        {"_id": "d1", "title": "梅雨", "text": "梅雨は6月から7月にかけて続く雨の季節である。"},
        {"_id": "d2", "title": "青函連絡船", "text": "青函連絡船は青森と函館を結んでいた。1988年に廃止された。"},
    ]), encoding="utf-8")
    ctx = default_context()
    assert not ingest(ctx, corpus, "b").failed
    snap = ctx.snapshot("b")
    ferry = [c for c in snap.chunks if c["doc"].endswith("d2")]
    assert ferry and {c["source"] for c in snap.chunks} == {ferry[0]["source"]}  # one source, two documents
    assert "梅雨" not in page_headings(snap, ferry)[page_key(ferry[0])]
    assert doc_openings(snap, ferry)[doc_key(ferry[0])].startswith("青函連絡船")
