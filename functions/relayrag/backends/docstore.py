"""Docstore: runs, traces, bandit arms, collections and ingestion records.

Firestore in the cloud; SQLite (WAL) embedded. The protocol is domain-shaped (not a generic KV API) so
each backend can use its own atomic primitive: a SQLite `BEGIN IMMEDIATE` transaction here, a Firestore
transaction / `Increment` there.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from relayrag.errors import ConflictError, is_disk_full  # noqa: F401  (is_disk_full re-exported)


@runtime_checkable
class DocStore(Protocol):
    # collections: {name, current_version, updated_at, stats}
    def get_collection(self, name: str) -> dict | None: ...
    def list_collections(self) -> list[dict]: ...
    def delete_collection(self, name: str) -> None: ...
    # ingestion records, one per source file: {path, sha256, size, n_chunks, ...}
    def get_file(self, collection: str, path: str) -> dict | None: ...
    def list_files(self, collection: str) -> list[dict]: ...
    def commit_ingest(self, collection: str, version: str, stats: dict, records: list[dict],
                      deleted: list[str], *, expected_version: str | None) -> None:
        """Atomically: upsert file records, delete records of `deleted` paths, clear dead letters of both,
        flip current_version — only if current_version is still `expected_version` (None = the collection
        does not exist yet); raises ConflictError otherwise and changes nothing."""
        ...
    # dead letters: sources that could not be ingested, {path, error, ...}; cleared by a later commit
    def record_dead_letter(self, collection: str, path: str, entry: dict) -> None: ...
    def get_dead_letter(self, collection: str, path: str) -> dict | None: ...
    def list_dead_letters(self, collection: str) -> list[dict]: ...
    # version pins: a run in flight keeps the snapshot version it retrieved from alive (GC spares it)
    def pin_version(self, collection: str, version: str, run_id: str, ttl_s: float) -> None:
        """Lease `version` of `collection` to `run_id` for `ttl_s` seconds from now (re-pinning renews it)."""
        ...
    def pinned_versions(self, collection: str) -> set[str]:
        """Versions of `collection` leased to some run whose lease has not expired."""
        ...
    # runs and traces
    def create_run(self, run_id: str, data: dict) -> None: ...
    def get_run(self, run_id: str) -> dict | None: ...
    def list_runs(self, limit: int = 50) -> list[dict]:
        """The `limit` most recent runs, newest first: each run's record plus `run_id` and `created_at`
        (Unix seconds)."""
        ...
    def update_run(self, run_id: str, patch: dict) -> dict: ...
    def append_trace(self, run_id: str, entry: dict) -> None: ...
    def get_trace(self, run_id: str) -> list[dict]: ...
    # Thompson-sampling arms: Beta(alpha, beta) per (collection, arm)
    def get_arms(self, collection: str) -> dict[str, tuple[float, float]]: ...
    def reward_arm(self, collection: str, arm: str, reward: float) -> tuple[float, float]: ...
    def reward_arms(self, collection: str, rewards: dict[str, float], *, reward_id: str
                    ) -> dict[str, tuple[float, float]] | None:
        """Apply several arms' Beta updates at once, at most once per `reward_id` (a retried grade call
        rewards nothing twice). Returns the new {arm: (alpha, beta)}, or None if `reward_id` was applied
        before (then nothing changes)."""
        ...
    # people's verdicts on runs (relayrag.feedback): one entry per (run, identity)
    def put_feedback(self, collection: str, run_id: str, identity: str, entry: dict | None) -> dict | None:
        """Atomically replace the verdict of `identity` on `run_id` with `entry` (None: withdraw it) and move
        the arms by the difference of the two entries' `bandit` contributions ({arm key: reward in [0, 1]}):
        the old entry's reward is taken back (alpha -= r, beta -= 1 - r, pulls -= 1) and the new one's added,
        so changing a verdict replaces its contribution. Returns the previous entry (None if there was none)."""
        ...
    def list_feedback(self, collection: str, *, identity: str | None = None, run_id: str | None = None,
                      limit: int = 100) -> list[dict]:
        """The collection's verdict entries, newest `updated_at` first, optionally only one identity's or one
        run's, at most `limit`."""
        ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY, current_version TEXT, updated_at REAL, stats TEXT);
