"""Issue 28, item 13 in the dashboard: an upload that starts a Japanese collection says, on its file's progress
line, which embedder the collection got (here: how to get the multilingual one)."""

from __future__ import annotations

from tests.unit.ingest.test_embedder_choice import JA


def test_a_dashboard_upload_of_a_japanese_file_says_which_embedder(api, monkeypatch):
    import re

    from relayrag.ingest import embedder_choice
    from tests.unit.dashboard.conftest import job_url, read_sse
    monkeypatch.delenv("RELAYRAG_EMBEDDER", raising=False)
    monkeypatch.setattr(embedder_choice, "multilingual_available", lambda: False)
    r = api.post("/collections/ja/upload", files=[("files", ("fuji.txt", JA["fuji.txt"].encode(), "text/plain"))])
    assert r.status_code == 200, r.text
    lines = [d for e, d in read_sse(api, job_url(r.text)) if e == "file"]
    assert re.search(r'data-state="ingested"', lines[-1]) and "Japanese text detected" in lines[-1]
