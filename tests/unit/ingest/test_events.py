"""GCS-triggered ingestion (relayrag.ingest.events, entry point `ingest_object`): real CloudEvents, sent
through the real functions-framework app and given to the function body directly. Cloud Storage and
Pub/Sub are test doubles (a bucket that keeps generations like a non-versioned GCS bucket; a publisher
that records messages); blob store and docstore are the embedded ones."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import functions_framework
import pytest
from cloudevents.conversion import to_binary, to_structured
from cloudevents.http import CloudEvent

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.backends.docstore import SQLiteDocStore
from relayrag.context import StageContext, set_default_context
from relayrag.ingest import events
from relayrag.ingest.events import DELETED, FINALIZED, UNROUTABLE, ObjectGone, handle_event
from relayrag.ingest.snapshot import read_chunks
from relayrag.settings import Settings
from relayrag.stages.retrieve import arm_ranking
from tests.conftest import REPO
from tests.unit.ingest.test_concurrency import RemoteLikeStore, race

BUCKET = "docs-bucket"
TOPIC = "projects/p/topics/relayrag-dead-letters"


class FakeBucket:
    """Cloud Storage double: a non-versioned bucket. Each upload gets a new, increasing generation and
    replaces the previous one (whose bytes are then gone, as in GCS); events are built from its state."""

    _gens = itertools.count(1_700_000_000_000_001)

    def __init__(self, name: str = BUCKET):
        self.name = name
        self.live: dict[str, tuple[int, bytes]] = {}
        self.fetches: list[tuple[str, int]] = []
        self.unavailable = False

    def upload(self, obj: str, data: bytes, content_type: str = "application/octet-stream") -> CloudEvent:
        gen = next(self._gens)
        self.live[obj] = (gen, data)
        return self.event(FINALIZED, obj, gen, data, content_type)

    def delete(self, obj: str) -> CloudEvent:
        gen, data = self.live.pop(obj)
        return self.event(DELETED, obj, gen, data)

    def event(self, etype: str, obj: str, gen: int, data: bytes, content_type: str = "application/octet-stream"):
        return CloudEvent({"type": etype, "source": f"//storage.googleapis.com/projects/_/buckets/{self.name}",
                           "subject": f"objects/{obj}"},
                          {"bucket": self.name, "name": obj, "generation": str(gen), "size": str(len(data)),
                           "contentType": content_type, "metageneration": "1"})

    def fetch(self, bucket: str, name: str, generation: int, dest: Path) -> None:
        assert bucket == self.name
        self.fetches.append((name, generation))
        if self.unavailable:
            raise ConnectionError("storage.googleapis.com unreachable")
        live = self.live.get(name)
        if live is None or live[0] != generation:
            raise ObjectGone(f"gs://{bucket}/{name}#{generation} does not exist")
        Path(dest).write_bytes(live[1])


class RecordingPublisher:
    """Pub/Sub PublisherClient double: records (topic, message, attributes); can be made to fail."""

    class _Future:
        def __init__(self, exc=None):
            self.exc = exc

        def result(self, timeout=None):
            if self.exc:
                raise self.exc
            return "message-id-1"

    def __init__(self):
        self.messages: list[dict] = []
        self.fail_next = False

    def publish(self, topic, data, **attrs):
        if self.fail_next:
            self.fail_next = False
            return self._Future(RuntimeError("pubsub unavailable"))
        self.messages.append({"topic": topic, "data": json.loads(data), "attrs": attrs})
        return self._Future()


@pytest.fixture
def bucket():
    b = FakeBucket()
    events.set_fetcher(b.fetch)
    yield b
    events.set_fetcher(None)


@pytest.fixture
def publisher():
    p = RecordingPublisher()
    events.set_publisher(p)
    yield p
    events.set_publisher(None)


@pytest.fixture
def ectx(tmp_path, embedder):
    """The process-wide context the entry point uses: embedded stores, a dead-letter topic configured."""
    s = Settings(home=tmp_path / "home", dead_letter_topic=TOPIC)
    c = StageContext(s, LocalBlobStore(s.home / "blobs"), SQLiteDocStore(s.home / "d.sqlite3"), embedder=embedder)
    set_default_context(c)
    yield c
    set_default_context(None)


@pytest.fixture
def client(bucket, publisher, ectx):
    app = functions_framework.create_app(target="ingest_object", source=str(REPO / "functions" / "main.py"),
                                         signature_type="cloudevent")
    return app.test_client()


def post(client, event: CloudEvent, mode: str = "binary"):
    headers, body = (to_binary if mode == "binary" else to_structured)(event)
    return client.post("/", headers=headers, data=body)


def search(ctx, collection: str, query: str, arm: str = "hybrid") -> list[dict]:
    """Top chunks for `query` from the collection's current snapshot (what the retrieve stage ranks)."""
    snap = ctx.snapshot(collection)
    ranked = arm_ranking(snap, ctx.embedder, [{"text": query, "kind": "original", "weight": 1.0}], arm, depth=5)
    return [snap.chunks[row] for row, _ in ranked]


