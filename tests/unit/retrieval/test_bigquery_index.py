"""The BigQuery index (distributed backend) against a client double that runs its SQL in DuckDB: BM25 in SQL
equals the in-memory index over the same live rows, dense top-k equals exact cosine, a query reads exactly
one version (segments it lists, its tombstone sets), and deleted or unlisted rows never answer."""

from __future__ import annotations

import numpy as np
import pytest

from relayrag.errors import ConfigError
from relayrag.ingest.snapshot import SegmentRef, index_text
from relayrag.retrieval.bigquery_index import BigQueryIndex, VersionFilter, bm25_sql, table_ddl
from relayrag.retrieval.bm25 import BM25Index, TermStats
from relayrag.retrieval.tokenize import tokenize
from tests.unit.retrieval import bigquery_double as bq

DATASET = "proj.relayrag_index"
TEXTS = ["The capybara is the largest living rodent.", "Capybaras live near rivers and lakes in groups.",
         "Honey bees dance to tell the hive where flowers are.", "Solar panels turn sunlight into electricity.",
         "The river otter eats fish and frogs.", "Bees and wasps both sting; bees die after stinging.",
         "Beavers build dams across rivers.", "Wind turbines and solar farms feed the grid."]


def _chunks(sid: str, texts: list[str]) -> list[dict]:
    return [{"chunk_id": f"{sid}:{i}", "source": f"/{sid}/{i}.txt", "doc": f"{i}.txt", "title": "", "page": 1,
             "start": 0, "end": len(t), "text": t, "context": "", "content_hash": f"h{sid}{i}"}
            for i, t in enumerate(texts)]


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float16)


@pytest.fixture
def index():
    return BigQueryIndex(DATASET, client=bq.Client(DATASET), bigquery_module=bq.module)


def _load(index):
    a, b = _chunks("sA", TEXTS[:5]), _chunks("sB", TEXTS[5:])
    va, vb = _vectors(5, 0), _vectors(3, 1)
    index.add_segment("c", "sA", a, va)
    index.add_segment("c", "sB", b, vb)
    ref_a = SegmentRef("sA", 5, "v2", 2)
    index.add_tombstones("c", ref_a, np.array([0, 3]))  # the version v2 deleted rows 0 and 3 of sA
    return a, b, va, vb, ref_a


def test_bm25_in_sql_equals_the_in_memory_index_over_the_live_rows(index):
    a, b, _, _, ref_a = _load(index)
    live_a = np.array([1, 2, 4])
    local = BM25Index([(TermStats.from_texts(index_text(c) for c in a), live_a),
                       (TermStats.from_texts(index_text(c) for c in b), None)])
    ids = [a[i]["chunk_id"] for i in live_a] + [c["chunk_id"] for c in b]
    vf = VersionFilter.of([ref_a, SegmentRef("sB", 3)])
    for q in ("bees flowers", "rivers rivers otter", "capybara rodent", "solar electricity grid"):
        got = dict(index.search("c", vf, k=10, tokens=tokenize(q)))
        scores = local.scores(q)
        want = {ids[i]: float(s) for i, s in enumerate(scores) if s > 0}
        assert got.keys() == want.keys(), q
        for cid, s in want.items():
            assert got[cid] == pytest.approx(s, rel=1e-5), (q, cid)
    # the deleted capybara row never answers; the surviving capybara row does
    hits = [cid for cid, _ in index.search("c", vf, k=10, tokens=tokenize("capybara"))]
    assert hits == ["sA:1"]


