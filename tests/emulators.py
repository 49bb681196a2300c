"""Cloud emulators on 127.0.0.1 for tests: the real Firestore emulator (gcloud SDK) and gcp-storage-emulator.

Used as session fixtures by tests/unit/backends/conftest.py; importable by other test folders.
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def firestore_emulator_missing() -> str | None:
    """Why the Firestore emulator cannot run here, or None if it can."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return "gcloud (Google Cloud SDK) is not installed"
    if shutil.which("java") is None:
        return "java (needed by the Firestore emulator) is not installed"
    sdk = Path(os.path.realpath(gcloud)).parent.parent
    candidates = [sdk / "platform" / "cloud-firestore-emulator", Path("/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator")]
    if not any(c.is_dir() for c in candidates):
        return ("the gcloud component cloud-firestore-emulator is not installed "
                "(apt-get install google-cloud-cli-firestore-emulator, or gcloud components install "
                "cloud-firestore-emulator)")
    return None


@contextmanager
def firestore_emulator() -> Iterator[dict]:
    """Start `gcloud emulators firestore start` on a free port; yield {host, start_s}; kill it on exit."""
    port = free_port()
    host = f"127.0.0.1:{port}"
    log = open(os.devnull, "wb")
    t0 = time.perf_counter()
    proc = subprocess.Popen(["gcloud", "emulators", "firestore", "start", f"--host-port={host}", "--quiet"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = t0 + FIRESTORE_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the Firestore emulator exited with code {proc.returncode} before serving")
            try:
                with urllib.request.urlopen(f"http://{host}/", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the Firestore emulator did not answer on {host} within "
                                   f"{FIRESTORE_START_TIMEOUT_S:.0f} s")
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