CREATE TABLE IF NOT EXISTS files (
    collection TEXT, path TEXT, record TEXT, PRIMARY KEY (collection, path));
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created_at REAL, data TEXT);
CREATE TABLE IF NOT EXISTS traces (
    run_id TEXT, seq INTEGER, entry TEXT, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS dead_letters (
    collection TEXT, path TEXT, entry TEXT, PRIMARY KEY (collection, path));
CREATE TABLE IF NOT EXISTS pins (
    collection TEXT, run_id TEXT, version TEXT, until REAL, PRIMARY KEY (collection, run_id));
CREATE TABLE IF NOT EXISTS arms (
    collection TEXT, arm TEXT, alpha REAL, beta REAL, pulls INTEGER, PRIMARY KEY (collection, arm));
CREATE TABLE IF NOT EXISTS feedback (
    collection TEXT, run_id TEXT, identity TEXT, updated_at REAL, entry TEXT, PRIMARY KEY (run_id, identity));
CREATE INDEX IF NOT EXISTS feedback_by_collection ON feedback (collection, updated_at);
CREATE TABLE IF NOT EXISTS arm_rewards (
    collection TEXT, reward_id TEXT, applied_at REAL, PRIMARY KEY (collection, reward_id));
"""

PRIOR = (1.0, 1.0)  # uniform Beta prior for a new arm


class SQLiteDocStore:
    """SQLite in WAL mode; one connection per thread; writes in `BEGIN IMMEDIATE` transactions."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._memory_mode = False  # set when the disk is full (see _read_only)
        self._mem_lock = threading.Lock()
        self._mem_runs: dict[str, dict] = {}
        self._mem_traces: dict[str, list[dict]] = {}
        try:
            self._cx().executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:  # the schema exists already on a full disk: reads work
            if not is_disk_full(exc):
                raise

    def _cx(self) -> sqlite3.Connection:
        cx = getattr(self._local, "cx", None)
        if cx is None:
            cx = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            cx.execute("PRAGMA journal_mode=WAL")
            cx.execute("PRAGMA synchronous=NORMAL")
            cx.execute("PRAGMA busy_timeout=30000")
            self._local.cx = cx
        return cx

    class _Tx:
        def __init__(self, cx: sqlite3.Connection):
            self.cx = cx

        def __enter__(self) -> sqlite3.Connection:
            self.cx.execute("BEGIN IMMEDIATE")
            return self.cx

        def __exit__(self, exc_type, exc, tb) -> None:
            if exc_type:
                self.cx.execute("ROLLBACK")
                return
            try:
                self.cx.execute("COMMIT")
            except sqlite3.Error:
                if self.cx.in_transaction:  # a COMMIT that failed (disk full) leaves the transaction open
                    self.cx.execute("ROLLBACK")
                raise

    def _tx(self) -> "_Tx":
        return self._Tx(self._cx())

    # -- collections ---------------------------------------------------------------------------
    def get_collection(self, name: str) -> dict | None:
        row = self._cx().execute(
            "SELECT name, current_version, updated_at, stats FROM collections WHERE name=?", (name,)
        ).fetchone()
        if row is None:
            return None
        return {"name": row[0], "current_version": row[1], "updated_at": row[2], "stats": json.loads(row[3] or "{}")}

    def list_collections(self) -> list[dict]:
        names = [r[0] for r in self._cx().execute("SELECT name FROM collections ORDER BY name")]
        return [c for c in (self.get_collection(n) for n in names) if c]

    def delete_collection(self, name: str) -> None:
        with self._tx() as cx:
            cx.execute("DELETE FROM collections WHERE name=?", (name,))
            cx.execute("DELETE FROM files WHERE collection=?", (name,))
            cx.execute("DELETE FROM dead_letters WHERE collection=?", (name,))
            cx.execute("DELETE FROM arms WHERE collection=?", (name,))
            cx.execute("DELETE FROM pins WHERE collection=?", (name,))
            cx.execute("DELETE FROM arm_rewards WHERE collection=?", (name,))
            cx.execute("DELETE FROM feedback WHERE collection=?", (name,))

    # -- ingestion records ---------------------------------------------------------------------
    def get_file(self, collection: str, path: str) -> dict | None:
        row = self._cx().execute(
            "SELECT record FROM files WHERE collection=? AND path=?", (collection, path)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def list_files(self, collection: str) -> list[dict]:
        rows = self._cx().execute("SELECT record FROM files WHERE collection=? ORDER BY path", (collection,))
        return [json.loads(r[0]) for r in rows]

    def commit_ingest(self, collection: str, version: str, stats: dict, records: list[dict],
                      deleted: list[str], *, expected_version: str | None) -> None:
        """One transaction: compare current_version with `expected_version` (ConflictError if another
        writer flipped it), file records upserted (keyed by record['path']), `deleted` removed, dead
        letters of those paths cleared, version flipped."""
        with self._tx() as cx:
            row = cx.execute("SELECT current_version FROM collections WHERE name=?", (collection,)).fetchone()
            current = row[0] if row else None
            if current != expected_version:
                raise ConflictError(f"collection {collection!r} moved from version {expected_version!r} to "
                                    f"{current!r} during this ingest")
            cx.executemany(
                "INSERT INTO files(collection, path, record) VALUES (?,?,?) "
                "ON CONFLICT(collection, path) DO UPDATE SET record=excluded.record",
                [(collection, r["path"], json.dumps(r)) for r in records],
            )
            cx.executemany("DELETE FROM files WHERE collection=? AND path=?", [(collection, p) for p in deleted])
            cx.executemany("DELETE FROM dead_letters WHERE collection=? AND path=?",
                           [(collection, p) for p in [*deleted, *(r["path"] for r in records)]])
            cx.execute(
                "INSERT INTO collections(name, current_version, updated_at, stats) VALUES (?,?,?,?) "
                "ON CONFLICT(name) DO UPDATE SET current_version=excluded.current_version, "
                "updated_at=excluded.updated_at, stats=excluded.stats",
                (collection, version, time.time(), json.dumps(stats)),
            )

    # -- dead letters --------------------------------------------------------------------------
    def record_dead_letter(self, collection: str, path: str, entry: dict) -> None:
        """Upsert the dead letter of one source (the latest failure wins)."""
        with self._tx() as cx:
            cx.execute("INSERT INTO dead_letters(collection, path, entry) VALUES (?,?,?) "
                       "ON CONFLICT(collection, path) DO UPDATE SET entry=excluded.entry",
                       (collection, path, json.dumps({**entry, "path": path})))

    def get_dead_letter(self, collection: str, path: str) -> dict | None:
        row = self._cx().execute("SELECT entry FROM dead_letters WHERE collection=? AND path=?",
                                 (collection, path)).fetchone()
        return json.loads(row[0]) if row else None

    def list_dead_letters(self, collection: str) -> list[dict]:
        rows = self._cx().execute("SELECT entry FROM dead_letters WHERE collection=? ORDER BY path", (collection,))
        return [json.loads(r[0]) for r in rows]

    # -- version pins --------------------------------------------------------------------------
    def pin_version(self, collection: str, version: str, run_id: str, ttl_s: float) -> None:
        now = time.time()
        try:
            with self._tx() as cx:
                cx.execute("INSERT INTO pins(collection, run_id, version, until) VALUES (?,?,?,?) ON CONFLICT"
                           "(collection, run_id) DO UPDATE SET version=excluded.version, until=excluded.until",
                           (collection, run_id, version, now + ttl_s))
                cx.execute("DELETE FROM pins WHERE collection=? AND until<?", (collection, now))
        except (sqlite3.Error, OSError) as exc:  # disk full: no ingest can write a version that would GC it
            if not self._read_only(exc):
                raise

    def pinned_versions(self, collection: str) -> set[str]:
        rows = self._cx().execute("SELECT DISTINCT version FROM pins WHERE collection=? AND until>=?",
                                  (collection, time.time()))
        return {r[0] for r in rows}

    # -- disk full: answers keep working, run records stay in memory ---------------------------------
    def _read_only(self, exc: BaseException) -> bool:
        """True (and, once per process, a warning on stderr) when `exc` says the disk or the database is full:
        from then on this process keeps its run records and traces in memory and skips pins and rewards, so
        asks keep answering from the intact index; anything else is re-raised by the caller."""
        if not is_disk_full(exc):
            return False
        if not self._memory_mode:
            self._memory_mode = True
            sys.stderr.write(f"warning: {self.path.parent} is full ({exc}): run records, traces and bandit rewards "
                             "are not stored until space is freed; answers still work\n")
        return True

    # -- runs ----------------------------------------------------------------------------------
    def create_run(self, run_id: str, data: dict) -> None:
        try:
            with self._tx() as cx:
                cx.execute(
                    "INSERT INTO runs(run_id, created_at, data) VALUES (?,?,?) "
                    "ON CONFLICT(run_id) DO UPDATE SET data=excluded.data",
                    (run_id, time.time(), json.dumps(data)),
                )
                cx.execute("DELETE FROM traces WHERE run_id=?", (run_id,))
        except (sqlite3.Error, OSError) as exc:
            if not self._read_only(exc):
                raise
            with self._mem_lock:
                self._mem_runs[run_id] = json.loads(json.dumps(data))
                self._mem_traces[run_id] = []

    def get_run(self, run_id: str) -> dict | None:
        with self._mem_lock:
            if run_id in self._mem_runs:
                return json.loads(json.dumps(self._mem_runs[run_id]))
        row = self._cx().execute("SELECT data FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def list_runs(self, limit: int = 50) -> list[dict]:
        rows = self._cx().execute("SELECT run_id, created_at, data FROM runs ORDER BY created_at DESC, rowid DESC "
                                  "LIMIT ?", (max(0, int(limit)),))
        return [{**json.loads(d), "run_id": r, "created_at": t} for r, t, d in rows]

    def update_run(self, run_id: str, patch: dict[str, Any]) -> dict:
        """Shallow-merge `patch` into the run (read-modify-write inside one transaction)."""
        with self._mem_lock:
            if run_id in self._mem_runs:
                self._mem_runs[run_id].update(json.loads(json.dumps(patch)))
                return json.loads(json.dumps(self._mem_runs[run_id]))
        data = None
        try:
            with self._tx() as cx:
                row = cx.execute("SELECT data FROM runs WHERE run_id=?", (run_id,)).fetchone()
                if row is None:
                    raise KeyError(run_id)
                data = json.loads(row[0])
                data.update(patch)
                cx.execute("UPDATE runs SET data=? WHERE run_id=?", (json.dumps(data), run_id))
        except (sqlite3.Error, OSError) as exc:
            if not self._read_only(exc):
                raise
            if data is None:
                data = self.get_run(run_id)
                if data is None:
                    raise KeyError(run_id) from None
                data.update(patch)
            with self._mem_lock:  # the stored run continues in memory
                self._mem_runs[run_id] = data
                self._mem_traces.setdefault(run_id, self.get_trace(run_id))
        return data

    def append_trace(self, run_id: str, entry: dict) -> None:
        with self._mem_lock:
            if run_id in self._mem_traces:
                self._mem_traces[run_id].append(json.loads(json.dumps(entry)))
                return
        try:
            with self._tx() as cx:
                (seq,) = cx.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM traces WHERE run_id=?",
                                    (run_id,)).fetchone()
                cx.execute("INSERT INTO traces(run_id, seq, entry) VALUES (?,?,?)", (run_id, seq, json.dumps(entry)))
        except (sqlite3.Error, OSError) as exc:
            if not self._read_only(exc):
                raise

    def get_trace(self, run_id: str) -> list[dict]:
        with self._mem_lock:
            if run_id in self._mem_traces:
                return json.loads(json.dumps(self._mem_traces[run_id]))
        rows = self._cx().execute("SELECT entry FROM traces WHERE run_id=? ORDER BY seq", (run_id,))
        return [json.loads(r[0]) for r in rows]

    # -- bandit arms ---------------------------------------------------------------------------
    def get_arms(self, collection: str) -> dict[str, tuple[float, float]]:
        rows = self._cx().execute("SELECT arm, alpha, beta FROM arms WHERE collection=?", (collection,))
        return {arm: (a, b) for arm, a, b in rows}

    def reward_arm(self, collection: str, arm: str, reward: float) -> tuple[float, float]:
        """Beta update alpha += r, beta += 1 - r, atomically; r in [0, 1]. Returns the new (alpha, beta)."""
        r = min(1.0, max(0.0, float(reward)))
        with self._tx() as cx:
            cx.execute(
                "INSERT INTO arms(collection, arm, alpha, beta, pulls) VALUES (?,?,?,?,1) "
                "ON CONFLICT(collection, arm) DO UPDATE SET alpha=alpha+?, beta=beta+?, pulls=pulls+1",
                (collection, arm, PRIOR[0] + r, PRIOR[1] + 1 - r, r, 1 - r),
            )
            a, b = cx.execute("SELECT alpha, beta FROM arms WHERE collection=? AND arm=?", (collection, arm)).fetchone()
        return a, b

    def reward_arms(self, collection: str, rewards: dict[str, float], *, reward_id: str
                    ) -> dict[str, tuple[float, float]] | None:
        """One transaction: record `reward_id` (None if it is already recorded: nothing changes), then the
        Beta update of every arm in `rewards` (each r clamped to [0, 1])."""
        if not reward_id:
            raise ValueError("reward_id must be a non-empty string")
        try:
            return self._reward_arms(collection, rewards, reward_id)
        except (sqlite3.Error, OSError) as exc:
            if not self._read_only(exc):
                raise
            return None  # the rewards are skipped while the disk is full

    def _reward_arms(self, collection: str, rewards: dict[str, float], reward_id: str):
        out = {}
        with self._tx() as cx:
            if cx.execute("SELECT 1 FROM arm_rewards WHERE collection=? AND reward_id=?",
                          (collection, reward_id)).fetchone():
                return None
            cx.execute("INSERT INTO arm_rewards(collection, reward_id, applied_at) VALUES (?,?,?)",
                       (collection, reward_id, time.time()))
            for arm, reward in rewards.items():
                r = min(1.0, max(0.0, float(reward)))
                cx.execute(
                    "INSERT INTO arms(collection, arm, alpha, beta, pulls) VALUES (?,?,?,?,1) "
                    "ON CONFLICT(collection, arm) DO UPDATE SET alpha=alpha+?, beta=beta+?, pulls=pulls+1",
                    (collection, arm, PRIOR[0] + r, PRIOR[1] + 1 - r, r, 1 - r))
                out[arm] = tuple(cx.execute("SELECT alpha, beta FROM arms WHERE collection=? AND arm=?",
                                            (collection, arm)).fetchone())
        return out

    # -- feedback ------------------------------------------------------------------------------
    def put_feedback(self, collection: str, run_id: str, identity: str, entry: dict | None) -> dict | None:
        """One transaction: read the previous entry, write (or delete) this one, apply the arms' delta."""
        if not run_id or not identity:
            raise ValueError("run_id and identity must be non-empty strings")
        with self._tx() as cx:
            row = cx.execute("SELECT collection, entry FROM feedback WHERE run_id=? AND identity=?",
                             (run_id, identity)).fetchone()
            old = json.loads(row[1]) if row else None
            if entry is None:
                cx.execute("DELETE FROM feedback WHERE run_id=? AND identity=?", (run_id, identity))
            else:
                cx.execute("INSERT INTO feedback(collection, run_id, identity, updated_at, entry) VALUES (?,?,?,?,?) "
                           "ON CONFLICT(run_id, identity) DO UPDATE SET collection=excluded.collection, "
                           "updated_at=excluded.updated_at, entry=excluded.entry",
                           (collection, run_id, identity, float(entry.get("updated_at") or time.time()),
                            json.dumps(entry)))
            for arm, (da, db, dp) in feedback_delta(old, entry).items():
                cx.execute(
                    "INSERT INTO arms(collection, arm, alpha, beta, pulls) VALUES (?,?,?,?,?) "
                    "ON CONFLICT(collection, arm) DO UPDATE SET alpha=alpha+?, beta=beta+?, pulls=pulls+?",
                    (collection, arm, PRIOR[0] + da, PRIOR[1] + db, dp, da, db, dp))
        return old

    def list_feedback(self, collection: str, *, identity: str | None = None, run_id: str | None = None,
                      limit: int = 100) -> list[dict]:
        sql, args = "SELECT entry FROM feedback WHERE collection=?", [collection]
        if identity is not None:
            sql, args = sql + " AND identity=?", [*args, identity]
        if run_id is not None:
            sql, args = sql + " AND run_id=?", [*args, run_id]
        rows = self._cx().execute(sql + " ORDER BY updated_at DESC, rowid DESC LIMIT ?", (*args, max(0, int(limit))))
        return [json.loads(r[0]) for r in rows]


def feedback_delta(old: dict | None, new: dict | None) -> dict[str, tuple[float, float, int]]:
    """{arm key: (d_alpha, d_beta, d_pulls)} that replaces the `bandit` contribution of the entry `old` with
    that of `new` (either may be None); keys whose delta is zero are left out."""
    out: dict[str, list[float]] = {}
    for sign, e in ((-1, old), (1, new)):
        for key, r in ((e or {}).get("bandit") or {}).items():
            r = min(1.0, max(0.0, float(r)))
            d = out.setdefault(key, [0.0, 0.0, 0])
            d[0] += sign * r
            d[1] += sign * (1.0 - r)
            d[2] += sign
    return {k: (a, b, int(p)) for k, (a, b, p) in out.items() if abs(a) > 1e-12 or abs(b) > 1e-12 or p}


def sqlite_docstore(settings) -> SQLiteDocStore:
    """The registry's `sqlite` docstore: RELAYRAG_HOME/relayrag.sqlite3."""
    return SQLiteDocStore(settings.home / "relayrag.sqlite3")
