"""A LangGraph checkpointer on Firestore (RELAYRAG_AGENT_CHECKPOINT=firestore; extra `gcp`).

`FirestoreSaver(client, prefix, keep_last=N)` implements `BaseCheckpointSaver`'s base capabilities (put,
put_writes, get_tuple, list, delete_thread) and prune, sync and async, with the semantics of langgraph's
InMemorySaver, and passes langgraph-checkpoint-conformance's base suite and its prune suite on the Firestore
emulator
(tests/unit/agent/test_checkpoint_firestore.py). Firestore bills per operation and per stored byte, so an
idle assistant costs nothing but the bytes of its threads — unlike a Cloud SQL instance, which bills every
hour it exists.

Layout (P = `prefix`; h(x) = sha256 hex of x, because thread ids, namespaces, channel names and task ids may
contain '/' and Firestore document ids cannot; every value is `serde.dumps_typed` output, stored as
{type, data: bytes}, or, past MAX_INLINE_BYTES, as {type, chunks: n} plus n documents `chunks/{i:06d}`
{data} under it, because one document holds at most 1 MiB):

    P_agent_threads/{h(thread_id)}                                   {thread_id, updated_at}
      namespaces/{h(checkpoint_ns)}                                  {checkpoint_ns}
        checkpoints/{checkpoint_id}                                  {checkpoint_id, parent_checkpoint_id,
                                                                      type, data | chunks}   the checkpoint
                                                                      without channel_values, and its metadata
          writes/{h(task_id)}.{idx}                                  {task_id, task_path, idx, channel,
                                                                      type, data | chunks}   a pending write
        blobs/{h(channel \\0 version)}                                {channel, version, type, data | chunks}

Checkpoint ids are uuid6 strings (time-ordered), so "newest first" is the field `checkpoint_id` descending,
which Firestore serves from its automatic single-field index (no composite index to declare; the emulator
refuses descending scans of document ids). A channel's value is stored once
per (channel, version) and shared by every checkpoint that has that version, as in langgraph's Postgres
and in-memory savers; `get_next_version` adds a random fraction so two forks of a thread never produce
the same version with different values.

Atomicity: `put` commits the thread and namespace documents, the new blobs and the checkpoint document in
one batch when they fit one commit (500 writes, ~9 MB); otherwise the blobs go first in their own batches and
the checkpoint document last — a blob no checkpoint names is never read, so a crash in between leaves
only garbage that `delete_thread` removes. `put_writes` is one batch; a regular write (idx >= 0) that is
already stored is kept (a retried task writes it again), the special ones (ERROR, INTERRUPT, ...) are
overwritten, as langgraph's savers do. `delete_thread` deletes the thread document and everything under
it (Firestore's recursive delete).

History bound (`keep_last` = N > 0; RELAYRAG_AGENT_CHECKPOINT_KEEP): after a put, a count aggregation
(one read per 1,000 checkpoints) tells how many checkpoints the thread's namespace holds; past N + N/2 (at
least N + 8) the oldest are deleted down to N, with their pending writes and the blobs no kept checkpoint
names, so the pruning work is amortised over N/2 puts. The newest checkpoint holds the whole state (every
message of the thread), so what goes is only time travel to older steps. Not for graphs with LangGraph's
DeltaChannel, whose values are rebuilt from ancestors' writes (relayrag's graph has none).
`prune(thread_ids, strategy)`: "keep_latest" keeps the newest checkpoint per namespace, "delete" all.

`list` filters metadata client-side (equality on every key of `filter`), because Firestore would need a
composite index per metadata key to filter and order on the server; threads hold tens of checkpoints.
The async methods run the synchronous client in a worker thread (asyncio.to_thread).
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import random
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

__all__ = ["FirestoreSaver", "MAX_INLINE_BYTES"]

MAX_INLINE_BYTES = 1_000_000   # a value up to this size lives in its document (limit 1 MiB, with the other fields)
MAX_BATCH_WRITES = 500         # Firestore's limit of writes in one commit
MAX_BATCH_BYTES = 9_000_000    # below the 10 MiB request limit of one commit


def firestore_client(project: str = "", database: str = "(default)") -> Any:
    """A `google.cloud.firestore.Client` for the thread store (Application Default Credentials, or
    FIRESTORE_EMULATOR_HOST). ConfigError without google-cloud-firestore (extra `gcp`)."""
    try:
        from google.cloud import firestore
    except ImportError as exc:
        from relayrag.errors import ConfigError
        raise ConfigError("RELAYRAG_AGENT_CHECKPOINT=firestore needs google-cloud-firestore: "
                          "pip install 'relayrag[gcp]'") from exc
    return firestore.Client(project=project or None, database=database or "(default)")


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_checkpoint_id(checkpoint_id: str) -> str:
    if (not isinstance(checkpoint_id, str) or not checkpoint_id or "/" in checkpoint_id
            or checkpoint_id in (".", "..") or len(checkpoint_id.encode("utf-8")) > 1500):
        raise ValueError(f"checkpoint id {checkpoint_id!r} cannot be a Firestore document id (non-empty, no '/')")
    return checkpoint_id


class _Batches:
    """Writes gathered for as few commits as Firestore allows; `commit(last=...)` commits the gathered
    writes in batches of at most MAX_BATCH_WRITES writes / MAX_BATCH_BYTES bytes, `last` in the final one."""

    def __init__(self, client):
        self.client = client
        self.ops: list[tuple[str, Any, dict | None, int]] = []   # (op, ref, fields, approx bytes)

    def set(self, ref, fields: dict, *, merge: bool = False) -> None:
        size = sum(len(v) if isinstance(v, (bytes, str)) else 16 for v in fields.values()) + 200
        self.ops.append(("merge" if merge else "set", ref, fields, size))

    def fits_one_commit(self) -> bool:
        return len(self.ops) <= MAX_BATCH_WRITES and sum(o[3] for o in self.ops) <= MAX_BATCH_BYTES

    def commit(self) -> None:
        batch, n, size = self.client.batch(), 0, 0
        for op, ref, fields, nbytes in self.ops:
            if n and (n + 1 > MAX_BATCH_WRITES or size + nbytes > MAX_BATCH_BYTES):
                batch.commit()
                batch, n, size = self.client.batch(), 0, 0
            batch.set(ref, fields, merge=(op == "merge"))
            n, size = n + 1, size + nbytes
        if n:
            batch.commit()
        self.ops = []


class FirestoreSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpointer on Firestore (see the module docstring for the layout).

    `client`: a `google.cloud.firestore.Client` (Application Default Credentials, or FIRESTORE_EMULATOR_HOST);
    `prefix`: prefix of the top-level collection (`{prefix}_agent_threads`), so environments can share one
    database; `serde`: LangGraph's serializer (default JsonPlusSerializer). Raises ValueError for a checkpoint
    id that cannot be a document id; Firestore's own errors (google.api_core.exceptions) pass through.
    """

    def __init__(self, client: Any, prefix: str = "relayrag", *, keep_last: int = 0,
                 serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        if keep_last < 0:
            raise ValueError(f"keep_last={keep_last}: 0 (keep every checkpoint) or a positive count")
        self.client = client
        self.prefix = prefix
        self.keep_last = keep_last
        self.threads = client.collection(f"{prefix}_agent_threads")

    # -- paths -------------------------------------------------------------------------------------------

    def _ns_ref(self, thread_id: str, checkpoint_ns: str):
        return self.threads.document(_h(str(thread_id))).collection("namespaces").document(_h(checkpoint_ns))

    # -- values: inline or chunked -------------------------------------------------------------------------

    def _value_fields(self, ref, typed: tuple[str, bytes], batches: _Batches) -> dict:
        kind, data = typed
        if len(data) <= MAX_INLINE_BYTES:
            return {"type": kind, "data": data}
        n = 0
        for n, start in enumerate(range(0, len(data), MAX_INLINE_BYTES), start=1):
            batches.set(ref.collection("chunks").document(f"{n - 1:06d}"),
                        {"data": data[start:start + MAX_INLINE_BYTES]})
        return {"type": kind, "chunks": n}

    def _load_value(self, snap_dict: dict, ref) -> Any:
        if "chunks" in snap_dict:
            refs = [ref.collection("chunks").document(f"{i:06d}") for i in range(int(snap_dict["chunks"]))]
            got = {s.id: s.to_dict() for s in self.client.get_all(refs) if s.exists}
            missing = [r.id for r in refs if r.id not in got]
            if missing:
                raise RuntimeError(f"Firestore checkpoint value {ref.path} lacks chunks {missing}")
            data = b"".join(got[f"{i:06d}"]["data"] for i in range(len(refs)))
        else:
            data = snap_dict["data"]
        return self.serde.loads_typed((snap_dict["type"], data))

    # -- reading -----------------------------------------------------------------------------------------

    def _tuple(self, thread_id: str, checkpoint_ns: str, snap) -> CheckpointTuple:
        doc = snap.to_dict()
        stored = self._load_value(doc, snap.reference)
        checkpoint: Checkpoint = stored["checkpoint"]
        ns_ref = self._ns_ref(thread_id, checkpoint_ns)
        versions = checkpoint.get("channel_versions") or {}
        blob_refs = {ns_ref.collection("blobs").document(_h(f"{ch}\x00{ver}")): ch for ch, ver in versions.items()}
        values: dict[str, Any] = {}
        if blob_refs:
            for b in self.client.get_all(list(blob_refs)):
                if b.exists:
                    bd = b.to_dict()
                    if bd["type"] != "empty":
                        values[bd["channel"]] = self._load_value(bd, b.reference)
        writes = [w.to_dict() | {"_ref": w.reference} for w in snap.reference.collection("writes").stream()]
        writes.sort(key=lambda w: writes_sort_key(w.get("task_path", ""), w["task_id"], w["idx"]))
        parent = doc.get("parent_checkpoint_id")
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                     "checkpoint_id": doc["checkpoint_id"]}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=stored["metadata"],
            parent_config=({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                             "checkpoint_id": parent}} if parent else None),
            pending_writes=[(w["task_id"], w["channel"], self._load_value(w, w["_ref"])) for w in writes],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint `config` names (`checkpoint_id`), or the thread namespace's newest; None if absent."""
        conf = config["configurable"]
        thread_id, checkpoint_ns = str(conf["thread_id"]), conf.get("checkpoint_ns", "")
        checkpoints = self._ns_ref(thread_id, checkpoint_ns).collection("checkpoints")
        if checkpoint_id := get_checkpoint_id(config):
            snap = checkpoints.document(_check_checkpoint_id(checkpoint_id)).get()
            return self._tuple(thread_id, checkpoint_ns, snap) if snap.exists else None
        for snap in self._newest_first(checkpoints, limit=1):
            return self._tuple(thread_id, checkpoint_ns, snap)
        return None

    def _newest_first(self, checkpoints, *, before: str | None = None, limit: int | None = None):
        from google.cloud import firestore
        q = checkpoints.order_by("checkpoint_id", direction=firestore.Query.DESCENDING)
        if before:
            q = q.where(filter=firestore.FieldFilter("checkpoint_id", "<", before))
        if limit is not None:
            q = q.limit(limit)
        return q.stream()

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of `config`'s thread (all threads when None), of its `checkpoint_ns`
        (every namespace when the key is absent), only `checkpoint_id` when given; whose metadata equals
        `filter` on every key; older than `before`'s checkpoint; at most `limit`."""
        if limit is not None and limit <= 0:
            return
        conf = (config or {}).get("configurable", {})
        threads: Iterable[str]
        if config is not None and "thread_id" in conf:
            threads = [str(conf["thread_id"])]
        else:
            threads = (s.to_dict()["thread_id"] for s in self.threads.stream())
        before_id = get_checkpoint_id(before) if before else None
        only_id = conf.get("checkpoint_id")
        page = None if filter else limit   # a metadata filter is applied here, so read on until `limit` match
        left = limit
        for thread_id in threads:
            if "checkpoint_ns" in conf:
                namespaces = [conf["checkpoint_ns"]]
            else:
                namespaces = [s.to_dict()["checkpoint_ns"] for s in
                              self.threads.document(_h(thread_id)).collection("namespaces").stream()]
            streams = []
            for ns in namespaces:
                checkpoints = self._ns_ref(thread_id, ns).collection("checkpoints")
                if only_id:
                    if before_id and only_id >= before_id:
                        continue
                    snap = checkpoints.document(_check_checkpoint_id(only_id)).get()
                    stream = iter([snap] if snap.exists else [])
                else:
                    stream = self._newest_first(checkpoints, before=before_id, limit=page)
                streams.append(((ns, s) for s in stream))
            for ns, snap in heapq.merge(*streams, key=lambda p: p[1].id, reverse=True):
                tup = self._tuple(thread_id, ns, snap)
                if filter and not all(tup.metadata.get(k) == v for k, v in filter.items()):
                    continue
                yield tup
                if left is not None:
                    left -= 1
                    if left <= 0:
                        return

    # -- writing -----------------------------------------------------------------------------------------

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        """Store `checkpoint` (its channel values of `new_versions` as blobs) with `metadata` under
        `config`'s thread and namespace, its `checkpoint_id` as the parent; returns the new checkpoint's
        config."""
        conf = config["configurable"]
        thread_id, checkpoint_ns = str(conf["thread_id"]), conf.get("checkpoint_ns", "")
        checkpoint_id = _check_checkpoint_id(checkpoint["id"])
        c = checkpoint.copy()
        values: dict[str, Any] = c.pop("channel_values")  # type: ignore[misc]
        thread_ref = self.threads.document(_h(thread_id))
        ns_ref = self._ns_ref(thread_id, checkpoint_ns)
        batches = _Batches(self.client)
        for ch, ver in new_versions.items():
            ref = ns_ref.collection("blobs").document(_h(f"{ch}\x00{ver}"))
            typed = self.serde.dumps_typed(values[ch]) if ch in values else ("empty", b"")
            fields = self._value_fields(ref, typed, batches)
            batches.set(ref, {"channel": ch, "version": str(ver), **fields})
        if not batches.fits_one_commit():
            batches.commit()   # blobs first: nothing reads them until the checkpoint document names them
        ref = ns_ref.collection("checkpoints").document(checkpoint_id)
        typed = self.serde.dumps_typed({"checkpoint": c, "metadata": get_checkpoint_metadata(config, metadata)})
        fields = self._value_fields(ref, typed, batches)
        batches.set(thread_ref, {"thread_id": thread_id, "updated_at": time.time()}, merge=True)
        batches.set(ns_ref, {"checkpoint_ns": checkpoint_ns}, merge=True)
        batches.set(ref, {"checkpoint_id": checkpoint_id, "parent_checkpoint_id": conf.get("checkpoint_id"),
                          **fields})
        batches.commit()
        if self.keep_last:
            self._bound_history(ns_ref, self.keep_last)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint_id}}

    def _bound_history(self, ns_ref, keep: int) -> None:
        checkpoints = ns_ref.collection("checkpoints")
        count = int(checkpoints.count().get()[0][0].value)
        if count > keep + max(keep // 2, 8):
            self._keep_newest(ns_ref, keep)

    def _keep_newest(self, ns_ref, keep: int) -> None:
        """Delete all but the `keep` newest checkpoints of one namespace (with their pending writes and value
        chunks), then the blobs that no kept checkpoint names."""
        kept_versions: set[tuple[str, str]] = set()
        for i, snap in enumerate(self._newest_first(ns_ref.collection("checkpoints"))):
            if i < keep:
                stored = self._load_value(snap.to_dict(), snap.reference)
                kept_versions.update((ch, str(v)) for ch, v in
                                     (stored["checkpoint"].get("channel_versions") or {}).items())
            else:
                self.client.recursive_delete(snap.reference)
        for blob in ns_ref.collection("blobs").select(["channel", "version"]).stream():
            b = blob.to_dict()
            if (b["channel"], b["version"]) not in kept_versions:
                self.client.recursive_delete(blob.reference)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """"keep_latest": keep only the newest checkpoint of each namespace of `thread_ids` (its pending writes
        and values stay); "delete": delete the threads. Unknown threads are a no-op; another strategy is a
        ValueError."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"prune strategy {strategy!r}: keep_latest | delete")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            for ns in self.threads.document(_h(str(thread_id))).collection("namespaces").stream():
                self._keep_newest(ns.reference, 1)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        """Store a task's pending writes ((channel, value) pairs) on `config`'s checkpoint, keyed by
        (task_id, idx): a regular write already stored is kept, a special one (ERROR, INTERRUPT, ...) is
        replaced."""
        conf = config["configurable"]
        thread_id, checkpoint_ns = str(conf["thread_id"]), conf.get("checkpoint_ns", "")
        cp_ref = (self._ns_ref(thread_id, checkpoint_ns).collection("checkpoints")
                  .document(_check_checkpoint_id(conf["checkpoint_id"])))
        keyed = [(WRITES_IDX_MAP.get(ch, idx), ch, v) for idx, (ch, v) in enumerate(writes)]
        refs = {idx: cp_ref.collection("writes").document(f"{_h(task_id)}.{idx}") for idx, _, _ in keyed}
        regular = [refs[idx] for idx, _, _ in keyed if idx >= 0]
        stored = {s.id for s in self.client.get_all(regular) if s.exists} if regular else set()
        batches = _Batches(self.client)
        for idx, ch, v in keyed:
            ref = refs[idx]
            if idx >= 0 and ref.id in stored:
                continue
            fields = self._value_fields(ref, self.serde.dumps_typed(v), batches)
            batches.set(ref, {"task_id": task_id, "task_path": task_path, "idx": idx, "channel": ch, **fields})
        batches.commit()

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and pending write of `thread_id` (a no-op for an unknown thread)."""
        self.client.recursive_delete(self.threads.document(_h(str(thread_id))))

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """`{n:032}.{random:016}`: increasing in n, and two forks of one thread never share a version."""
        if current is None:
            n = 0
        elif isinstance(current, int):
            n = current
        else:
            n = int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    # -- async: the synchronous client in a worker thread ---------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        it = self.list(config, filter=filter, before=before, limit=limit)
        while (item := await asyncio.to_thread(next, it, None)) is not None:
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
