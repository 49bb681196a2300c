"""One DocStore contract, three backends: SQLiteDocStore, FirestoreDocStore over fake-firestore, and
FirestoreDocStore over the real Firestore emulator (gcloud SDK; skipped with the reason where missing).

Concurrency tests run on SQLite and the real emulator only: fake-firestore is single-threaded by design (no
locking, no preconditions), so threads against it would test the double, not relayrag.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from relayrag.backends.docstore import SQLiteDocStore
from relayrag.errors import ConflictError


def _fake_client():
    from fake_firestore import FakeFirestoreClient
    return FakeFirestoreClient()


@pytest.fixture(params=["sqlite", "fake-firestore", "firestore-emulator"])
def ds(request, tmp_path):
    if request.param == "sqlite":
        return SQLiteDocStore(tmp_path / "d.sqlite3")
    from relayrag.backends.firestore import FirestoreDocStore
    if request.param == "fake-firestore":
        return FirestoreDocStore(_fake_client(), "t")
    client = request.getfixturevalue("firestore_emulator_client")
    return FirestoreDocStore(client, f"t{uuid.uuid4().hex[:10]}")  # a fresh namespace per test


@pytest.fixture(params=["sqlite", "firestore-emulator"])
def concurrent_ds(request, tmp_path):
    if request.param == "sqlite":
        return SQLiteDocStore(tmp_path / "d.sqlite3")
    from relayrag.backends.firestore import FirestoreDocStore
    return FirestoreDocStore(request.getfixturevalue("firestore_emulator_client"), f"t{uuid.uuid4().hex[:10]}")


def _rec(path, sha="x", **kw):
    return {"path": path, "sha256": sha, "size": 3, "n_chunks": 1, **kw}


# -- collections and ingestion records ---------------------------------------------------------------------
def test_commit_creates_flips_and_lists(ds):
    assert ds.get_collection("c") is None and ds.list_collections() == []
    ds.commit_ingest("c", "v1", {"n_chunks": 2, "nested": [[1, 2], {"k": None}]},
                     [_rec("/a"), _rec("gs://b/c/x.pdf", pages=[1, 2])], [], expected_version=None)
    meta = ds.get_collection("c")
    assert meta["name"] == "c" and meta["current_version"] == "v1"
    assert meta["stats"] == {"n_chunks": 2, "nested": [[1, 2], {"k": None}]}  # nested arrays round-trip
    assert isinstance(meta["updated_at"], float)
    assert ds.get_file("c", "/a") == _rec("/a")
    assert ds.get_file("c", "gs://b/c/x.pdf")["pages"] == [1, 2]
    assert ds.get_file("c", "/missing") is None
    assert [r["path"] for r in ds.list_files("c")] == ["/a", "gs://b/c/x.pdf"]

    ds.commit_ingest("c", "v2", {"n_chunks": 1}, [_rec("/b", "y"), _rec("/a", "z")], ["gs://b/c/x.pdf"],
                     expected_version="v1")
    assert ds.get_collection("c")["current_version"] == "v2"
    assert [(r["path"], r["sha256"]) for r in ds.list_files("c")] == [("/a", "z"), ("/b", "y")]
    ds.commit_ingest("d", "w1", {}, [_rec("/a")], [], expected_version=None)
    assert [c["name"] for c in ds.list_collections()] == ["c", "d"]
    assert [r["path"] for r in ds.list_files("d")] == ["/a"]  # collections do not share records


def test_commit_is_compare_and_set(ds):
    ds.commit_ingest("c", "v1", {"n": 1}, [_rec("/a")], [], expected_version=None)
    with pytest.raises(ConflictError, match="moved from version None to 'v1'"):
        ds.commit_ingest("c", "v9", {}, [_rec("/b")], [], expected_version=None)
    with pytest.raises(ConflictError, match="moved from version 'v0' to 'v1'"):
        ds.commit_ingest("c", "v9", {}, [_rec("/b")], ["/a"], expected_version="v0")
    # the losers changed nothing
    assert ds.get_collection("c")["current_version"] == "v1" and ds.get_collection("c")["stats"] == {"n": 1}
    assert [r["path"] for r in ds.list_files("c")] == ["/a"]


def test_delete_wins_over_upsert_of_same_path(ds):
    ds.commit_ingest("c", "v1", {}, [_rec("/a")], [], expected_version=None)
    ds.commit_ingest("c", "v2", {}, [_rec("/a", "new")], ["/a"], expected_version="v1")
    assert ds.get_file("c", "/a") is None


def test_delete_collection_removes_everything(ds):
    ds.commit_ingest("c", "v1", {}, [_rec("/a"), _rec("/b")], [], expected_version=None)
    ds.record_dead_letter("c", "/bad", {"error": "corrupt"})
    ds.reward_arm("c", "hybrid", 1.0)
    ds.commit_ingest("keep", "k1", {}, [_rec("/a")], [], expected_version=None)
    ds.reward_arm("keep", "hybrid", 1.0)
    ds.delete_collection("c")
    assert ds.get_collection("c") is None and ds.list_files("c") == [] and ds.get_file("c", "/a") is None
    assert ds.list_dead_letters("c") == [] and ds.get_arms("c") == {}
    assert [c["name"] for c in ds.list_collections()] == ["keep"]
    assert ds.get_arms("keep") == {"hybrid": (2.0, 1.0)} and len(ds.list_files("keep")) == 1
    # and it can be created again from nothing
    ds.commit_ingest("c", "v5", {}, [], [], expected_version=None)
    assert ds.get_collection("c")["current_version"] == "v5" and ds.list_files("c") == []


# -- dead letters --------------------------------------------------------------------------------------------
def test_dead_letters_latest_wins_and_commit_clears(ds):
    assert ds.get_dead_letter("c", "/bad") is None and ds.list_dead_letters("c") == []
    ds.record_dead_letter("c", "/bad", {"error": "first", "generation": 1})
    ds.record_dead_letter("c", "/bad", {"error": "second", "generation": 2})
    ds.record_dead_letter("c", "/also-bad", {"error": "x"})
    ds.record_dead_letter("c", "/gone", {"error": "y"})
    assert ds.get_dead_letter("c", "/bad") == {"error": "second", "generation": 2, "path": "/bad"}
    assert [d["path"] for d in ds.list_dead_letters("c")] == ["/also-bad", "/bad", "/gone"]
    # a dead letter does not make a collection
    assert ds.get_collection("c") is None and ds.list_collections() == []
    ds.commit_ingest("c", "v1", {}, [_rec("/bad")], ["/gone"], expected_version=None)
    assert ds.get_dead_letter("c", "/bad") is None and ds.get_dead_letter("c", "/gone") is None
    assert [d["path"] for d in ds.list_dead_letters("c")] == ["/also-bad"]
    assert ds.list_dead_letters("other") == []


# -- runs and traces -----------------------------------------------------------------------------------------
def test_runs(ds):
    assert ds.get_run("r1") is None
    ds.create_run("r1", {"question": "q", "candidates": [[1, 0.5], [2, 0.25]]})
    assert ds.get_run("r1") == {"question": "q", "candidates": [[1, 0.5], [2, 0.25]]}
    assert ds.update_run("r1", {"route": "rag"}) == {"question": "q", "candidates": [[1, 0.5], [2, 0.25]],
                                                     "route": "rag"}
    assert ds.update_run("r1", {"route": "sql", "n": 1})["route"] == "sql"
    assert ds.get_run("r1")["n"] == 1
    with pytest.raises(KeyError):
        ds.update_run("nope", {"a": 1})
    ds.create_run("r1", {"question": "again"})  # replaces the data
    assert ds.get_run("r1") == {"question": "again"}


def test_list_runs_newest_first_with_limit(ds):
    assert ds.list_runs() == []
    for i in range(4):
        ds.create_run(f"r{i}", {"question": f"q{i}", "route": "rag"})
        time.sleep(0.002)  # distinct created_at even on a coarse clock
    runs = ds.list_runs(limit=3)
    assert [r["run_id"] for r in runs] == ["r3", "r2", "r1"]
    assert runs[0]["question"] == "q3" and runs[0]["route"] == "rag"
    assert isinstance(runs[0]["created_at"], float) and runs[0]["created_at"] >= runs[1]["created_at"]
    assert [r["run_id"] for r in ds.list_runs(limit=10)] == ["r3", "r2", "r1", "r0"]


def test_traces_keep_order_and_create_run_clears(ds):
    assert ds.get_trace("r1") == []
    ds.create_run("r1", {})
    for i in range(12):  # past 9 -> 10: the order is numeric, not lexicographic
        ds.append_trace("r1", {"name": f"s{i}", "i": i})
    assert [t["i"] for t in ds.get_trace("r1")] == list(range(12))
    ds.append_trace("r2", {"name": "other"})
    assert [t["name"] for t in ds.get_trace("r2")] == ["other"]
    ds.create_run("r1", {"question": "new"})
    assert ds.get_trace("r1") == []
    ds.append_trace("r1", {"name": "first"})
    assert [t["name"] for t in ds.get_trace("r1")] == ["first"]


# -- bandit arms ---------------------------------------------------------------------------------------------
def test_arms_beta_update(ds):
    assert ds.get_arms("c") == {}
    assert ds.reward_arm("c", "hybrid", 1.0) == (2.0, 1.0)
    assert ds.reward_arm("c", "hybrid", 0.25) == (2.25, 1.75)
    assert ds.reward_arm("c", "bm25", -3) == (1.0, 2.0)      # clamped to 0
    assert ds.reward_arm("c", "bm25", 7.5) == (2.0, 2.0)     # clamped to 1
    assert ds.reward_arm("c", "dense/v2", 0.5) == (1.5, 1.5)  # any arm name
    assert ds.get_arms("c") == {"hybrid": (2.25, 1.75), "bm25": (2.0, 2.0), "dense/v2": (1.5, 1.5)}
    assert ds.get_arms("other") == {}


def test_reward_arms_applies_each_reward_id_once(ds):
    out = ds.reward_arms("c", {"ja/bm25": 1.0, "latin/hybrid": 0.25}, reward_id="run1:0")
    assert out == {"ja/bm25": (2.0, 1.0), "latin/hybrid": (1.25, 1.75)}
    assert ds.reward_arms("c", {"ja/bm25": 1.0, "latin/hybrid": 0.25}, reward_id="run1:0") is None  # a retry
    assert ds.reward_arms("c", {"ja/bm25": 5.0}, reward_id="run1:1") == {"ja/bm25": (3.0, 1.0)}  # clamped
    assert ds.get_arms("c") == {"ja/bm25": (3.0, 1.0), "latin/hybrid": (1.25, 1.75)}
    assert ds.reward_arms("other", {"ja/bm25": 0.0}, reward_id="run1:0") == {"ja/bm25": (1.0, 2.0)}  # per collection
    with pytest.raises(ValueError):
        ds.reward_arms("c", {"x": 1.0}, reward_id="")
    ds.delete_collection("c")
    assert ds.get_arms("c") == {}
    assert ds.reward_arms("c", {"ja/bm25": 1.0}, reward_id="run1:0") == {"ja/bm25": (2.0, 1.0)}  # ids went too


# -- concurrency (SQLite and the real Firestore emulator) ----------------------------------------------------
def _run_threads(n, fn):
    errors = []

    def wrap(i):
        try:
            fn(i)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "threads did not finish"
    assert not errors, errors


def test_concurrent_rewards_lose_none(concurrent_ds):
    """The issue's 'done when': 8 threads x 50 rewards each on two arms = 800 updates, none lost."""
    returned = []

    def worker(i):
        for k in range(50):
            returned.append(concurrent_ds.reward_arm("c", "hybrid", 1.0))
            concurrent_ds.reward_arm("c", "bm25", 0.25 if k % 2 else 0.0)

    _run_threads(8, worker)
    arms = concurrent_ds.get_arms("c")
    assert arms["hybrid"] == (1.0 + 400, 1.0)
    assert arms["bm25"] == pytest.approx((1.0 + 8 * 25 * 0.25, 1.0 + 8 * (25 * 0.75 + 25)), abs=1e-9)
    # every call got its own post-update state: 400 distinct alphas 2..401
    assert sorted(a for a, _ in returned) == [float(x) for x in range(2, 402)]