def test_a_query_reads_exactly_its_version(index):
    a, b, va, vb, ref_a = _load(index)
    toks = tokenize("bees")
    # the version before v2 (no tombstones, only sA) and v2 (sA minus rows 0 and 3, plus sB)
    before = VersionFilter.of([SegmentRef("sA", 5)])
    v2 = VersionFilter.of([ref_a, SegmentRef("sB", 3)])
    assert {cid for cid, _ in index.search("c", before, k=10, tokens=toks)} == {"sA:2"}
    assert {cid for cid, _ in index.search("c", v2, k=10, tokens=toks)} == {"sA:2", "sB:0"}
    assert {cid for cid, _ in index.search("c", before, k=10, tokens=tokenize("capybara"))} == {"sA:0", "sA:1"}
    # another collection's rows and a segment no version lists are invisible
    index.add_segment("other", "sA", _chunks("sA", ["bees bees bees"]), _vectors(1, 5))
    index.add_segment("c", "sZ", _chunks("sZ", ["bees in flight"]), _vectors(1, 6))
    assert {cid for cid, _ in index.search("c", v2, k=10, tokens=toks)} == {"sA:2", "sB:0"}
    assert index.search("c", VersionFilter.of([]), k=10, tokens=toks) == []


def test_dense_top_k_is_exact_cosine_over_live_rows(index):
    a, b, va, vb, ref_a = _load(index)
    vf = VersionFilter.of([ref_a, SegmentRef("sB", 3)])
    live = [(a[i]["chunk_id"], va[i]) for i in (1, 2, 4)] + [(c["chunk_id"], v) for c, v in zip(b, vb)]
    q = va[0].astype(np.float32)  # the deleted row's own vector: it must not come back
    got = index.search("c", vf, k=3, qvec=q)
    mat = np.stack([v.astype(np.float64) for _, v in live])
    cos = mat @ q / (np.linalg.norm(mat, axis=1) * np.linalg.norm(q))
    order = np.argsort(-cos)[:3]
    assert [cid for cid, _ in got] == [live[i][0] for i in order]
    assert [s for _, s in got] == pytest.approx([float(cos[i]) for i in order], abs=1e-6)
    assert "sA:0" not in {cid for cid, _ in index.search("c", vf, k=10, qvec=q)}


def test_fetch_reads_only_the_candidates_and_drop_segments_deletes(index):
    a, b, va, vb, ref_a = _load(index)
    vf = VersionFilter.of([ref_a, SegmentRef("sB", 3)])
    chunks, vectors, stats = index.fetch("c", vf, ["sB:1", "sA:0", "sA:4"])  # sA:0 is deleted in this version
    assert [c["chunk_id"] for c in chunks] == ["sB:1", "sA:4"] and chunks[1]["text"] == TEXTS[4]
    np.testing.assert_array_equal(vectors, np.stack([vb[1], va[4]]))
    assert stats.n_rows == 2
    # collection-wide statistics over the live rows: an index of the fetched rows scores like the whole one
    toks = tokenize("rivers rivers otter")
    cs = index.collection_stats("c", vf, toks)
    live = [a[i] for i in (1, 2, 4)] + b
    whole = BM25Index.build([index_text(c) for c in live])
    assert cs.n == 6 and cs.avgdl == pytest.approx(whole.avgdl)
    assert cs.df == {t: whole.df(t) for t in set(toks) if whole.df(t)}
    part = BM25Index([(stats, None)], stats=cs)
    full = dict(zip([c["chunk_id"] for c in live], whole.scores("rivers rivers otter")))
    np.testing.assert_allclose(part.scores("rivers rivers otter"), [full["sB:1"], full["sA:4"]], rtol=1e-5)
    index.drop_segments("c", ["sA"])
    vf = VersionFilter.of([SegmentRef("sA", 5), SegmentRef("sB", 3)])
    assert {cid for cid, _ in index.search("c", vf, k=10, tokens=tokenize("rivers"))} == {"sB:1"}  # sA's rows gone
    assert index.fetch("c", vf, ["sA:4"])[0] == []
    deletes = [c for c in index._client.calls if c[0] == "query" and c[1].startswith("DELETE")]
    assert len(deletes) == 3  # chunks, postings, tombstones


