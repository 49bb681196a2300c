"""relayrag.service: every operation front ends call, on a real embedded context (temp RELAYRAG_HOME), with
typed results and the errors front ends present."""

from __future__ import annotations

import pytest
from relayrag.errors import NotFoundError, RelayragError
from relayrag.records import RunResult
from relayrag.service import (
    CollectionInfo,
    IngestResult,
    RunDetail,
    SearchResult,
    Service,
    SqlQueryResult,
    check_arm,
    check_engine,
)

from tests.conftest import EXAMPLES, sql_route_reply

CHINOOK = EXAMPLES / "chinook" / "chinook.sqlite"


@pytest.fixture
def service(ctx, small_corpus):
    svc = Service(ctx)
    first = svc.ingest(small_corpus, "docs")
    assert isinstance(first, IngestResult) and first.files["ingested"] == 4 and first.version
    return svc


def test_ask_returns_a_typed_cited_result_and_get_run_reads_it_back(service):
    res = service.ask("How many worker bees live in a colony in summer?", "docs")
    assert isinstance(res, RunResult) and res.route == "rag" and res.grounded and "60,000" in res.answer
    assert res.citations[0].doc == "bees.txt" and res.citations[0].page == 1
    assert [s.name for s in res.stages][:3] == ["classify", "hyde", "retrieve"]
    detail = service.get_run(res.run_id)
    assert isinstance(detail, RunDetail) and detail.result == res
    assert "candidates" not in detail.record and detail.record["question"].startswith("How many")
    assert [t["name"] for t in detail.trace] == [s.name for s in res.stages]
    # the dict front ends print holds what build_result set, nothing more
    assert set(res.to_dict()) == {"run_id", "question", "collection", "route", "answer", "citations", "arm",
                                  "grounded", "refused", "found", "reward", "retry_count", "regen_count",
                                  "stages", "sql", "rows", "row_count"}


def test_search_filters_and_ranks(service):
    r = service.search("waggle dance", "docs", k=2, arm="bm25")
    assert isinstance(r, SearchResult) and r.hits[0].doc == "bees.txt" and r.hits[0].rank == 1
    assert len(r.hits) <= 2 and r.version
    only = service.search("electricity", "docs", k=5, doc="*.md")
    assert only.filters == {"doc": "*.md"} and {h.doc for h in only.hits} == {"solar.md"}
    with pytest.raises(RelayragError, match="unknown retrieval arm 'fast'; valid: dense, bm25, hybrid"):
        service.search("x", "docs", arm="fast")
    with pytest.raises(NotFoundError, match=r"unknown collection 'nope' \(collections: docs\)"):
        service.search("x", "nope")


def test_route_and_ask_agree_on_a_visual_question(service):
    """Issue 28 item 11: MCP classify (Service.route) sent a figure question to rag while ask sent it to visual."""
    for q in ("Which figure shows the waggle dance?", "hello", "How many eggs does the queen lay per day?"):
        assert service.route(q, "docs").route == service.ask(q, "docs").route, q
    assert service.route("Which figure shows the waggle dance?", "docs").route == "visual"


def test_search_says_when_nothing_matches(service):
    """Issue 28 item 9: a query nothing matches returned five unrelated chunks with no signal."""
    good = service.search("How many eggs does the queen bee lay per day?", "docs", k=3)
    assert good.good_match is True and good.hits[0].doc == "bees.txt" and good.hits[0].p_relevant > 0.1
    keyword = service.search("waggle", "docs", k=3)  # one keyword: low cosine, but the chunk holds the word
    assert keyword.good_match is True
    none = service.search("recipe for chocolate cake with raspberries", "docs", k=3)
    assert none.hits and none.good_match is False and all(h.p_relevant < 0.5 for h in none.hits)
    # issue 28 walk, item 4: two words, the chunk holds only the commoner one ("allowance" of "meal allowance"):
    # no hit is relevant, so no good match, though the old third-of-the-words rule counted it
    half = service.search("panel insurance", "docs", k=3)
    top = half.hits[0]
    assert top.doc == "solar.md" and 1 / 3 <= top.words < 0.5 and top.p_relevant < 0.5, top
    assert half.good_match is False and not any(h.relevant for h in half.hits)
    assert all(h.relevant is not None for h in good.hits) and good.hits[0].relevant