def test_concurrent_duplicate_rewards_apply_once(concurrent_ds):
    """8 threads deliver the same 20 reward ids (a retried grade call): each id counts exactly once."""
    applied = []

    def worker(i):
        for k in range(20):
            if concurrent_ds.reward_arms("c", {"latin/bm25": 1.0, "latin/dense": 0.0}, reward_id=f"r{k}") is not None:
                applied.append(k)

    _run_threads(8, worker)
    assert sorted(applied) == list(range(20))
    assert concurrent_ds.get_arms("c") == {"latin/bm25": (21.0, 1.0), "latin/dense": (1.0, 21.0)}


def test_concurrent_traces_get_distinct_ordered_seqs(concurrent_ds):
    concurrent_ds.create_run("r", {})

    def worker(i):
        for k in range(20):
            concurrent_ds.append_trace("r", {"thread": i, "k": k})

    _run_threads(6, worker)
    trace = concurrent_ds.get_trace("r")
    assert len(trace) == 120
    for i in range(6):  # each thread's entries appear in the order it appended them
        assert [t["k"] for t in trace if t["thread"] == i] == list(range(20))


def test_concurrent_run_updates_merge(concurrent_ds):
    concurrent_ds.create_run("r", {"question": "q"})

    def worker(i):
        for k in range(5):
            concurrent_ds.update_run("r", {f"t{i}_{k}": k})

    _run_threads(4, worker)
    data = concurrent_ds.get_run("r")
    assert data == {"question": "q", **{f"t{i}_{k}": k for i in range(4) for k in range(5)}}


