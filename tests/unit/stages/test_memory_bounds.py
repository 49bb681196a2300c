"""Memory for large collections (issue 10 item 5): a collection that would not fit in a function's memory is
a clear error before loading (not an out-of-memory kill), and stages that need only the candidates' texts
(hyde's first round) do not load the snapshot at all; hallucination_check without an LLM reads the
run's rows of its pinned version (page openings and BM25 idf for question support; relayrag.retrieval.view),
never a newer one, and never the whole version in a cold instance."""

from __future__ import annotations

import pytest

from relayrag.errors import RelayragError
from relayrag.ingest import snapshot as snapshot_mod
from relayrag.ingest.pipeline import ingest
from relayrag.stage_registry import STAGES
from relayrag.stages.base import execute


def _fresh_ctx(monkeypatch, **env):
    from relayrag.context import default_context, set_default_context
    from relayrag.settings import load_settings
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    load_settings.cache_clear()
    set_default_context(None)
    return default_context()


def test_a_collection_too_big_for_the_function_is_refused_with_the_size_it_needs(ctx, small_corpus, monkeypatch):
    ingest(ctx, small_corpus, "c")
    rss_mib = snapshot_mod._rss_bytes() // 2**20
    small = _fresh_ctx(monkeypatch, RELAYRAG_MEMORY_LIMIT_MB=str(rss_mib + 1))
    with pytest.raises(RelayragError, match=r"collection 'c' \(version v\S+, \d+ chunks, 384-d vectors\) needs "
                                            r"about .* MiB loaded, .* give the function at least [\d,]+ MiB"):
        small.snapshot("c")
    roomy = _fresh_ctx(monkeypatch, RELAYRAG_MEMORY_LIMIT_MB=str(rss_mib + 4096))
    assert len(roomy.snapshot("c")) > 0


def test_estimate_matches_the_measured_bytes_per_chunk():
    """The formula infra/README.md states: N x (BYTES_PER_CHUNK + 2 x dim)."""
    assert snapshot_mod.estimated_bytes(100_000, 384) == 100_000 * (5_800 + 768)
    assert snapshot_mod.estimated_bytes(100_000, 768) == 100_000 * (5_800 + 1_536)


def test_stages_that_need_only_texts_do_not_load_the_snapshot(ctx, small_corpus, monkeypatch):
    ingest(ctx, small_corpus, "c")
    body = {"run_id": "m"}
    execute(STAGES["classify"], {**body, "question": "How many eggs does the queen lay per day?",
                                 "collection": "c"}, ctx)
    loads = []
    real = snapshot_mod.load_snapshot

    def counting(*a, **k):
        loads.append(a[1:3])
        return real(*a, **k)
    monkeypatch.setattr("relayrag.context.load_snapshot", counting)
    assert execute(STAGES["hyde"], body, ctx)[0] == 200 and loads == []  # first round: no snapshot
    for stage in ("retrieve", "rerank", "grade", "generate"):
        assert execute(STAGES[stage], body, ctx)[0] == 200, stage
    ctx._snapshots.clear()  # a cold hallucination_check instance
    loads.clear()
    pinned = ctx.docstore.get_run("m")["snapshot_version"]
    status, out = execute(STAGES["hallucination_check"], body, ctx)
    assert status == 200 and out["grounded"]
    # question support reads the run's rows of the version it pinned (retrieval.view), not the whole version
    assert loads == []
    from relayrag.retrieval import view as V
    assert any(key[3] == pinned for key in V._views)