def test_an_empty_search_query_is_refused_like_an_empty_question(service):
    """A new user's `relayrag search ""` printed five chunks and exit 0 while `ask ""` said the question is
    empty."""
    from relayrag.errors import BadRequestError
    for q in ("", "   \n\t"):
        with pytest.raises(BadRequestError, match="the query is empty"):
            service.search(q, "docs")


def test_ingest_is_incremental_and_delete_reports_what_went(service, small_corpus):
    again = service.ingest(small_corpus, "docs")
    assert again.files["skipped"] == 4 and again.chunks_embedded == 0
    gone = service.delete("docs", ["bees.txt"])
    assert gone.files["deleted"] == 1 and [p.rsplit("/", 1)[-1] for p in gone.deleted_paths] == ["bees.txt"]
    assert gone.files_left == 3
    with pytest.raises(NotFoundError, match="no document matched"):
        service.delete("docs", ["bees.txt"], require_match=True)
    with pytest.raises(RelayragError):
        service.delete("bad name!", ["x"])


def test_list_collections_merges_documents_and_warehouses(service):
    service.warehouse_load("tables_only", [CHINOOK])
    cols = service.list_collections()
    assert all(isinstance(c, CollectionInfo) for c in cols)
    by = {c.name: c for c in cols}
    assert by["docs"].current_version and by["docs"].warehouse is None
    assert by["tables_only"].current_version is None and by["tables_only"].warehouse.tables
    assert [c.name for c in cols] == sorted(by)
    assert service.warehouse_schema("tables_only")["tables"]
    with pytest.raises(NotFoundError, match="has no warehouse"):
        service.warehouse_schema("docs")


def test_sql_query_typed_statuses(make_llm_ctx):
    ctx, _ = make_llm_ctx(sql_route_reply("SELECT 1 AS one"))
    svc = Service(ctx)
    svc.warehouse_load("shop", [CHINOOK])
    ok = svc.sql_query("one?", "shop")
    assert isinstance(ok, SqlQueryResult) and ok.status == "ok" and ok.rows == [[1]] and ok.columns == ["one"]
    ctx2, _ = make_llm_ctx(sql_route_reply("DELETE FROM Customer"))
    refused = Service(ctx2).sql_query("wipe it", "shop")
    assert refused.status == "refused" and refused.error and refused.sql
    with pytest.raises(NotFoundError, match="has no warehouse"):
        svc.sql_query("x", "nothing")


def test_unknown_run_engine_and_arm():
    assert check_engine(" Cloud ") == "cloud" and check_arm("bm25") == "bm25"
    with pytest.raises(RelayragError, match="unknown engine 'lambda'"):
        check_engine("lambda")
    with pytest.raises(ValueError, match="valid: dense, bm25, hybrid"):
        check_arm("x")


def test_get_run_of_unknown_id(ctx):
    with pytest.raises(NotFoundError, match="unknown run_id 'nope'"):
        Service(ctx).get_run("nope")


def test_cloud_only_runs_the_deployed_rag_workflow(ctx):
    with pytest.raises(RelayragError, match="runs only on the embedded engine"):
        Service(ctx, engine="cloud").run_workflow("echo", {})


def test_run_record_patches_are_typed_and_bounded(ctx):
    """Stages write the record through one path (stages.base.write_run -> records.check_patch)."""
    from relayrag.records import FIRESTORE_DOCUMENT_BYTES, RunRecord, check_patch, new_run
    from relayrag.stages.base import write_run
    rec = new_run("p1", "q?", "docs", route="rag")
    assert RunRecord.model_validate(rec).route.value == "rag"
    ctx.docstore.create_run("p1", rec)
    write_run(ctx, "p1", {"answer": "a [1]", "citations": [{"n": 1, "doc": "x.pdf", "page": 2, "chunk_id": "c"}],
                          "a_new_key": {"kept": True}})
    stored = ctx.docstore.get_run("p1")
    assert stored["a_new_key"] == {"kept": True} and stored["citations"][0]["page"] == 2
    with pytest.raises(RelayragError, match=r"citations\.0\.page"):
        check_patch({"citations": [{"n": 1, "doc": "x.pdf", "page": "two", "chunk_id": "c"}]})
    with pytest.raises(RelayragError, match="route"):
        check_patch({"route": "teleport"})
    with pytest.raises(RelayragError, match="would not fit a Firestore document"):
        check_patch({"rows": [["x" * 1000]] * (FIRESTORE_DOCUMENT_BYTES // 1000)})