def test_concurrent_commits_exactly_one_wins(concurrent_ds):
    concurrent_ds.commit_ingest("c", "v0", {}, [_rec("/base")], [], expected_version=None)
    wins, losses = [], []

    def worker(i):
        try:
            concurrent_ds.commit_ingest("c", f"v1-{i}", {"writer": i}, [_rec(f"/w{i}")], [], expected_version="v0")
            wins.append(i)
        except ConflictError:
            losses.append(i)

    _run_threads(6, worker)
    assert len(wins) == 1 and len(losses) == 5
    w = wins[0]
    meta = concurrent_ds.get_collection("c")
    assert meta["current_version"] == f"v1-{w}" and meta["stats"] == {"writer": w}
    assert [r["path"] for r in concurrent_ds.list_files("c")] == ["/base", f"/w{w}"]


# -- Firestore only: commits bigger than one batch (staged, then flipped, then applied) -------------------------
@pytest.fixture(params=["fake-firestore", "firestore-emulator"])
def small_batch_fs(request):
    """FirestoreDocStore whose batches hold 11 writes, so a 12-path commit takes the staged path."""
    from relayrag.backends.firestore import FirestoreDocStore
    client = (_fake_client() if request.param == "fake-firestore"
              else request.getfixturevalue("firestore_emulator_client"))
    return FirestoreDocStore(client, f"t{uuid.uuid4().hex[:10]}", max_batch_writes=11)