SOLAR = b"# Solar\n\nPhotovoltaic panels convert sunlight into electricity; a panel yields 400 watts at peak."
BEES = b"Honey bees communicate the direction of flowers with a waggle dance."


def sources(ctx, collection: str) -> set[str]:
    meta = ctx.docstore.get_collection(collection)
    return {c["source"] for c in read_chunks(ctx.blobstore, collection, meta["current_version"])}


def version(ctx, collection: str) -> str:
    return ctx.docstore.get_collection(collection)["current_version"]


# -- through functions-framework ------------------------------------------------------------------------

def test_finalize_over_http_makes_the_object_searchable(client, bucket, ectx, capsys):
    r = post(client, bucket.upload("kb/energy/solar.md", SOLAR, "text/markdown"))
    assert r.status_code == 200, r.data
    key = f"gs://{BUCKET}/kb/energy/solar.md"
    rec = ectx.docstore.get_file("kb", key)
    assert rec["generation"] == str(bucket.live["kb/energy/solar.md"][0]) and rec["name"] == "solar.md"
    assert rec["bucket"] == BUCKET and rec["object"] == "kb/energy/solar.md"
    assert sources(ectx, "kb") == {key}
    top = search(ectx, "kb", "how many watts does a solar panel produce")
    assert top[0]["source"] == key and "400 watts" in top[0]["text"] and top[0]["doc"] == "solar.md"
    log = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert log["severity"] == "INFO" and log["relayrag"]["outcome"] == "ingested"


def test_redelivered_event_is_a_no_op(client, bucket, ectx, capsys):
    ev = bucket.upload("kb/solar.md", SOLAR)
    assert post(client, ev).status_code == 200
    v1 = version(ectx, "kb")
    fetched = len(bucket.fetches)
    assert post(client, ev, mode="structured").status_code == 200   # same event, other content mode
    assert version(ectx, "kb") == v1 and len(bucket.fetches) == fetched  # not even downloaded again
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["relayrag"]["outcome"] == "duplicate"


def test_corrupt_pdf_is_dead_lettered_once_and_not_retried(client, bucket, publisher, ectx):
    ev = bucket.upload("kb/broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog", "application/pdf")
    r = post(client, ev)
    assert r.status_code == 200  # success: Eventarc must not retry a poison object
    key = f"gs://{BUCKET}/kb/broken.pdf"
    dl = ectx.docstore.get_dead_letter("kb", key)
    assert "corrupt" in dl["error"] and dl["kind"] == "unreadable" and dl["published"] is True
    assert dl["generation"] == ev.data["generation"] and dl["event"]["id"] == ev["id"]
    assert len(publisher.messages) == 1
    msg = publisher.messages[0]
    assert msg["topic"] == TOPIC and msg["data"]["path"] == key and "corrupt" in msg["data"]["error"]
    assert msg["attrs"] == {"collection": "kb", "source": key, "kind": "unreadable"}
    assert post(client, ev).status_code == 200  # redelivery
    assert len(publisher.messages) == 1 and ectx.docstore.get_file("kb", key) is None