def test_requests_carry_typed_parameters_and_the_ddl_names_the_dataset():
    client = bq.Client(DATASET)
    idx = BigQueryIndex(DATASET, client=client, bigquery_module=bq.module)
    idx.add_segment("c", "s1", _chunks("s1", TEXTS[:2]), _vectors(2, 0))
    idx.search("c", VersionFilter.of([SegmentRef("s1", 2)]), k=5, tokens=["bee"])
    loads = [c for c in client.calls if c[0] == "load"]
    assert [c[1] for c in loads] == [f"{DATASET}.chunks", f"{DATASET}.postings"]
    (_, sql, cfg), = [c for c in client.calls if c[0] == "query"]
    assert sql == bm25_sql(DATASET)
    kinds = {p.name: type(p).__name__ for p in cfg.query_parameters}
    assert kinds == {"collection": "ScalarQueryParameter", "vf": "ArrayQueryParameter", "k": "ScalarQueryParameter",
                     "tokens": "ArrayQueryParameter"}
    ddl = table_ddl(DATASET, 384)
    assert len(ddl) == 4 and all(f"`{DATASET}." in s for s in ddl) and "VECTOR INDEX" in ddl[-1]
    with pytest.raises(ConfigError, match="PROJECT.DATASET"):
        BigQueryIndex("nodot", client=client, bigquery_module=bq.module)


def test_one_load_job_per_table_per_segment_and_a_cost_ceiling_on_every_query():
    """Issue 30 C1/K1. BigQuery counts 1,500 modifications per table per day, failed jobs included
    (https://cloud.google.com/bigquery/quotas#load_jobs): a segment of 60 long chunks has ~6,000 postings rows,
    which the 5,000-row batches wrote as two load jobs into `postings`. And every index query must carry
    maximum_bytes_billed (https://cloud.google.com/bigquery/docs/best-practices-costs): without it a fetch on a
    large collection reads every embedding with no ceiling."""
    client = bq.Client(DATASET)
    idx = BigQueryIndex(DATASET, client=client, bigquery_module=bq.module, max_bytes_billed=123_456_789)
    words = [f"w{j}" for j in range(3000)]
    texts = [" ".join(words[(i * 97 + k) % 3000] for k in range(120)) for i in range(60)]
    idx.add_segment("c", "s1", _chunks("s1", texts), _vectors(60, 3))
    loads = [c for c in client.calls if c[0] == "load"]
    assert [c[1] for c in loads] == [f"{DATASET}.chunks", f"{DATASET}.postings"]
    (n_postings,), = client.db.execute("SELECT COUNT(*) FROM postings").fetchall()
    assert n_postings > 5_000  # the old batch size would have split it
    vf = VersionFilter.of([SegmentRef("s1", 60)])
    idx.search("c", vf, k=5, tokens=["w5"])
    idx.search("c", vf, k=5, qvec=_vectors(1, 9)[0])
    idx.fetch("c", vf, ["s1:0", "s1:7"])
    idx.collection_stats("c", vf, ["w5"])
    idx.drop_segments("c", ["s1"])
    queries = [c for c in client.calls if c[0] == "query"]
    assert len(queries) == 7 and all(cfg.maximum_bytes_billed == 123_456_789 for _, _, cfg in queries)


def test_the_context_passes_the_configured_ceiling(monkeypatch, home):
    from relayrag.context import default_context
    monkeypatch.setenv("RELAYRAG_INDEX_DATASET", DATASET)
    monkeypatch.setenv("RELAYRAG_INDEX_COLLECTIONS", "big")
    monkeypatch.setenv("RELAYRAG_INDEX_MAX_BYTES_BILLED", "5000000")
    import relayrag.retrieval.bigquery_index as bqi
    monkeypatch.setattr(bqi.BigQueryIndex, "__init__", lambda self, dataset, **kw: setattr(self, "kw", kw))
    assert default_context().index_backend("big").kw["max_bytes_billed"] == 5_000_000
