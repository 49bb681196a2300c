import threading

import pytest

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.backends.docstore import SQLiteDocStore


def test_runs_and_traces(tmp_path):
    ds = SQLiteDocStore(tmp_path / "d.sqlite3")
    ds.create_run("r1", {"question": "q"})
    assert ds.update_run("r1", {"route": "rag"}) == {"question": "q", "route": "rag"}
    ds.append_trace("r1", {"name": "classify"})
    ds.append_trace("r1", {"name": "hyde"})
    assert [t["name"] for t in ds.get_trace("r1")] == ["classify", "hyde"]
    with pytest.raises(KeyError):
        ds.update_run("nope", {})


def test_commit_ingest_is_one_write(tmp_path):
    ds = SQLiteDocStore(tmp_path / "d.sqlite3")
    ds.commit_ingest("c", "v1", {"n_chunks": 2}, [{"path": "/a", "sha256": "x"}], [], expected_version=None)
    assert ds.get_collection("c")["current_version"] == "v1"
    ds.commit_ingest("c", "v2", {}, [], ["/a"], expected_version="v1")
    assert ds.get_file("c", "/a") is None and ds.get_collection("c")["current_version"] == "v2"
    assert [c["name"] for c in ds.list_collections()] == ["c"]


def test_concurrent_rewards_lose_nothing(tmp_path):
    ds = SQLiteDocStore(tmp_path / "d.sqlite3")

    def worker():
        for _ in range(50):
            ds.reward_arm("c", "hybrid", 1.0)
            ds.reward_arm("c", "bm25", 0.0)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    arms = ds.get_arms("c")
    assert arms["hybrid"] == (1 + 400, 1)
    assert arms["bm25"] == (1, 1 + 400)


def test_local_blobstore_atomic_and_safe(tmp_path):
    bs = LocalBlobStore(tmp_path / "b")
    bs.put_bytes("a/b/c.txt", b"x")
    assert bs.get_bytes("a/b/c.txt") == b"x" and bs.list("a") == ["a/b/c.txt"]
    assert bs.delete_prefix("a") == 1 and not bs.exists("a/b/c.txt")
    with pytest.raises(ValueError):
        bs.put_bytes("../escape", b"x")
    with pytest.raises(FileNotFoundError):
        bs.get_bytes("missing")