def test_transient_failure_answers_500_so_eventarc_retries(client, bucket, ectx):
    ev = bucket.upload("kb/solar.md", SOLAR)
    bucket.unavailable = True
    assert post(client, ev).status_code == 500
    assert ectx.docstore.get_collection("kb") is None and ectx.docstore.list_dead_letters("kb") == []
    bucket.unavailable = False
    assert post(client, ev).status_code == 200  # the retry succeeds
    assert sources(ectx, "kb") == {f"gs://{BUCKET}/kb/solar.md"}


def test_a_post_that_is_not_a_cloudevent_is_rejected_before_the_function(client, ectx):
    r = client.post("/", json={"bucket": BUCKET, "name": "kb/a.md"})  # no CloudEvent attributes
    assert r.status_code == 400 and ectx.docstore.list_collections() == []


# -- the function body ----------------------------------------------------------------------------------

def test_overwrite_reingests_then_the_old_generations_delete_is_a_no_op(bucket, ectx):
    first = bucket.upload("kb/doc.txt", SOLAR)
    assert handle_event(first)["outcome"] == "ingested"
    second = bucket.upload("kb/doc.txt", BEES)  # overwrite: new generation
    out = handle_event(second)
    assert out["outcome"] == "ingested"
    key = f"gs://{BUCKET}/kb/doc.txt"
    assert ectx.docstore.get_file("kb", key)["generation"] == second.data["generation"]
    snap = ectx.snapshot("kb")
    assert any("waggle" in c["text"] for c in snap.chunks) and not any("Photovoltaic" in c["text"] for c in snap.chunks)
    v = version(ectx, "kb")
    # GCS sends `deleted` for the overwritten generation
    old_delete = bucket.event(DELETED, "kb/doc.txt", int(first.data["generation"]), SOLAR)
    assert handle_event(old_delete)["outcome"] == "stale"
    assert version(ectx, "kb") == v and sources(ectx, "kb") == {key}
    # a late redelivery of the first finalize is stale too (that generation is older than the record)
    assert handle_event(first)["outcome"] == "duplicate" and version(ectx, "kb") == v


def test_delete_removes_the_source_and_redelivery_changes_nothing(bucket, ectx):
    handle_event(bucket.upload("kb/a.md", SOLAR))
    handle_event(bucket.upload("kb/b.txt", BEES))
    ev = bucket.delete("kb/a.md")
    out = handle_event(ev)
    assert out["outcome"] == "removed"
    assert sources(ectx, "kb") == {f"gs://{BUCKET}/kb/b.txt"}
    assert ectx.docstore.get_file("kb", f"gs://{BUCKET}/kb/a.md") is None
    v = version(ectx, "kb")
    assert handle_event(ev)["outcome"] == "absent" and version(ectx, "kb") == v


def test_same_bytes_reuploaded_only_move_the_generation(bucket, ectx):
    handle_event(bucket.upload("kb/a.md", SOLAR))
    v = version(ectx, "kb")
    again = bucket.upload("kb/a.md", SOLAR)
    assert handle_event(again)["outcome"] == "unchanged"
    assert version(ectx, "kb") == v  # no new snapshot: nothing re-chunked or embedded
    assert ectx.docstore.get_file("kb", f"gs://{BUCKET}/kb/a.md")["generation"] == again.data["generation"]
    # so the delete GCS sends for the replaced generation does not remove the live content
    replaced = bucket.event(DELETED, "kb/a.md", int(again.data["generation"]) - 1, SOLAR)
    assert handle_event(replaced)["outcome"] == "stale"
    assert sources(ectx, "kb") == {f"gs://{BUCKET}/kb/a.md"}


