"""Issue 10, held up well (kept as a regression test): SIGKILLs during ingest, with edits in between, leave
no duplicates, orphans or missing documents, and the same chunk ids as a clean ingest of the final folder."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.backends.docstore import SQLiteDocStore
from relayrag.ingest.snapshot import read_chunks, read_manifest, version_segments

RELAYRAG = Path(sys.executable).parent / "relayrag"


def _ingest(folder: Path, home: Path, kill_after: float | None = None) -> int | None:
    env = {**os.environ, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    p = subprocess.Popen([str(RELAYRAG), "ingest", str(folder), "-c", "k", "--no-progress", "--json"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    if kill_after is None:
        return p.wait(timeout=600)
    time.sleep(kill_after)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    return None


def _state(home: Path) -> tuple[list[str], set[str]]:
    docs = SQLiteDocStore(home / "relayrag.sqlite3")
    version = docs.get_collection("k")["current_version"]
    ids = [c["chunk_id"] for c in read_chunks(LocalBlobStore(home / "blobs"), "k", version)]
    return ids, {Path(r["path"]).name for r in docs.list_files("k")}


def test_sigkills_during_ingest_lose_and_duplicate_nothing(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    rng = random.Random(7)
    for i in range(12):
        (folder / f"doc{i:02d}.txt").write_text(" ".join(f"Fact {i}.{j}: item {j} of report {i} is filed."
                                                         for j in range(60)), encoding="utf-8")
    home = tmp_path / "home"
    assert _ingest(folder, home) == 0
    for round_ in range(4):  # edit, start an ingest, kill it somewhere between start-up and commit
        (folder / f"doc{round_:02d}.txt").write_text(f"Edited in round {round_}. " * 40, encoding="utf-8")
        (folder / f"new{round_}.txt").write_text(f"A new file of round {round_}. " * 30, encoding="utf-8")
        if round_ % 2:
            (folder / f"doc{10 + round_ // 2:02d}.txt").unlink()
        _ingest(folder, home, kill_after=rng.uniform(0.5, 4.0))
    assert _ingest(folder, home) == 0
    ids, files = _state(home)
    assert len(ids) == len(set(ids))  # no duplicates
    assert files == {p.name for p in folder.iterdir()}  # no orphans, nothing missing
    clean = tmp_path / "clean"
    assert _ingest(folder, clean) == 0
    clean_ids, _ = _state(clean)
    assert sorted(ids) == sorted(clean_ids)  # ids hash the source path, the same folder in both homes
    # and no version folders are left behind but the current and the previous one, and no segment that
    # neither lists (a killed writer's segment is removed by the next commit's GC)
    snaps = home / "blobs" / "snapshots" / "k"
    versions = [p.name for p in snaps.iterdir() if p.name != "segments"]
    assert len(versions) <= 2
    store = LocalBlobStore(home / "blobs")
    listed = {r.id for v in versions for r in version_segments(read_manifest(store, "k", v), v)}
    assert {p.name for p in (snaps / "segments").iterdir()} == listed
