"""Uploads and deletes in the cloud mode (RELAYRAG_DOCUMENTS_BUCKET): files go to the documents bucket under
`<collection>/` and are indexed by GCS-triggered ingestion, which the page follows through the docstore.
Cloud Storage is gcp-storage-emulator on 127.0.0.1 with the real client; Eventarc is played by a thread
that turns bucket changes into the CloudEvents GCS sends and hands them to relayrag's `handle_event`."""

from __future__ import annotations

import threading
import time

import pytest

from tests.emulators import gcs_emulator
from tests.unit.dashboard.conftest import job_url, read_sse

BUCKET = "docs-bucket"


class Eventarc(threading.Thread):
    """Polls the bucket; each new object generation → a finalized event, each vanished object → deleted."""

    def __init__(self, client):
        super().__init__(daemon=True)
        self.client, self.stop, self.seen = client, threading.Event(), {}
        self.outcomes: list[dict] = []

    def run(self):
        from relayrag.ingest.events import DELETED, FINALIZED, handle_event
        while not self.stop.is_set():
            live = {b.name: int(b.generation) for b in self.client.list_blobs(BUCKET)}
            for name, gen in live.items():
                if self.seen.get(name) != gen:
                    self.seen[name] = gen
                    self.outcomes.append(handle_event(self._event(FINALIZED, name, gen)))
            for name in [n for n in self.seen if n not in live]:
                gen = self.seen.pop(name)
                self.outcomes.append(handle_event(self._event(DELETED, name, gen)))
            time.sleep(0.2)

    @staticmethod
    def _event(etype, name, gen):
        return {"type": etype, "source": f"//storage.googleapis.com/projects/_/buckets/{BUCKET}",
                "subject": f"objects/{name}", "id": f"{name}-{gen}-{etype[-8:]}",
                "data": {"bucket": BUCKET, "name": name, "generation": str(gen), "metageneration": "1"}}


@pytest.fixture
def cloud(home, monkeypatch):
    with gcs_emulator(BUCKET) as emu:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu["endpoint"])
        monkeypatch.setenv("RELAYRAG_DOCUMENTS_BUCKET", BUCKET)
        from relayrag.backends.gcs import storage_client
        client = storage_client("demo-relayrag")
        arc = Eventarc(client)
        arc.start()
        yield {"client": client, "eventarc": arc}
        arc.stop.set()
        arc.join(10)


def test_upload_goes_to_the_bucket_and_follows_gcs_triggered_ingestion(api, cloud, home):
    files = [("files", ("good.txt", b"The reactor coolant is heavy water, kept at 290 degrees.", "text/plain")),
             ("files", ("bad.pdf", b"%PDF-1.7 truncated", "application/pdf"))]
    r = api.post("/collections/plant/upload", files=files)
    assert r.status_code == 200, r.text
    events = read_sse(api, job_url(r.text))
    final = {e[1].split('data-file="')[1].split('"')[0]: e[1] for e in events if e[0] == "file" and "loading" not in e[1]}
    assert 'data-state="ingested"' in final["good.txt"] and "generation" in final["good.txt"]
    assert 'data-state="failed"' in final["bad.pdf"]
    names = sorted(b.name for b in cloud["client"].list_blobs(BUCKET))
    assert names == ["plant/bad.pdf", "plant/good.txt"]          # the collection's source area in the cloud
    assert not (home / "sources").exists()                       # nothing kept on the service's disk
    page = api.get("/collections/plant").text
    assert "gs://docs-bucket/plant/good.txt" in page and "bad.pdf" in page  # document + dead letter

    r = api.post("/collections/plant/delete", data={"path": "gs://docs-bucket/plant/good.txt"})
    assert r.status_code == 200, r.text
    assert "plant/good.txt" not in [b.name for b in cloud["client"].list_blobs(BUCKET)]
    assert "gs://docs-bucket/plant/good.txt" not in api.get("/collections/plant").text
    assert {o["outcome"] for o in cloud["eventarc"].outcomes} >= {"ingested", "dead_letter", "removed"}