def test_finalize_of_a_generation_already_replaced_is_stale(bucket, ectx):
    first = bucket.upload("kb/a.md", SOLAR)
    bucket.upload("kb/a.md", BEES)  # its event not delivered yet
    out = handle_event(first)
    assert out["outcome"] == "stale" and ectx.docstore.get_collection("kb") is None


def test_poison_objects_by_kind(bucket, publisher, ectx):
    cases = {"kb/empty.txt": (b"", "empty"), "kb/sheet.xlsx": (b"PK\x03\x04", "unsupported"),
             "kb/blank.md": (b"   \n\n", "unreadable")}
    for name, (data, kind) in cases.items():
        out = handle_event(bucket.upload(name, data))
        assert out["outcome"] == "dead_letter" and out["kind"] == kind, out
    assert {m["data"]["kind"] for m in publisher.messages} == {"empty", "unsupported", "unreadable"}
    fetched = {n for n, _ in bucket.fetches}
    assert "kb/sheet.xlsx" not in fetched and "kb/empty.txt" not in fetched  # decided from the event alone
    assert len(ectx.docstore.list_dead_letters("kb")) == 3


def test_a_fixed_upload_clears_the_dead_letter(bucket, publisher, ectx):
    handle_event(bucket.upload("kb/x.pdf", b"%PDF-1.4 truncated"))
    key = f"gs://{BUCKET}/kb/x.pdf"
    assert ectx.docstore.get_dead_letter("kb", key) is not None
    pdf = (REPO / "examples" / "pdfs" / "ag-energy-round-up-2017-02-24.pdf").read_bytes()
    assert handle_event(bucket.upload("kb/x.pdf", pdf))["outcome"] == "ingested"
    assert ectx.docstore.get_dead_letter("kb", key) is None and sources(ectx, "kb") == {key}


def test_failed_publish_is_retried_by_the_redelivery_and_then_sent_once(bucket, publisher, ectx):
    ev = bucket.upload("kb/bad.pdf", b"not a pdf at all")
    publisher.fail_next = True
    with pytest.raises(RuntimeError, match="pubsub unavailable"):
        handle_event(ev)
    key = f"gs://{BUCKET}/kb/bad.pdf"
    assert ectx.docstore.get_dead_letter("kb", key)["published"] is False
    assert handle_event(ev)["outcome"] == "dead_letter_duplicate"
    assert handle_event(ev)["outcome"] == "dead_letter_duplicate"
    assert len(publisher.messages) == 1 and ectx.docstore.get_dead_letter("kb", key)["published"] is True


def test_without_a_topic_dead_letters_are_recorded_only(bucket, tmp_path, embedder):
    s = Settings(home=tmp_path / "h2")
    c = StageContext(s, LocalBlobStore(s.home / "b"), SQLiteDocStore(s.home / "d.sqlite3"), embedder=embedder)
    sent = RecordingPublisher()
    out = handle_event(bucket.upload("kb/bad.pdf", b"junk"), ctx=c, publisher=sent)
    assert out["outcome"] == "dead_letter" and sent.messages == []
    assert c.docstore.get_dead_letter("kb", f"gs://{BUCKET}/kb/bad.pdf")["published"] is False


def test_objects_outside_a_valid_collection(bucket, publisher, ectx):
    for name in ("toplevel.md", "..hidden/a.md", "-bad/a.md"):
        out = handle_event(bucket.upload(name, SOLAR))
        assert out["outcome"] == "dead_letter" and out["kind"] == "invalid_collection", out
    assert len(ectx.docstore.list_dead_letters(UNROUTABLE)) == 3 and len(publisher.messages) == 3
    assert "collection" in publisher.messages[0]["data"]["error"]
    assert handle_event(bucket.delete("toplevel.md"))["outcome"] == "ignored"
    assert handle_event(bucket.upload("kb/folder/", b""))["outcome"] == "ignored"
    other = CloudEvent({"type": "google.cloud.storage.object.v1.metadataUpdated", "source": "s"},
                       {"bucket": BUCKET, "name": "kb/a.md", "generation": "1"})
    assert handle_event(other)["outcome"] == "ignored"
    assert ectx.docstore.list_collections() == []


