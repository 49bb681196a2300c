"""The embedded thread store: langgraph-checkpoint-sqlite's AsyncSqliteSaver with a bound on what a thread keeps.

Every graph step writes a checkpoint holding the whole conversation, so a thread's rows grow with the square
of its turns (61 turns of 7.8 K-character messages were 85 MB in 304 checkpoints). `BoundedSqliteSaver`:
- keeps the `keep_last` newest checkpoints of each (thread, namespace) — pruned, with their pending writes, once
  the count passes half as many again (RELAYRAG_AGENT_CHECKPOINT_KEEP; 0 keeps all). The newest checkpoint holds
  the whole state (the sqlite saver stores channel values inside each checkpoint), so only time travel to old
  steps is lost; the model already sees older turns as a summary (RELAYRAG_AGENT_HISTORY_TOKENS);
- reports the size of a thread's newest checkpoint (`latest_bytes`), which the assistant compares with
  RELAYRAG_AGENT_THREAD_MAX_MB before a turn: past it the turn is refused with a clear message instead of
  growing the file without end.
"""

from __future__ import annotations

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver


class BoundedSqliteSaver(AsyncSqliteSaver):
    """AsyncSqliteSaver that prunes old checkpoints of a thread after each put (see the module docstring)."""

    keep_last: int = 0

    async def aput(self, config, checkpoint, metadata, new_versions):
        out = await super().aput(config, checkpoint, metadata, new_versions)
        if self.keep_last > 0:
            await self._bound_history(str(config["configurable"]["thread_id"]),
                                      config["configurable"].get("checkpoint_ns", ""), self.keep_last)
        return out

    async def _bound_history(self, thread_id: str, ns: str, keep: int) -> None:
        async with self.lock:
            async with self.conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id=? AND checkpoint_ns=?",
                                         (thread_id, ns)) as cur:
                (count,) = await cur.fetchone()
            if count <= keep + max(keep // 2, 8):
                return
            # checkpoint ids are time-ordered (uuid6), so the newest `keep` sort last
            newest = ("SELECT checkpoint_id FROM checkpoints WHERE thread_id=? AND checkpoint_ns=? "
                      "ORDER BY checkpoint_id DESC LIMIT ?")
            for table in ("writes", "checkpoints"):
                await self.conn.execute(f"DELETE FROM {table} WHERE thread_id=? AND checkpoint_ns=? "
                                        f"AND checkpoint_id NOT IN ({newest})", (thread_id, ns, thread_id, ns, keep))
            await self.conn.commit()

    async def latest_bytes(self, thread_id: str) -> int:
        """Size in bytes of the newest checkpoint of `thread_id` (root namespace); 0 for a new thread."""
        await self.setup()
        async with self.lock, self.conn.execute(
                "SELECT length(checkpoint) FROM checkpoints WHERE thread_id=? AND checkpoint_ns='' "
                "ORDER BY checkpoint_id DESC LIMIT 1", (thread_id,)) as cur:
            row = await cur.fetchone()
        return int(row[0] or 0) if row else 0
