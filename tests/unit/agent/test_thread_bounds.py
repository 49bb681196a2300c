"""Issue 24 row 5: a thread's checkpoints grew with the square of its turns (every step stores the whole
conversation). The embedded store keeps the newest RELAYRAG_AGENT_CHECKPOINT_KEEP checkpoints of a thread, and
a thread past RELAYRAG_AGENT_THREAD_MAX_MB takes no more turns, with a message that says so."""

from __future__ import annotations

import sqlite3

from relayrag.agent.assistant import Assistant
from relayrag.mcp.server import build_server
from tests.unit.agent.conftest import run_turns, settings_for

LONG = "How many worker bees live in a colony in summer? " + "Please be precise about the season. " * 80


def _rows(home) -> tuple[int, int]:
    with sqlite3.connect(home / "agent" / "threads.sqlite3") as db:
        return (db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0],
                db.execute("SELECT MAX(length(checkpoint)) FROM checkpoints").fetchone()[0])


def test_old_checkpoints_are_pruned_and_the_conversation_is_kept(home, bees):
    factory = lambda keep: lambda: Assistant(  # noqa: E731
        collection="docs", model=None, server=build_server(),
        settings=settings_for(home, agent_checkpoint="sqlite", agent_checkpoint_keep=keep))
    events = run_turns(factory(4), [LONG] * 8)
    assert all(ev[-1]["event"] == "final" for ev in events)
    n, _ = _rows(home)
    assert n <= 4 + 8, n  # bounded: the newest 4, pruned once past 4 + slack

    async def history():
        async with factory(4)() as a:
            return await a.history(a.thread_key("t1"))
    import asyncio
    msgs = asyncio.run(history())
    assert sum(1 for m in msgs if m.get("role") in ("user", "human")) == 8  # every turn is still in the thread


def test_a_thread_past_its_size_cap_is_refused_with_a_clear_message(home, bees):
    make = lambda: Assistant(collection="docs", model=None, server=build_server(),  # noqa: E731
                             settings=settings_for(home, agent_checkpoint="sqlite", agent_thread_max_mb=0.004))
    first, second = run_turns(make, [LONG, LONG])
    assert first[-1]["event"] == "final"
    assert second[-1]["event"] == "error" and "this thread is full" in second[-1]["message"]
    assert "RELAYRAG_AGENT_THREAD_MAX_MB" in second[-1]["message"]
    (other,) = run_turns(make, [LONG], thread_id="t2")  # a new thread goes on
    assert other[-1]["event"] == "final"