def test_concurrent_finalize_events_for_one_collection_lose_no_update(tmp_path, bucket, embedder):
    """Separate contexts (own lock folder, a blob store that is not a LocalBlobStore), one docstore: like
    Cloud Functions instances; every commit races, and every source must end up in the index."""
    n = 6
    evs = [bucket.upload(f"kb/doc{i}.txt", f"Document {i} is about topic{i} only.".encode()) for i in range(n)]
    ctxs = []
    for i in range(n):
        s = Settings(home=tmp_path / f"inst{i}")
        ctxs.append(StageContext(s, RemoteLikeStore(tmp_path / "blobs"), SQLiteDocStore(tmp_path / "d.sqlite3"),
                                 embedder=embedder))
    barrier = threading.Barrier(n)

    def slow_fetch(bucket_name, name, generation, dest):
        bucket.fetch(bucket_name, name, generation, dest)
        barrier.wait(timeout=30)  # everyone has read the collection before anyone commits

    outcomes, errors, conflicts = race(n, lambda i: handle_event(evs[i], ctx=ctxs[i], fetcher=slow_fetch)["outcome"])
    assert not errors, errors
    assert outcomes == ["ingested"] * n
    assert conflicts, "the commits did not race; the test proves nothing"
    expected = {f"gs://{BUCKET}/kb/doc{i}.txt" for i in range(n)}
    assert sources(ctxs[0], "kb") == expected
    assert {r["path"] for r in ctxs[0].docstore.list_files("kb")} == expected
    # and the same events redelivered concurrently change nothing
    v = version(ctxs[0], "kb")
    threads = [threading.Thread(target=lambda i=i: outcomes.append(handle_event(evs[i], ctx=ctxs[i])["outcome"]))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes[n:] == ["duplicate"] * n and version(ctxs[0], "kb") == v


def test_out_of_order_delete_then_finalize_of_the_same_generation(bucket, ectx):
    """The deleted event overtakes the finalize: the finalize finds that generation gone (stale)."""
    fin = bucket.upload("kb/a.md", SOLAR)
    dele = bucket.delete("kb/a.md")
    assert handle_event(dele)["outcome"] == "absent"
    assert handle_event(fin)["outcome"] == "stale"
    assert ectx.docstore.get_collection("kb") is None


def test_gcs_fetcher_downloads_under_the_objects_own_name_and_maps_404(tmp_path, monkeypatch):
    """The default fetcher (relayrag.backends.gcs through the real storage client) on gcp-storage-emulator."""
    from gcp_storage_emulator.server import create_server
    from google.cloud import storage

    from tests.e2e.emulated_cloud import free_port
    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
        monkeypatch.setattr(events, "_storage", None)
        client = storage.Client(project="p")
        client.create_bucket(BUCKET)
        blob = client.bucket(BUCKET).blob("kb/energy/solar.md")
        blob.upload_from_string(SOLAR)
        blob.reload()
        dest = tmp_path / "dl" / "solar.md"
        dest.parent.mkdir()
        events.gcs_fetcher(BUCKET, "kb/energy/solar.md", blob.generation, dest)
        assert dest.read_bytes() == SOLAR and [p.name for p in dest.parent.iterdir()] == ["solar.md"]
        with pytest.raises(ObjectGone):
            events.gcs_fetcher(BUCKET, "kb/energy/missing.md", 1, tmp_path / "dl" / "missing.md")
    finally:
        server.stop()
        monkeypatch.setattr(events, "_storage", None)


# -- the real PublisherClient against the gcloud SDK's Pub/Sub emulator -----------------------------------

@pytest.fixture(scope="module")
def pubsub_emulator_host():
    """host:port of a Pub/Sub emulator started once for this module (~2 s); skipped with the reason where
    the gcloud SDK, java or its pubsub-emulator component is missing."""
    from tests.emulators import pubsub_emulator, pubsub_emulator_missing
    why = pubsub_emulator_missing()
    if why:
        pytest.skip(f"Pub/Sub emulator unavailable: {why}")
    pytest.importorskip("google.cloud.pubsub_v1", reason="google-cloud-pubsub is not installed (dev/gcp extra)")
    with pubsub_emulator() as emu:
        yield emu["host"]


@pytest.fixture
def real_pubsub(pubsub_emulator_host, monkeypatch, ectx):
    """The entry point's default publisher (a PublisherClient built on first use) on the emulator, and a fresh
    topic (not created yet: the emulator keeps topics for its lifetime) set as `ectx`'s dead-letter topic.
    Yields (topic, subscription) paths; the test creates them with tests.emulators.pubsub_topic_with_subscription."""
    import uuid
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_emulator_host)
    events.set_publisher(None)
    suffix = uuid.uuid4().hex[:10]
    topic = f"projects/relayrag-test/topics/dead-letters-{suffix}"
    ectx.settings.dead_letter_topic = topic
    yield topic, f"projects/relayrag-test/subscriptions/dead-letters-{suffix}"
    events.set_publisher(None)  # the client cached by the entry point points at this emulator


