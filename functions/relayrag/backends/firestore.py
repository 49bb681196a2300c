"""Firestore docstore (extra `gcp`: google-cloud-firestore): `FirestoreDocStore(client, prefix)`.

Implements every method of `relayrag.backends.docstore.DocStore` with the semantics of `SQLiteDocStore`
(the same contract tests run against both: tests/unit/backends/test_docstore_contract.py).

Layout (P = `prefix`, default "relayrag"; every payload is stored as JSON text in a field `json`, so values
round-trip exactly as through SQLite's JSON columns — Firestore itself rejects nested arrays and non-string
map keys; `h(x)` = sha256 hex of x, because paths and arm names may contain '/'):

    P_collections/{name}                          {name, current_version, updated_at, stats (JSON text),
                                                   pending: version whose staged file ops are not applied yet}
    P_files/{name}/records/{h(path)}              {path, json}            one ingestion record per source
    P_files/{name}/dead_letters/{h(path)}         {path, json}
    P_files/{name}/staged/{version}-{h(path)}     {version, path, json (null = delete), staged_at}
    P_files/{name}/pins/{run_id}                  {version, until}        a run's lease on a snapshot version
    P_arms/{name}/arms/{h(arm)}                   {arm, alpha_gain, beta_gain, pulls}   (Beta prior added on read)
    P_arms/{name}/arm_rewards/{h(reward_id)}      {reward_id, applied_at}   (reward_arms applied once per id)
    P_feedback/{name}/verdicts/{h(run_id\nidentity)} {run_id, identity, updated_at, json}   one verdict per
                                                  (run, identity) (relayrag.feedback)
    P_runs/{run_id}                               {run_id, created_at, json}
    P_traces/{run_id}                             {n}   entries appended so far
    P_traces/{run_id}/entries/{seq:012d}          {seq, json}

File records, dead letters and arms hang under parent documents that are never written (P_files/{name},
P_arms/{name}), so writing or deleting the collection document never touches them; `delete_collection`
deletes those subcollections explicitly (Firestore does not cascade).

Atomicity — optimistic compare-and-set, not server transactions. Every read-modify-write reads the
document, then commits one atomic batch whose write on that document carries a precondition (its
`update_time`, or "does not exist" for a new one); a precondition failure means another writer got there
first. Measured on the Firestore emulator: 8 threads running read-modify-write *transactions* on one
document never finished (pessimistic lock waits end in "Transaction lock timeout" even with 50 attempts),
while preconditioned batches and `Increment` transforms never block.
- `commit_ingest`: one batch = the collection document (precondition) + every record upsert/delete + the dead
  letters of those paths that exist (read first, in one batched read), when that fits the 500-writes-per-
  commit limit (up to 499 changed paths, fewer when they have dead letters). Bigger commits
  keep the flip atomic by staging: the changes are first written as `staged` documents of the new version
  (invisible to readers), then ONE preconditioned write flips `current_version` and sets `pending`, then the
  staged changes are applied in batches (each staged document is deleted in the batch that applies it, with
  an exists-precondition, so an applier that lost a race can never re-apply an old change) and `pending` is
  cleared. From the flip on, readers (`get_file`, `list_files`, dead letters) overlay the pending version's
  staged changes, so they always see exactly the records of `current_version`; a writer that finds `pending`
  set (the flipper crashed mid-apply) rolls it forward before its own compare-and-set. A writer that loses the
  compare-and-set deletes its staged documents; ones orphaned by a crash before the flip are never read and
  are deleted by the next staged commit after STALE_STAGED_S.
- `reward_arm`: one write of three `Increment` transforms (no read, no contention); the new (alpha, beta)
  come from the commit's transform results, so they are this update's own, exactly.
- `reward_arms`: one batch = `create` of the reward_id's marker document (fails if it exists, so a retried
  reward is applied once) + the Increment writes of every arm; all or nothing.
- `put_feedback`: preconditioned read-modify-write of the verdict document (its `update_time`, or `create`
  for a new one) in one batch with the Increment writes that take the old verdict's arm reward back and add
  the new one's; a lost race reads again, so the delta applied is always against the verdict it replaces.
- `append_trace`: `Increment` on the run's entry counter gives each entry a unique, increasing `seq` (its
  transform result), then the entry is written under that `seq`; `get_trace` orders by `seq`.
- `update_run`: preconditioned read-modify-write, retried on a lost race.
Clients that return no transform results (the `fake-firestore` test double) get the values by reading the
document back: exact only without concurrent writers, which that single-threaded double never has.

Limits: a payload over ~1 MB is a ValueError (Firestore's document limit is 1 MiB); one document takes about
one sustained write per second in production Firestore, so hundreds of rewards per second on one arm
would need sharded counters (bursts are fine).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from typing import Any

from relayrag.backends.docstore import PRIOR, feedback_delta
from relayrag.errors import ConfigError, ConflictError

try:  # the `gcp` extra; the embedded default never imports this module
    from google.api_core import exceptions as gexc
    from google.cloud import firestore
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError("the Firestore docstore needs google-cloud-firestore: pip install 'relayrag[gcp]'") from exc

__all__ = ["FirestoreDocStore", "firestore_client", "MAX_BATCH_WRITES"]

MAX_BATCH_WRITES = 500          # Firestore's limit of writes in one commit
MAX_PAYLOAD_BYTES = 1_000_000   # below the 1 MiB document limit, leaving room for the other fields
STALE_STAGED_S = 3600.0         # staged changes of a version that never flipped, older than this, are garbage
CAS_ATTEMPTS = 60               # preconditioned read-modify-write rounds before giving up (update_run)
ARM_SHARDS = 8                  # counter shards per bandit arm (reward_arms): ~8 sustained rewards/s per arm
_LOST_RACE = (gexc.FailedPrecondition, gexc.AlreadyExists, gexc.NotFound, gexc.Aborted)


def firestore_client(project: str = "", database: str = "(default)") -> Any:
    """A `google.cloud.firestore.Client` (Application Default Credentials, or FIRESTORE_EMULATOR_HOST)."""
    return firestore.Client(project=project or None, database=database or "(default)")


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_id(kind: str, value: str) -> str:
    if (not isinstance(value, str) or not value or "/" in value or value in (".", "..")
            or (value.startswith("__") and value.endswith("__")) or len(value.encode("utf-8")) > 1500):
        raise ValueError(f"invalid {kind} {value!r} for Firestore: non-empty, no '/', not '.', '..' or __x__, "
                         "at most 1500 bytes")
    return value


def _dumps(obj: Any, what: str) -> str:
    text = json.dumps(obj)
    if len(text) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"{what} is {len(text)} bytes of JSON; a Firestore document holds at most "
                         f"{MAX_PAYLOAD_BYTES} here")
    return text


def _precondition(snap: Any) -> Any:
    """Write option: the document is unchanged since `snap` was read."""
    return firestore.Client.write_option(last_update_time=snap.update_time)


def _transform_values(write_result: Any) -> list[float] | None:
    """The values of a commit's field transforms, in field-path order; None if the client gives none."""
    values = getattr(write_result, "transform_results", None)
    if not values:
        return None
    out = []
    for v in values:
        kind = v._pb.WhichOneof("value_type") if hasattr(v, "_pb") else v.WhichOneof("value_type")
        out.append(float(getattr(v, kind)))
    return out


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0.0, min(0.5, 0.005 * 2 ** min(attempt, 7))))