def _staged_docs(fs, collection):
    return [s.to_dict() for s in fs._sub(collection, "staged").stream()]


def test_big_commit_is_staged_then_applied(small_batch_fs):
    fs = small_batch_fs
    fs.commit_ingest("c", "v1", {}, [_rec(f"/f{i:02d}") for i in range(30)], [], expected_version=None)
    for i in (3, 4):
        fs.record_dead_letter("c", f"/f{i:02d}", {"error": "was bad"})
    fs.record_dead_letter("c", "/other", {"error": "stays"})
    fs.commit_ingest("c", "v2", {"n": 2}, [_rec(f"/f{i:02d}", "new") for i in range(5)],
                     [f"/f{i:02d}" for i in range(20, 30)], expected_version="v1")
    assert fs.get_collection("c")["current_version"] == "v2"
    files = fs.list_files("c")
    assert [r["path"] for r in files] == [f"/f{i:02d}" for i in range(20)]
    assert [r["sha256"] for r in files[:6]] == ["new"] * 5 + ["x"]
    assert [d["path"] for d in fs.list_dead_letters("c")] == ["/other"]
    assert _staged_docs(fs, "c") == []  # applied and removed
    assert "pending" not in fs._coll("c").get().to_dict()


def test_interrupted_big_commit_reads_consistently_and_rolls_forward(small_batch_fs, monkeypatch):
    fs = small_batch_fs
    fs.commit_ingest("c", "v1", {}, [_rec(f"/f{i:02d}") for i in range(12)], [], expected_version=None)
    fs.record_dead_letter("c", "/f00", {"error": "old"})

    def crash(collection, version):
        raise RuntimeError("instance died after the flip")

    monkeypatch.setattr(fs, "_apply_staged", crash)
    with pytest.raises(RuntimeError):
        fs.commit_ingest("c", "v2", {}, [_rec(f"/f{i:02d}", "new") for i in range(6)],
                         [f"/f{i:02d}" for i in range(6, 12)], expected_version="v1")
    monkeypatch.undo()
    # flipped: readers see exactly v2's records although the changes are still only staged
    assert fs.get_collection("c")["current_version"] == "v2"
    assert fs._coll("c").get().to_dict()["pending"] == "v2" and len(_staged_docs(fs, "c")) == 12
    assert [(r["path"], r["sha256"]) for r in fs.list_files("c")] == [(f"/f{i:02d}", "new") for i in range(6)]
    assert fs.get_file("c", "/f00")["sha256"] == "new" and fs.get_file("c", "/f07") is None
    assert fs.get_dead_letter("c", "/f00") is None and fs.list_dead_letters("c") == []
    # the next writer rolls the interrupted commit forward before its own compare-and-set
    fs.commit_ingest("c", "v3", {}, [_rec("/g")], [], expected_version="v2")
    assert "pending" not in fs._coll("c").get().to_dict() and _staged_docs(fs, "c") == []
    assert [r["path"] for r in fs.list_files("c")] == [f"/f{i:02d}" for i in range(6)] + ["/g"]
    assert fs.get_dead_letter("c", "/f00") is None


