"""A collection configured for the distributed backend (RELAYRAG_INDEX_COLLECTIONS) ingests, answers through
the workflow and deletes, against the BigQuery client double (its SQL runs in DuckDB): no stage loads the
collection's snapshot; later stages read only the run's candidates."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.retrieval.bigquery_index import BigQueryIndex
from tests.unit.retrieval import bigquery_double as bq

DATASET = "proj.relayrag_index"


@pytest.fixture
def dctx(home, monkeypatch):
    from relayrag.context import default_context, set_default_context
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_INDEX_COLLECTIONS", "kb")
    monkeypatch.setenv("RELAYRAG_INDEX_DATASET", DATASET)
    load_settings.cache_clear()
    set_default_context(None)
    ctx = default_context()
    ctx._index = BigQueryIndex(DATASET, client=bq.Client(DATASET), bigquery_module=bq.module)
    return ctx


def _rows(ctx, table: str) -> int:
    return ctx._index._client.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_ingest_ask_and_delete_on_the_distributed_backend(dctx, small_corpus, monkeypatch):
    s = ingest(dctx, small_corpus, "kb")
    assert s.ingested == 4 and not s.failed
    assert _rows(dctx, "chunks") == s.chunks_total and _rows(dctx, "postings") > 0

    def no_whole_snapshot(*a, **k):
        raise AssertionError("a stage loaded the whole snapshot of a distributed collection")
    monkeypatch.setattr("relayrag.context.load_snapshot", no_whole_snapshot)
    result = ask("How many eggs does the queen lay per day?", "kb")
    assert "2,000" in result["answer"], result
    assert result["citations"] and result["citations"][0]["doc"] == "bees.txt"
    run = dctx.docstore.get_run(result["run_id"])
    assert run["candidate_ids"] and run["bm25_stats"]["n"] == s.chunks_total
    assert len(run["candidate_ids"]) <= s.chunks_total
    # the Japanese question goes through the BM25 arm (CJK bigrams) in SQL
    ja = ask("東京タワーの高さは何メートルですか？", "kb")
    assert "333" in ja["answer"], ja

    # a deleted document never answers, on the next version, while its rows get tombstones
    gone = ingest(dctx, ".", "kb", remove_paths=[str(small_corpus / "bees.txt")])
    assert gone.deleted == 1 and _rows(dctx, "tombstones") >= 1
    after = ask("How many eggs does the queen lay per day?", "kb")
    assert all(c["doc"] != "bees.txt" for c in after["citations"])
    assert "2,000" not in after["answer"]
    # an edit is one new segment mirrored there; the old rows of the file are tombstoned, not rewritten
    before = _rows(dctx, "chunks")
    (small_corpus / "bees.txt").unlink()  # deleted from the collection above; the folder agrees now
    (small_corpus / "rail.html").write_text("<html><body><p>The standard rail gauge is 1,435 millimetres; "
                                            "Russia uses 1,520 millimetres.</p></body></html>", encoding="utf-8")
    edit = ingest(dctx, small_corpus, "kb")
    assert edit.ingested == 1 and _rows(dctx, "chunks") == before + 1
    assert "1,520" in ask("Which gauge does Russia use?", "kb")["answer"]


def test_collections_not_listed_stay_in_memory(dctx, small_corpus):
    ingest(dctx, small_corpus, "local")
    assert _rows(dctx, "chunks") == 0
    assert dctx.index_backend("local") is None and dctx.index_backend("kb") is dctx._index
    assert "2,000" in ask("How many eggs does the queen lay per day?", "local")["answer"]


def test_the_search_tool_ranks_on_the_backend(dctx, small_corpus, monkeypatch):
    from relayrag.service import Service
    ingest(dctx, small_corpus, "kb")
    monkeypatch.setattr("relayrag.context.load_snapshot", lambda *a, **k: pytest.fail("whole snapshot loaded"))
    svc = Service(dctx)
    for arm in ("bm25", "dense", "hybrid"):
        res = svc.search("waggle dance of honey bees", "kb", k=2, arm=arm)
        assert res.hits and res.hits[0].doc == "bees.txt", (arm, res)
    assert svc.search("waggle dance", "kb", doc="solar.md", arm="bm25").hits == []


def test_a_lost_compare_and_set_leaves_no_rows_in_the_index(dctx, small_corpus, monkeypatch):
    """A writer that loses the version flip drops the rows it mirrored; the retry mirrors its own; afterwards
    the index holds exactly the rows of the segments the current version lists."""
    from relayrag.errors import ConflictError
    from relayrag.ingest.snapshot import read_manifest, version_segments
    ingest(dctx, small_corpus, "kb")
    real = dctx.docstore.commit_ingest
    lost = []

    def once_conflict(*a, **kw):
        if not lost:
            lost.append(a[1])
            raise ConflictError("another writer committed first")
        return real(*a, **kw)
    monkeypatch.setattr(dctx.docstore, "commit_ingest", once_conflict)
    (small_corpus / "new.txt").write_text("Otters hold hands while they sleep.", encoding="utf-8")
    s = ingest(dctx, small_corpus, "kb")
    assert lost and s.ingested == 1
    v = dctx.docstore.get_collection("kb")["current_version"]
    listed = {r.id: r.n_rows for r in version_segments(read_manifest(dctx.blobstore, "kb", v), v)}
    stored = dict(dctx._index._client.db.execute("SELECT segment, COUNT(*) FROM chunks GROUP BY segment").fetchall())
    assert stored == listed
    assert "hands" in ask("What do otters hold while they sleep?", "kb")["answer"]