class FirestoreDocStore:
    """DocStore on Firestore; safe to share between threads (the client is)."""

    def __init__(self, client: Any, prefix: str = "relayrag", *, max_batch_writes: int = MAX_BATCH_WRITES):
        if not prefix or "/" in prefix:
            raise ValueError(f"invalid Firestore prefix {prefix!r} (non-empty, no '/')")
        if not 7 <= max_batch_writes <= MAX_BATCH_WRITES:
            raise ValueError(f"max_batch_writes must be in [7, {MAX_BATCH_WRITES}]; got {max_batch_writes}")
        self.client = client
        self.prefix = prefix
        self.max_batch_writes = max_batch_writes
        self._collections = client.collection(f"{prefix}_collections")
        self._runs = client.collection(f"{prefix}_runs")
        self._traces = client.collection(f"{prefix}_traces")

    def __repr__(self) -> str:
        return f"FirestoreDocStore(prefix={self.prefix!r})"

    # -- references ----------------------------------------------------------------------------
    def _coll(self, name: str) -> Any:
        return self._collections.document(_check_id("collection name", name))

    def _sub(self, name: str, kind: str) -> Any:
        root = "arms" if kind in ("arms", "arm_rewards") else "feedback" if kind == "verdicts" else "files"
        return self.client.collection(f"{self.prefix}_{root}").document(_check_id("collection name", name)) \
            .collection(kind)

    def _delete_all(self, refs: list[Any]) -> None:
        for i in range(0, len(refs), self.max_batch_writes):
            batch = self.client.batch()
            for ref in refs[i:i + self.max_batch_writes]:
                batch.delete(ref)
            batch.commit()

    def _pending_ops(self, name: str, pending: str | None) -> dict[str, str | None]:
        """path -> record JSON (None = deleted) of the staged changes of version `pending` ({} if None)."""
        if not pending:
            return {}
        out = {}
        for s in self._sub(name, "staged").stream():
            d = s.to_dict() or {}
            if d.get("version") == pending:
                out[d["path"]] = d.get("json")
        return out

    def _pending(self, name: str) -> str | None:
        snap = self._coll(name).get()
        return (snap.to_dict() or {}).get("pending") if snap.exists else None

    # -- collections ---------------------------------------------------------------------------
    @staticmethod
    def _meta(d: dict) -> dict:
        return {"name": d["name"], "current_version": d.get("current_version"), "updated_at": d.get("updated_at"),
                "stats": json.loads(d.get("stats") or "{}")}

    def get_collection(self, name: str) -> dict | None:
        snap = self._coll(name).get()
        d = snap.to_dict() if snap.exists else None
        return self._meta(d) if d and d.get("current_version") else None

    def list_collections(self) -> list[dict]:
        metas = [self._meta(d) for d in (s.to_dict() for s in self._collections.stream())
                 if d and d.get("current_version")]
        return sorted(metas, key=lambda m: m["name"])

    def delete_collection(self, name: str) -> None:
        """Delete the collection's records, dead letters, staged changes, arms and verdicts, then its document (last,
        so an interrupted delete leaves a collection whose missing records are simply re-ingested)."""
        for kind in ("records", "dead_letters", "staged", "arms", "arm_rewards", "pins", "verdicts"):
            self._delete_all([s.reference for s in self._sub(name, kind).stream()])
        ref = self._coll(name)
        if ref.get().exists:
            ref.delete()

    # -- ingestion records ---------------------------------------------------------------------
    def get_file(self, collection: str, path: str) -> dict | None:
        pending = self._pending(collection)
        if pending:
            staged = self._sub(collection, "staged").document(f"{pending}-{_h(path)}").get()
            if staged.exists:
                js = (staged.to_dict() or {}).get("json")
                return json.loads(js) if js is not None else None
        snap = self._sub(collection, "records").document(_h(path)).get()
        return json.loads(snap.to_dict()["json"]) if snap.exists else None

    def list_files(self, collection: str) -> list[dict]:
        pending = self._pending(collection)
        texts = {d["path"]: d["json"] for d in (s.to_dict() for s in self._sub(collection, "records").stream())}
        for path, js in self._pending_ops(collection, pending).items():
            if js is None:
                texts.pop(path, None)
            else:
                texts[path] = js
        return [json.loads(texts[p]) for p in sorted(texts)]

    def commit_ingest(self, collection: str, version: str, stats: dict, records: list[dict],
                      deleted: list[str], *, expected_version: str | None) -> None:
        """Atomically upsert `records` (keyed by record['path']), delete the records of `deleted`, clear the
        dead letters of both and flip current_version to `version` — only if current_version is still
        `expected_version` (None = the collection does not exist yet). ConflictError otherwise, nothing
        changed. Up to max_batch_writes - 1 writes go in one batch; more are staged (module docstring).
        A dead letter recorded for one of these paths while this commit runs may survive it."""
        _check_id("version", version)
        ops: dict[str, str | None] = {}
        for r in records:
            ops[r["path"]] = _dumps(r, f"the record of {r['path']!r}")
        for p in deleted:
            ops[p] = None
        ref = self._coll(collection)
        for _ in range(CAS_ATTEMPTS):
            snap = ref.get()
            d = (snap.to_dict() or {}) if snap.exists else {}
            if d.get("pending"):  # a flipped commit was interrupted before its changes were applied
                self._apply_staged(collection, d["pending"])
                continue
            current = d.get("current_version")
            if current != expected_version:
                raise ConflictError(f"collection {collection!r} moved from version {expected_version!r} to "
                                    f"{current!r} during this ingest")
            meta = {"name": collection, "current_version": version, "updated_at": time.time(),
                    "stats": _dumps(stats, "the collection stats")}
            existing = self._existing(collection, ops)
            n_writes = 1 + len(ops) + sum(1 for p in ops if self._sub(collection, "dead_letters").document(_h(p)).path
                                          in existing)
            if n_writes <= self.max_batch_writes:
                batch = self.client.batch()
                self._cas_write(batch, ref, snap, d, meta)
                for path, js in ops.items():
                    self._op_writes(batch, collection, path, js, existing)
                self._commit_cas(batch, collection, expected_version)
            else:
                self._commit_staged(collection, version, ops, ref, snap, d, meta, expected_version)
            return
        raise ConflictError(f"collection {collection!r}: an interrupted commit could not be rolled forward in "
                            f"{CAS_ATTEMPTS} rounds")

    def _cas_write(self, batch: Any, ref: Any, snap: Any, current: dict, meta: dict) -> None:
        if snap.exists:
            if "pending" in current and "pending" not in meta:
                meta = {**meta, "pending": firestore.DELETE_FIELD}
            batch.update(ref, meta, option=_precondition(snap))
        else:
            batch.create(ref, meta)

    @staticmethod
    def _commit_cas(batch: Any, collection: str, expected_version: str | None) -> None:
        try:
            batch.commit()
        except _LOST_RACE as exc:
            raise ConflictError(f"collection {collection!r} changed after version {expected_version!r} was "
                                f"read (another writer committed first)") from exc

    def _existing(self, collection: str, ops: dict[str, str | None]) -> set[str]:
        """Document paths, among the records to delete and the dead letters of `ops`' paths, that exist (one
        batched read), so a commit spends writes only on deletes that delete something."""
        refs = [self._sub(collection, "records").document(_h(p)) for p, js in ops.items() if js is None]
        refs += [self._sub(collection, "dead_letters").document(_h(p)) for p in ops]
        return {s.reference.path for s in self.client.get_all(refs) if s.exists} if refs else set()

    def _op_writes(self, batch: Any, collection: str, path: str, js: str | None, existing: set[str]) -> None:
        rec = self._sub(collection, "records").document(_h(path))
        if js is not None:
            batch.set(rec, {"path": path, "json": js})
        elif rec.path in existing:
            batch.delete(rec)
        dead = self._sub(collection, "dead_letters").document(_h(path))
        if dead.path in existing:
            batch.delete(dead)

    def _commit_staged(self, collection: str, version: str, ops: dict[str, str | None], ref: Any, snap: Any,
                       current: dict, meta: dict, expected_version: str | None) -> None:
        staged = self._sub(collection, "staged")
        now = time.time()
        # garbage of versions that never flipped (their writer crashed before the compare-and-set)
        self._delete_all([s.reference for s in staged.stream()
                          if (s.to_dict() or {}).get("version") != version
                          and (s.to_dict() or {}).get("staged_at", 0.0) < now - STALE_STAGED_S])
        items = list(ops.items())
        refs = []
        for i in range(0, len(items), self.max_batch_writes):
            batch = self.client.batch()
            for path, js in items[i:i + self.max_batch_writes]:
                r = staged.document(f"{version}-{_h(path)}")
                refs.append(r)
                batch.set(r, {"version": version, "path": path, "json": js, "staged_at": now})
            batch.commit()
        batch = self.client.batch()
        self._cas_write(batch, ref, snap, current, {**meta, "pending": version})
        try:
            self._commit_cas(batch, collection, expected_version)
        except ConflictError:
            self._delete_all(refs)  # never became current: nobody reads them
            raise
        self._apply_staged(collection, version)

    def _apply_staged(self, collection: str, version: str) -> None:
        """Apply version's staged changes (idempotent; safe to run from several writers), then clear pending."""
        staged = self._sub(collection, "staged")
        per_batch = self.max_batch_writes // 3
        for attempt in range(CAS_ATTEMPTS):
            todo = [s for s in staged.stream() if (s.to_dict() or {}).get("version") == version]
            try:
                for i in range(0, len(todo), per_batch):
                    batch = self.client.batch()
                    part = {s.to_dict()["path"]: s.to_dict().get("json") for s in todo[i:i + per_batch]}
                    existing = self._existing(collection, part)
                    for s in todo[i:i + per_batch]:
                        d = s.to_dict()
                        self._op_writes(batch, collection, d["path"], d.get("json"), existing)
                        batch.delete(s.reference, option=firestore.Client.write_option(exists=True))
                    batch.commit()
                break
            except _LOST_RACE:  # another applier applied some of these: list what is left and go on
                _backoff(attempt)
        else:
            raise ConflictError(f"collection {collection!r}: staged changes of {version!r} could not be applied")
        ref = self._coll(collection)
        for attempt in range(CAS_ATTEMPTS):
            snap = ref.get()
            if not snap.exists or (snap.to_dict() or {}).get("pending") != version:
                return
            batch = self.client.batch()
            batch.update(ref, {"pending": firestore.DELETE_FIELD}, option=_precondition(snap))
            try:
                batch.commit()
                return
            except _LOST_RACE:
                _backoff(attempt)
        raise ConflictError(f"collection {collection!r}: could not clear pending version {version!r}")

    # -- dead letters --------------------------------------------------------------------------
    def record_dead_letter(self, collection: str, path: str, entry: dict) -> None:
        """Upsert the dead letter of one source (the latest failure wins)."""
        self._sub(collection, "dead_letters").document(_h(path)).set(
            {"path": path, "json": _dumps({**entry, "path": path}, f"the dead letter of {path!r}")})

    def get_dead_letter(self, collection: str, path: str) -> dict | None:
        pending = self._pending(collection)
        if pending and self._sub(collection, "staged").document(f"{pending}-{_h(path)}").get().exists:
            return None  # cleared by the commit being applied
        snap = self._sub(collection, "dead_letters").document(_h(path)).get()
        return json.loads(snap.to_dict()["json"]) if snap.exists else None

    def list_dead_letters(self, collection: str) -> list[dict]:
        cleared = self._pending_ops(collection, self._pending(collection))
        texts = {d["path"]: d["json"] for d in (s.to_dict() for s in self._sub(collection, "dead_letters").stream())
                 if d["path"] not in cleared}
        return [json.loads(texts[p]) for p in sorted(texts)]

    # -- version pins --------------------------------------------------------------------------
    def pin_version(self, collection: str, version: str, run_id: str, ttl_s: float) -> None:
        """One document per run (a plain set: one writer per run, no contention)."""
        self._sub(collection, "pins").document(_check_id("run_id", run_id)).set(
            {"version": version, "until": time.time() + ttl_s})

    def pinned_versions(self, collection: str) -> set[str]:
        """Unexpired pins; expired ones are deleted on the way (best effort)."""
        now, out, expired = time.time(), set(), []
        for s in self._sub(collection, "pins").stream():
            d = s.to_dict()
            if float(d.get("until", 0.0)) >= now:
                out.add(d["version"])
            else:
                expired.append(s.reference)
        try:
            self._delete_all(expired)
        except Exception:  # noqa: BLE001 - another reader may delete the same expired pins
            pass
        return out

    # -- runs ----------------------------------------------------------------------------------
    def _run(self, run_id: str) -> Any:
        return self._runs.document(_check_id("run_id", run_id))

    def _trace_head(self, run_id: str) -> Any:
        return self._traces.document(_check_id("run_id", run_id))

    def create_run(self, run_id: str, data: dict) -> None:
        """Create (or replace) the run and clear its trace."""
        js = _dumps(data, f"run {run_id!r}")
        head = self._trace_head(run_id)
        self._delete_all([s.reference for s in head.collection("entries").stream()])
        head.set({"n": 0})
        self._run(run_id).set({"run_id": run_id, "created_at": time.time(), "json": js})

    def get_run(self, run_id: str) -> dict | None:
        snap = self._run(run_id).get()
        d = snap.to_dict() if snap.exists else None
        return json.loads(d["json"]) if d and "json" in d else None

    def list_runs(self, limit: int = 50) -> list[dict]:
        """The `limit` most recent runs, newest first (ordered by `created_at`, a single-field index
        Firestore keeps by default)."""
        query = self._runs.order_by("created_at", direction=firestore.Query.DESCENDING).limit(max(1, int(limit)))
        out = []
        for snap in query.stream():
            d = snap.to_dict() or {}
            if "json" in d:
                out.append({**json.loads(d["json"]), "run_id": d.get("run_id", snap.id),
                            "created_at": d.get("created_at")})
        return out[:max(0, int(limit))]

    def update_run(self, run_id: str, patch: dict[str, Any]) -> dict:
        """Shallow-merge `patch` into the run (preconditioned read-modify-write, retried on a lost race).
        KeyError if the run does not exist."""
        ref = self._run(run_id)
        for attempt in range(CAS_ATTEMPTS):
            snap = ref.get()
            d = snap.to_dict() if snap.exists else None
            if not d or "json" not in d:
                raise KeyError(run_id)
            data = json.loads(d["json"])
            data.update(patch)
            batch = self.client.batch()
            batch.update(ref, {"json": _dumps(data, f"run {run_id!r}")}, option=_precondition(snap))
            try:
                batch.commit()
                return data
            except _LOST_RACE:
                _backoff(attempt)
        raise ConflictError(f"run {run_id!r}: {CAS_ATTEMPTS} concurrent updates won the race; giving up")

    def append_trace(self, run_id: str, entry: dict) -> None:
        """Append one entry; concurrent appends get distinct, increasing seq (an Increment)."""
        js = _dumps(entry, f"a trace entry of run {run_id!r}")
        head = self._trace_head(run_id)
        values = _transform_values(head.set({"n": firestore.Increment(1)}, merge=True))
        n = int(values[0]) if values else int(head.get().get("n"))
        seq = n - 1
        head.collection("entries").document(f"{seq:012d}").set({"seq": seq, "json": js})

    def get_trace(self, run_id: str) -> list[dict]:
        docs = [s.to_dict() for s in self._trace_head(run_id).collection("entries").stream()]
        return [json.loads(d["json"]) for d in sorted(docs, key=lambda d: d["seq"])]

    # -- bandit arms ---------------------------------------------------------------------------
    def get_arms(self, collection: str) -> dict[str, tuple[float, float]]:
        """{arm: (alpha, beta)}: the prior plus the gains summed over the arm's counter shards (one query of the
        arms subcollection; ARM_SHARDS documents per arm at most)."""
        gains: dict[str, list[float]] = {}
        for s in self._sub(collection, "arms").stream():
            d = s.to_dict()
            g = gains.setdefault(d["arm"], [0.0, 0.0])
            g[0] += float(d.get("alpha_gain", 0.0))
            g[1] += float(d.get("beta_gain", 0.0))
        return {arm: (PRIOR[0] + a, PRIOR[1] + b) for arm, (a, b) in gains.items()}

    def _arm_shard(self, collection: str, arm: str, shard: int):
        """Counter shard `shard` of `arm`: shard 0 is the arm's historical document (unsharded layout)."""
        return self._sub(collection, "arms").document(_h(arm) if shard == 0 else f"{_h(arm)}-{shard}")

    def reward_arm(self, collection: str, arm: str, reward: float) -> tuple[float, float]:
        """Beta update alpha += r, beta += 1 - r with r clamped to [0, 1], as one write of Increment
        transforms (concurrent rewards are all counted). Returns this update's new (alpha, beta)."""
        r = min(1.0, max(0.0, float(reward)))
        if not isinstance(arm, str) or not arm:
            raise ValueError(f"arm must be a non-empty string; got {arm!r}")
        ref = self._arm_shard(collection, arm, 0)
        # field names sort as written (alpha_gain < beta_gain < pulls): transform results come in that order
        wr = ref.set({"arm": arm, "alpha_gain": firestore.Increment(r), "beta_gain": firestore.Increment(1.0 - r),
                      "pulls": firestore.Increment(1)}, merge=True)
        values = _transform_values(wr)
        if values is None:
            d = ref.get().to_dict()
            values = [d["alpha_gain"], d["beta_gain"]]
        others = [0.0, 0.0]  # the other shards (reward_arms' writes) as read now
        for s in self._sub(collection, "arms").stream():
            d = s.to_dict()
            if s.id != ref.id and d.get("arm") == arm:
                others[0] += float(d.get("alpha_gain", 0.0))
                others[1] += float(d.get("beta_gain", 0.0))
        return PRIOR[0] + values[0] + others[0], PRIOR[1] + values[1] + others[1]

    def reward_arms(self, collection: str, rewards: dict[str, float], *, reward_id: str
                    ) -> dict[str, tuple[float, float]] | None:
        """Beta updates of several arms in one batch with the `create` of reward_id's marker document: the
        batch fails as a whole if the marker exists (the reward was applied), then None is returned.

        Sharded counters: each arm's gains are spread over ARM_SHARDS documents and this update writes the
        shard chosen by a hash of reward_id, because every graded run of a collection rewards the same arms and
        Firestore sustains about one write per second per document before it answers with contention
        (https://cloud.google.com/firestore/docs/solutions/counters, "distributed counters"). get_arms sums
        the shards. Returns {arm: (alpha, beta)} read after the commit (concurrent writers' gains included)."""
        if not isinstance(reward_id, str) or not reward_id:
            raise ValueError("reward_id must be a non-empty string")
        for arm in rewards:
            if not isinstance(arm, str) or not arm:
                raise ValueError(f"arm must be a non-empty string; got {arm!r}")
        marker = self._sub(collection, "arm_rewards").document(_h(reward_id))
        if marker.get().exists:  # cheap early exit; the create below is what makes it exactly-once
            return None
        shard = int(_h(reward_id), 16) % ARM_SHARDS
        batch = self.client.batch()
        batch.create(marker, {"reward_id": reward_id, "applied_at": time.time()})
        for arm, reward in rewards.items():
            r = min(1.0, max(0.0, float(reward)))
            batch.set(self._arm_shard(collection, arm, shard),
                      {"arm": arm, "alpha_gain": firestore.Increment(r), "beta_gain": firestore.Increment(1.0 - r),
                       "pulls": firestore.Increment(1)}, merge=True)
        try:
            batch.commit()
        except gexc.AlreadyExists:
            return None
        arms = self.get_arms(collection)
        return {arm: arms[arm] for arm in rewards if arm in arms}

    # -- feedback ------------------------------------------------------------------------------
    def put_feedback(self, collection: str, run_id: str, identity: str, entry: dict | None) -> dict | None:
        """Replace (or, with None, delete) the verdict of `identity` on `run_id` and move the arms by the
        difference of the two entries' `bandit` rewards, all in one preconditioned batch (module docstring).
        Returns the previous entry."""
        if not isinstance(run_id, str) or not run_id or not isinstance(identity, str) or not identity:
            raise ValueError("run_id and identity must be non-empty strings")
        ref = self._sub(collection, "verdicts").document(_h(f"{run_id}\n{identity}"))
        js = _dumps(entry, f"the verdict on run {run_id!r}") if entry is not None else None
        for attempt in range(CAS_ATTEMPTS):
            snap = ref.get()
            d = snap.to_dict() if snap.exists else None
            old = json.loads(d["json"]) if d and "json" in d else None
            batch = self.client.batch()
            if js is None:
                if snap.exists:
                    batch.delete(ref, option=_precondition(snap))
            elif snap.exists:
                batch.update(ref, {"json": js, "updated_at": float((entry or {}).get("updated_at") or time.time())},
                             option=_precondition(snap))
            else:
                batch.create(ref, {"run_id": run_id, "identity": identity, "json": js,
                                   "updated_at": float((entry or {}).get("updated_at") or time.time())})
            for arm, (da, db, dp) in feedback_delta(old, entry).items():
                batch.set(self._sub(collection, "arms").document(_h(arm)),
                          {"arm": arm, "alpha_gain": firestore.Increment(da), "beta_gain": firestore.Increment(db),
                           "pulls": firestore.Increment(dp)}, merge=True)
            try:
                batch.commit()
                return old
            except _LOST_RACE:
                _backoff(attempt)
        raise ConflictError(f"run {run_id!r}: {CAS_ATTEMPTS} concurrent verdicts won the race; giving up")

    def list_feedback(self, collection: str, *, identity: str | None = None, run_id: str | None = None,
                      limit: int = 100) -> list[dict]:
        """Streams the collection's verdicts and filters here (no composite index needed; a collection's
        verdicts are few next to its runs)."""
        out = []
        for s in self._sub(collection, "verdicts").stream():
            d = s.to_dict() or {}
            if "json" not in d or (identity is not None and d.get("identity") != identity) \
                    or (run_id is not None and d.get("run_id") != run_id):
                continue
            out.append((float(d.get("updated_at") or 0.0), json.loads(d["json"])))
        out.sort(key=lambda t: t[0], reverse=True)
        return [e for _, e in out[:max(0, int(limit))]]


def firestore_docstore(settings) -> FirestoreDocStore:
    """The registry's `firestore` docstore (RELAYRAG_FIRESTORE_DATABASE, RELAYRAG_FIRESTORE_PREFIX,
    RELAYRAG_GCP_PROJECT)."""
    return FirestoreDocStore(firestore_client(settings.gcp_project, settings.firestore_database),
                             settings.firestore_prefix)