def test_big_commit_loser_leaves_nothing(small_batch_fs):
    fs = small_batch_fs
    fs.commit_ingest("c", "v1", {}, [_rec("/a")], [], expected_version=None)
    with pytest.raises(ConflictError):
        fs.commit_ingest("c", "v2", {}, [_rec(f"/f{i:02d}") for i in range(20)], [], expected_version="v0")
    assert _staged_docs(fs, "c") == [] and [r["path"] for r in fs.list_files("c")] == ["/a"]


def test_staged_compare_and_set_race_on_the_emulator(firestore_emulator_client):
    """Two big commits from the same version race on the real emulator: one flips, the loser's staged
    changes are removed, the winner's records are exactly what readers see."""
    from relayrag.backends.firestore import FirestoreDocStore
    fs = FirestoreDocStore(firestore_emulator_client, f"t{uuid.uuid4().hex[:10]}", max_batch_writes=11)
    fs.commit_ingest("c", "v0", {}, [], [], expected_version=None)
    outcome = {}

    def worker(i):
        try:
            fs.commit_ingest("c", f"v1-{i}", {}, [_rec(f"/w{i}-{k:02d}") for k in range(15)], [],
                             expected_version="v0")
            outcome[i] = "won"
        except ConflictError:
            outcome[i] = "lost"

    _run_threads(3, worker)
    winners = [i for i, o in outcome.items() if o == "won"]
    assert len(winners) == 1 and len(outcome) == 3
    w = winners[0]
    assert fs.get_collection("c")["current_version"] == f"v1-{w}"
    assert [r["path"] for r in fs.list_files("c")] == [f"/w{w}-{k:02d}" for k in range(15)]
    assert _staged_docs(fs, "c") == []


