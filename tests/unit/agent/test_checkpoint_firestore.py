"""relayrag's Firestore checkpointer (relayrag.agent.checkpoint_firestore) on the real Firestore emulator:
langgraph-checkpoint-conformance's base suite, values past Firestore's 1 MiB document limit, and a thread
that survives an assistant restart."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from relayrag.agent.assistant import Assistant
from relayrag.mcp.server import build_server
from tests.unit.agent.conftest import run_turns, settings_for
from tests.unit.agent.test_graph import asked
from tests.emulators import firestore_emulator, firestore_emulator_missing

pytest.importorskip("google.cloud.firestore")


@pytest.fixture(scope="module")
def firestore_emulator_host():
    """A Firestore emulator for this module (FIRESTORE_EMULATOR_HOST set while it runs, restored after, so the
    session emulator of tests/unit/backends is never confused with it); skipped with the reason where the gcloud
    SDK, java or the emulator component is missing."""
    why = firestore_emulator_missing()
    if why:
        pytest.skip(f"Firestore emulator unavailable: {why}")
    old = os.environ.get("FIRESTORE_EMULATOR_HOST")
    with firestore_emulator() as emu:
        os.environ["FIRESTORE_EMULATOR_HOST"] = emu["host"]
        try:
            yield emu["host"]
        finally:
            if old is None:
                os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
            else:
                os.environ["FIRESTORE_EMULATOR_HOST"] = old


@pytest.fixture(scope="module")
def client(firestore_emulator_host):
    from google.cloud import firestore
    return firestore.Client(project="demo-relayrag")


def saver(client, prefix: str | None = None):
    from relayrag.agent.checkpoint_firestore import FirestoreSaver
    return FirestoreSaver(client, prefix=prefix or f"t{uuid.uuid4().hex[:10]}")


def test_the_firestore_saver_passes_the_langgraph_checkpoint_conformance_base_suite(client):
    from langgraph.checkpoint.conformance import checkpointer_test, validate

    @checkpointer_test(name="FirestoreSaver")
    async def fresh():
        yield saver(client)  # a fresh prefix per capability suite, as the suite asks

    report = asyncio.run(validate(fresh))
    failures = {cap: r.failures for cap, r in report.results.items() if r.passed is False}
    assert report.passed_all_base(), failures
    assert report.results["prune"].passed, failures   # an extended capability FirestoreSaver implements
    assert {c: report.results[c].tests_passed for c in ("put", "put_writes", "get_tuple", "list", "delete_thread",
                                                         "prune")} == \
        {"put": 17, "put_writes": 10, "get_tuple": 10, "list": 16, "delete_thread": 5, "prune": 8}


def test_history_is_bounded_to_the_newest_checkpoints_with_their_blobs_and_writes(client):
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata
    s = saver(client)
    s.keep_last = 2   # pruned past 2 + 8 checkpoints, down to 2
    cfg, version, stored = generate_config("long"), None, []
    for step in range(12):
        version = s.get_next_version(version)
        cp = generate_checkpoint(channel_values={"messages": [f"m{i}" for i in range(step + 1)], "fixed": "f"},
                                 channel_versions={"messages": version, "fixed": 1})
        cfg = s.put(cfg, cp, generate_metadata(step=step), {"messages": version, **({"fixed": 1} if not step else {})})
        s.put_writes(cfg, [("messages", f"w{step}")], f"task-{step}")
        stored.append(cfg)
    listed = list(s.list(generate_config("long")))
    # pruned to 2 at the 11th put, then the 12th: the 3 newest remain, each with its values and writes
    assert [t.metadata["step"] for t in listed] == [11, 10, 9]
    assert listed[0].checkpoint["channel_values"] == {"messages": [f"m{i}" for i in range(12)], "fixed": "f"}
    assert listed[-1].checkpoint["channel_values"]["fixed"] == "f"   # a blob from step 0, still named
    assert [t.pending_writes for t in listed] == [[(f"task-{n}", "messages", f"w{n}")] for n in (11, 10, 9)]
    assert s.get_tuple(stored[0]) is None
    blobs = {(b.get("channel"), b.get("version")) for b in
             (d.to_dict() for d in s._ns_ref("long", "").collection("blobs").stream())}
    assert blobs == {("fixed", "1")} | {("messages", t.checkpoint["channel_versions"]["messages"]) for t in listed}
    assert sum(1 for _ in s._ns_ref("long", "").collection("checkpoints").list_documents()) == 3


def test_values_past_the_document_limit_are_chunked_and_read_back(client):
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata

    from relayrag.agent.checkpoint_firestore import MAX_INLINE_BYTES
    s = saver(client)
    big = "x" * (2 * MAX_INLINE_BYTES + 17)   # 3 chunks of the channel blob
    cp = generate_checkpoint(channel_values={"messages": big, "small": 1}, channel_versions={"messages": 1, "small": 1})
    stored = s.put(generate_config("big"), cp, generate_metadata(note="y" * (MAX_INLINE_BYTES + 5)),
                   {"messages": 1, "small": 1})
    s.put_writes(stored, [("messages", big)], "task-1")
    tup = s.get_tuple(stored)
    assert tup.checkpoint["channel_values"] == {"messages": big, "small": 1}
    assert tup.metadata["note"] == "y" * (MAX_INLINE_BYTES + 5)
    assert tup.pending_writes == [("task-1", "messages", big)]
    blobs = [b.to_dict() for b in s._ns_ref("big", "").collection("blobs").stream()]
    assert sorted((b["channel"], b.get("chunks")) for b in blobs) == [("messages", 3), ("small", None)]
    s.delete_thread("big")
    assert s.get_tuple(generate_config("big")) is None
    assert not list(client.collection(f"{s.prefix}_agent_threads").list_documents())


def test_two_forks_of_a_thread_get_different_versions_and_keep_their_own_values(client):
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata
    s = saver(client)
    v1 = s.get_next_version(None)
    root = s.put(generate_config("f"), generate_checkpoint(channel_values={"a": "root"}, channel_versions={"a": v1}),
                 generate_metadata(step=0), {"a": v1})
    forks = []
    for value in ("left", "right"):   # two continuations of the same parent, as time travel makes
        v2 = s.get_next_version(v1)
        cp = generate_checkpoint(channel_values={"a": value}, channel_versions={"a": v2})
        forks.append(s.put(root, cp, generate_metadata(step=1), {"a": v2}))
    assert [s.get_tuple(f).checkpoint["channel_values"]["a"] for f in forks] == ["left", "right"]
    assert s.get_tuple(root).checkpoint["channel_values"]["a"] == "root"
    assert [t.metadata["step"] for t in s.list(generate_config("f"))] == [1, 1, 0]


def test_a_thread_on_firestore_survives_an_assistant_restart(home, bees, firestore_emulator_host):
    prefix = f"restart{uuid.uuid4().hex[:8]}"

    def factory():
        return Assistant(collection="docs", model=None, server=build_server(),
                         settings=settings_for(home, agent_checkpoint="firestore", gcp_project="demo-relayrag",
                                               firestore_prefix=prefix))
    # two Assistant openings = two checkpointers and two Firestore clients: nothing is shared but the emulator
    [first] = run_turns(factory, ["How much power does a residential solar panel produce?"], thread_id="kept")
    [follow] = run_turns(factory, ["and how much output do they lose per year?"], thread_id="kept")
    assert "400 watts" in first[-1]["answer"]
    # the follow-up is rewritten from the first turn's subject, which only the stored thread holds
    assert asked(follow) == ["How much output do a residential solar panel lose per year?"]
    assert "0.5 percent" in follow[-1]["answer"]
    assert not (home / "agent" / "threads.sqlite3").exists()

    async def messages():
        from relayrag.agent.threads import open_checkpointer
        async with open_checkpointer(settings_for(home, agent_checkpoint="firestore", gcp_project="demo-relayrag",
                                                  firestore_prefix=prefix)) as cp:
            tup = await cp.aget_tuple({"configurable": {"thread_id": "kept", "checkpoint_ns": ""}})
            return [m.content for m in tup.checkpoint["channel_values"]["messages"] if m.type == "human"]
    assert asyncio.run(messages()) == ["How much power does a residential solar panel produce?",
                                       "and how much output do they lose per year?"]
