"""One ask reads one index version (issue 10 item 8).

retrieve stores row numbers; rerank, grade, generate and hallucination_check used to re-read the *current*
snapshot, so an ingest committed between retrieve and rerank gave `IndexError` or, worse, silently another
chunk at the same row. Now retrieve pins `snapshot_version` in the run record (and leases it in the docstore),
later stages read that version, and ingest's GC spares it while the run is in flight."""

from __future__ import annotations

import pytest

from tests.conftest import write_docs
from relayrag.engine.local import ask, local_transport
from relayrag.ingest.pipeline import ingest
from relayrag.ingest.snapshot import prefix

RODENT = "The capybara is the largest living rodent. Capybaras live in groups near rivers and lakes."


def _filler(i: int) -> str:
    return f"Report {i} on municipal budgets: the council approved road repairs and new street lights in district {i}."


def test_an_ingest_between_retrieve_and_rerank_does_not_change_what_the_run_reads(ctx, tmp_path):
    folder = write_docs(tmp_path / "d", {"a_rodent.txt": RODENT, "b.txt": _filler(0)})
    first = ingest(ctx, folder, "c")
    ingests_during_run = []

    def transport(method, url, body, timeout):
        status, out = local_transport(method, url, body, timeout)
        if url.endswith("/retrieve") and not ingests_during_run:
            # two commits while the run is in flight: rows shift (the rodent file is gone, 30 others come
            # first), and without a pin the second ingest's GC would delete the version this run retrieved from
            (folder / "a_rodent.txt").unlink()
            write_docs(folder, {f"a{i:02d}.txt": _filler(i) for i in range(1, 31)})
            ingests_during_run.append(ingest(ctx, folder, "c").version)
            (folder / "a01.txt").write_text(_filler(99), encoding="utf-8")
            ingests_during_run.append(ingest(ctx, folder, "c").version)
        return status, out

    result = ask("Which is the largest living rodent?", "c", transport=transport, arm="hybrid")
    assert len(ingests_during_run) == 2 and ingests_during_run[-1] != first.version
    assert ctx.docstore.get_collection("c")["current_version"] == ingests_during_run[-1]
    assert "capybara" in result["answer"].lower(), result
    assert result["citations"] and all(c["doc"] == "a_rodent.txt" for c in result["citations"])
    rec = ctx.docstore.get_run(result["run_id"])
    assert rec["snapshot_version"] == first.version
    # the pinned version survived both ingests' GC; the unpinned middle one did not
    assert ctx.blobstore.exists(prefix("c", first.version) + "manifest.json")
    assert first.version in ctx.docstore.pinned_versions("c")


def test_gc_spares_pinned_versions_until_the_lease_ends(ctx, tmp_path):
    folder = write_docs(tmp_path / "d", {"x.txt": RODENT})
    v1 = ingest(ctx, folder, "c").version
    ctx.docstore.pin_version("c", v1, "run-1", ttl_s=60)
    for i in range(3):
        (folder / "x.txt").write_text(RODENT + f" Edit {i}.", encoding="utf-8")
        ingest(ctx, folder, "c")
    assert ctx.blobstore.exists(prefix("c", v1) + "manifest.json")
    ctx.docstore.pin_version("c", v1, "run-1", ttl_s=-1)  # the lease ran out
    (folder / "x.txt").write_text(RODENT + " Final.", encoding="utf-8")
    ingest(ctx, folder, "c")
    assert not ctx.blobstore.exists(prefix("c", v1) + "manifest.json")


def test_a_vanished_pinned_version_is_a_clear_stage_error(ctx, tmp_path):
    from relayrag.errors import StageError
    folder = write_docs(tmp_path / "d", {"x.txt": RODENT})
    v1 = ingest(ctx, folder, "c").version
    ctx.blobstore.delete_prefix(prefix("c", v1))
    with pytest.raises(StageError, match="no longer exists"):
        ctx.snapshot("c", v1)


def test_gc_removes_a_version_folder_holding_only_a_temp_file(ctx, tmp_path):
    """Issue 10 item 13: a writer that died mid-`put_bytes` leaves `.tmp-*` alone in a version folder;
    LocalBlobStore.list hid it, so GC never saw that version (one survived 23 clean-ups)."""
    folder = write_docs(tmp_path / "d", {"x.txt": RODENT})
    ingest(ctx, folder, "c")
    dead = ctx.blobstore.root / "snapshots" / "c" / "v0000000000001-dead00"
    dead.mkdir(parents=True)
    (dead / ".tmp-abc123").write_bytes(b"half a chunks file")
    (folder / "x.txt").write_text(RODENT + " More.", encoding="utf-8")
    ingest(ctx, folder, "c")
    assert not dead.exists()
    # readers still never see a write in progress
    live = ctx.blobstore.root / "snapshots" / "c" / ctx.docstore.get_collection("c")["current_version"]
    (live / ".tmp-inflight").write_bytes(b"x")
    assert not any(".tmp-" in k for k in ctx.blobstore.list("snapshots/c/"))
    assert any(k.endswith("/.tmp-inflight") for k in ctx.blobstore.list("snapshots/c/", include_partial=True))