# -- version pins (issue 10 item 8) -----------------------------------------------------------------------
def test_version_pins_are_leases(ds):
    assert ds.pinned_versions("c") == set()
    ds.pin_version("c", "v1", "run-a", ttl_s=60)
    ds.pin_version("c", "v2", "run-b", ttl_s=60)
    ds.pin_version("other", "v9", "run-c", ttl_s=60)
    assert ds.pinned_versions("c") == {"v1", "v2"}
    ds.pin_version("c", "v3", "run-a", ttl_s=60)  # a run re-pins on a retry: its old version is free again
    assert ds.pinned_versions("c") == {"v2", "v3"}
    ds.pin_version("c", "v2", "run-b", ttl_s=-1)  # expired
    assert ds.pinned_versions("c") == {"v3"}
    ds.delete_collection("c")
    assert ds.pinned_versions("c") == set() and ds.pinned_versions("other") == {"v9"}


def test_firestore_arm_counters_are_sharded():
    """Every graded run of a collection rewards the same arms; one document per arm caps a collection at about
    one reward per second (https://cloud.google.com/firestore/docs/solutions/counters). reward_arms spreads
    the gains over ARM_SHARDS documents per arm and get_arms sums them."""
    from relayrag.backends.firestore import ARM_SHARDS, FirestoreDocStore
    ds = FirestoreDocStore(_fake_client(), "t")
    for k in range(40):
        ds.reward_arms("c", {"latin/bm25": 1.0, "latin/dense": 0.25}, reward_id=f"run{k}:0")
    docs = [s.to_dict() for s in ds._sub("c", "arms").stream()]
    per_arm = {arm: sum(1 for d in docs if d["arm"] == arm) for arm in ("latin/bm25", "latin/dense")}
    assert all(1 < n <= ARM_SHARDS for n in per_arm.values()), per_arm
    arms = ds.get_arms("c")
    assert arms["latin/bm25"] == pytest.approx((41.0, 1.0)) and arms["latin/dense"] == pytest.approx((11.0, 31.0))
    assert ds.reward_arm("c", "latin/bm25", 1.0) == (42.0, 1.0)  # the unsharded single update sees the shards
    ds.delete_collection("c")
    assert ds.get_arms("c") == {}


# -- people's verdicts (relayrag.feedback) -----------------------------------------------------------------
def _verdict(run_id, identity, r=None, **kw):
    return {"run_id": run_id, "identity": identity, "verdict": "up" if r == 1.0 else "down",
            "bandit": {} if r is None else {"latin/bm25/human": r}, "updated_at": time.time(), **kw}