def test_dead_letter_reaches_pubsub_once_through_the_real_publisher(client, bucket, ectx, real_pubsub):
    from tests.emulators import pubsub_topic_with_subscription, pull_messages
    events.set_publisher(None)  # `client` installed the recording double: use the real client instead
    topic, subscription = real_pubsub
    pubsub_topic_with_subscription(topic, subscription)
    ev = bucket.upload("kb/broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog", "application/pdf")
    assert post(client, ev).status_code == 200
    key = f"gs://{BUCKET}/kb/broken.pdf"
    got = pull_messages(subscription)
    assert len(got) == 1, got
    body = json.loads(got[0]["data"])
    assert got[0]["attributes"] == {"collection": "kb", "source": key, "kind": "unreadable"}
    assert body["path"] == key and body["generation"] == ev.data["generation"] and "corrupt" in body["error"]
    assert body["event"]["data"]["name"] == "kb/broken.pdf" and body["event"]["id"] == ev["id"]
    dl = ectx.docstore.get_dead_letter("kb", key)
    assert dl["published"] is True and dl["topic"] == topic
    assert post(client, ev).status_code == 200  # redelivery: already published
    assert pull_messages(subscription, timeout_s=2) == []


def test_publish_to_a_missing_topic_is_retried_until_the_topic_exists(bucket, ectx, real_pubsub):
    """NOT_FOUND from Pub/Sub propagates (Eventarc retries the event); once the topic exists the redelivery
    publishes the recorded dead letter exactly once."""
    from google.api_core.exceptions import NotFound

    from tests.emulators import pubsub_topic_with_subscription, pull_messages
    topic, subscription = real_pubsub
    ev = bucket.upload("kb/bad.pdf", b"not a pdf at all")
    with pytest.raises(NotFound):
        handle_event(ev)
    key = f"gs://{BUCKET}/kb/bad.pdf"
    assert ectx.docstore.get_dead_letter("kb", key)["published"] is False
    pubsub_topic_with_subscription(topic, subscription)
    assert handle_event(ev)["outcome"] == "dead_letter_duplicate"
    got = pull_messages(subscription)
    assert [(m["attributes"]["source"], json.loads(m["data"])["generation"]) for m in got] == \
        [(key, ev.data["generation"])]
    assert handle_event(ev)["outcome"] == "dead_letter_duplicate"
    assert pull_messages(subscription, timeout_s=2) == []
    assert ectx.docstore.get_dead_letter("kb", key)["published"] is True
