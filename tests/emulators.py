"""Cloud emulators on 127.0.0.1 for tests: the real Firestore and Pub/Sub emulators (gcloud SDK) and
gcp-storage-emulator.

Used as session fixtures by tests/unit/backends/conftest.py (Firestore) and tests/unit/ingest/test_events.py
(Pub/Sub); importable by other test folders (tests/e2e/emulated_cloud.py uses the `*_missing` checks).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

FIRESTORE_START_TIMEOUT_S = 90.0
PUBSUB_START_TIMEOUT_S = 60.0  # measured: ~2 s on a 2-core box


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gcloud_component_missing(component: str, apt_package: str, what: str) -> str | None:
    """Why the gcloud SDK emulator `component` (a folder under the SDK's platform/) cannot run here, or None."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return "gcloud (Google Cloud SDK) is not installed"
    if shutil.which("java") is None:
        return f"java (needed by the {what}) is not installed"
    sdk = Path(os.path.realpath(gcloud)).parent.parent
    candidates = [sdk / "platform" / component, Path("/usr/lib/google-cloud-sdk/platform") / component]
    if not any(c.is_dir() for c in candidates):
        return (f"the gcloud component {component} is not installed "
                f"(apt-get install {apt_package}, or gcloud components install {component})")
    return None


def firestore_emulator_missing() -> str | None:
    """Why the Firestore emulator cannot run here, or None if it can."""
    return _gcloud_component_missing("cloud-firestore-emulator", "google-cloud-cli-firestore-emulator",
                                     "Firestore emulator")


def pubsub_emulator_missing() -> str | None:
    """Why the Pub/Sub emulator cannot run here, or None if it can."""
    return _gcloud_component_missing("pubsub-emulator", "google-cloud-cli-pubsub-emulator", "Pub/Sub emulator")


@contextmanager
def firestore_emulator() -> Iterator[dict]:
    """Start `gcloud emulators firestore start` on a free port; yield {host, start_s}; kill it on exit."""
    with _gcloud_emulator(["emulators", "firestore", "start"], "the Firestore emulator",
                          FIRESTORE_START_TIMEOUT_S) as emu:
        yield emu


@contextmanager
def pubsub_emulator() -> Iterator[dict]:
    """Start `gcloud beta emulators pubsub start` on a free port; yield {host, start_s}; kill it on exit.
    Clients reach it with PUBSUB_EMULATOR_HOST=host (google-cloud-pubsub then uses an insecure channel and
    anonymous credentials); topics and subscriptions live in memory, under any project id."""
    with _gcloud_emulator(["beta", "emulators", "pubsub", "start"], "the Pub/Sub emulator",
                          PUBSUB_START_TIMEOUT_S) as emu:
        yield emu


@contextmanager
def _gcloud_emulator(args: list[str], what: str, timeout_s: float) -> Iterator[dict]:
    """Run `gcloud ARGS --host-port=127.0.0.1:PORT` in its own process group until GET / answers 200
    (both the Firestore and the Pub/Sub emulator answer "Ok" there); yield {host, start_s}; kill the group
    on exit. Raises RuntimeError if it exits or is not serving within `timeout_s` seconds."""
    port = free_port()
    host = f"127.0.0.1:{port}"
    log = open(os.devnull, "wb")
    t0 = time.perf_counter()
    proc = subprocess.Popen(["gcloud", *args, f"--host-port={host}", "--quiet"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = t0 + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with code {proc.returncode} before serving")
            try:
                with urllib.request.urlopen(f"http://{host}/", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{what} did not answer on {host} within {timeout_s:.0f} s")
            time.sleep(0.2)
        yield {"host": host, "start_s": time.perf_counter() - t0}
    finally:
        # gcloud -> shell script -> java all run in the process group this Popen created
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        log.close()


@contextmanager
def gcs_emulator(bucket: str = "relayrag-test") -> Iterator[dict]:
    """gcp-storage-emulator in a thread (in memory) with `bucket` created; yield {endpoint, bucket, server}."""
    from gcp_storage_emulator.server import create_server

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=bucket)
    server.start()
    try:
        yield {"endpoint": f"http://127.0.0.1:{port}", "bucket": bucket, "server": server}
    finally:
        server.stop()


def pubsub_topic_with_subscription(topic: str, subscription: str) -> None:
    """Create `topic` (projects/P/topics/T) and a pull `subscription` (projects/P/subscriptions/S) on it with
    the real google-cloud-pubsub admin clients (PUBSUB_EMULATOR_HOST must point at the emulator)."""
    from google.cloud import pubsub_v1
    pubsub_v1.PublisherClient().create_topic(name=topic)
    with pubsub_v1.SubscriberClient() as sub:
        sub.create_subscription(name=subscription, topic=topic, ack_deadline_seconds=60)


def pull_messages(subscription: str, timeout_s: float = 5.0) -> list[dict]:
    """Pull (synchronously) and acknowledge what `subscription` holds now: [{data: bytes, attributes: dict,
    message_id}]; [] when nothing arrives within `timeout_s` seconds (the emulator answers an empty pull,
    Pub/Sub itself may answer DEADLINE_EXCEEDED: both mean "no message")."""
    from google.api_core.exceptions import DeadlineExceeded
    from google.cloud import pubsub_v1
    with pubsub_v1.SubscriberClient() as sub:
        try:
            resp = sub.pull(subscription=subscription, max_messages=100, timeout=timeout_s)
        except DeadlineExceeded:
            return []
        got = [{"data": m.message.data, "attributes": dict(m.message.attributes),
                "message_id": m.message.message_id} for m in resp.received_messages]
        if resp.received_messages:
            sub.acknowledge(subscription=subscription, ack_ids=[m.ack_id for m in resp.received_messages])
    return got


STARTUP_TIMEOUT_S = 60.0  # a loaded 2-core CI machine starts functions-framework in 10-30 s


def wait_for_http(url: str, *, proc: subprocess.Popen | None = None, what: str = "server",
                  timeout_s: float = STARTUP_TIMEOUT_S) -> float:
    """Poll `url` until it answers any HTTP response (readiness, not a fixed sleep); returns the seconds it
    took. Raises RuntimeError naming `what` if `proc` exits first or nothing answers within `timeout_s`."""
    import httpx
    t0 = time.perf_counter()
    while True:
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr is not None else ""
            raise RuntimeError(f"{what} exited with code {proc.returncode} before serving: {str(err)[-2000:]}")
        try:
            httpx.get(url, timeout=2)
            return time.perf_counter() - t0
        except httpx.HTTPError:
            pass
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"{what} did not answer on {url} within {timeout_s:.0f} s")
        time.sleep(0.2)