def test_feedback_is_one_per_run_and_identity_and_replaces_its_bandit_share(ds):
    assert ds.put_feedback("c", "r1", "alice", _verdict("r1", "alice", 1.0)) is None
    assert ds.get_arms("c")["latin/bm25/human"] == (2.0, 1.0)
    old = ds.put_feedback("c", "r1", "alice", _verdict("r1", "alice", 0.0, reason="wrong"))
    assert old["verdict"] == "up"
    assert ds.get_arms("c")["latin/bm25/human"] == (1.0, 2.0)   # the 👍 was taken back, not added to
    ds.put_feedback("c", "r1", "alice", _verdict("r1", "alice", 0.0, reason="wrong"))  # the same again: no-op
    assert ds.get_arms("c")["latin/bm25/human"] == (1.0, 2.0)
    ds.put_feedback("c", "r1", "bob", _verdict("r1", "bob", 1.0))
    ds.put_feedback("c", "r2", "alice", _verdict("r2", "alice"))  # teaches nothing (e.g. outdated)
    assert ds.get_arms("c")["latin/bm25/human"] == (2.0, 2.0)
    assert [(e["run_id"], e["identity"]) for e in ds.list_feedback("c")] == [("r2", "alice"), ("r1", "bob"),
                                                                           ("r1", "alice")]
    assert [e["run_id"] for e in ds.list_feedback("c", identity="alice")] == ["r2", "r1"]
    assert [e["identity"] for e in ds.list_feedback("c", run_id="r1")] == ["bob", "alice"]
    assert len(ds.list_feedback("c", limit=1)) == 1 and ds.list_feedback("other") == []
    assert ds.put_feedback("c", "r1", "bob", None)["verdict"] == "up"  # withdrawn: its 👍 is gone too
    assert ds.get_arms("c")["latin/bm25/human"] == (1.0, 2.0)
    assert ds.put_feedback("c", "r1", "bob", None) is None


def test_feedback_is_deleted_with_the_collection(ds):
    ds.commit_ingest("c", "v1", {}, [_rec("/a")], [], expected_version=None)
    ds.put_feedback("c", "r1", "alice", _verdict("r1", "alice", 1.0))
    ds.put_feedback("d", "r2", "alice", _verdict("r2", "alice", 1.0))
    ds.delete_collection("c")
    assert ds.list_feedback("c") == [] and "latin/bm25/human" not in ds.get_arms("c")
    assert len(ds.list_feedback("d")) == 1


def test_concurrent_verdicts_keep_the_bandit_consistent(concurrent_ds):
    """8 threads flip the verdicts of 4 identities on one run back and forth; afterwards the human
    posterior equals exactly what the final verdicts say (no lost or doubled delta)."""
    ids = [f"u{i}" for i in range(4)]
    errors = []

    def flip(i):
        try:
            for k in range(6):
                ident = ids[(i + k) % len(ids)]
                r = float((i + k) % 2)
                concurrent_ds.put_feedback("c", "r1", ident, _verdict("r1", ident, r))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=flip, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = concurrent_ds.list_feedback("c", run_id="r1")
    assert sorted(e["identity"] for e in final) == ids
    ups = sum(1 for e in final if e["bandit"]["latin/bm25/human"] == 1.0)
    a, b = concurrent_ds.get_arms("c")["latin/bm25/human"]
    assert (round(a, 6), round(b, 6)) == (1.0 + ups, 1.0 + len(ids) - ups)


def test_feedback_submit_end_to_end_on_each_backend(ds):
    """relayrag.feedback over the backend: a run's verdict stored, replaced, visible per identity, gone with the
    collection (the Firestore emulator is the cloud's docstore)."""
    from relayrag import feedback
    from relayrag.records import new_run
    ds.create_run("r9", new_run("r9", "q?", "c", route="rag", arm="hybrid", arm_draws={"hybrid": 0.6},
                                bandit_context="latin", answer="a [1]."))
    up = feedback.submit(ds, "r9", "alice", feedback.parse_feedback(verdict="up"), visible={"c"})
    assert up["bandit"] == {"latin/hybrid/human": 1.0} and up["replaced"] is False
    down = feedback.submit(ds, "r9", "alice", feedback.parse_feedback(verdict="down", reason="wrong_source",
                                                                     doc="a.pdf", page=2), visible={"c"})
    assert down["replaced"] is True and ds.get_arms("c")["latin/hybrid/human"] == (1.0, 2.0)
    assert [e["doc"] for e in feedback.list_verdicts(ds, ["c"], identity="alice")] == ["a.pdf"]
    assert feedback.list_verdicts(ds, ["c"], identity="bob") == []
    ds.delete_collection("c")
    assert feedback.list_verdicts(ds, ["c"], identity="alice", admin=True) == []
