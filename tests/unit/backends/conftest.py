"""Session fixtures for the cloud backends: the real Firestore emulator and gcp-storage-emulator."""

from __future__ import annotations

import os
import sys
import time

import pytest

from tests.emulators import firestore_emulator, firestore_emulator_missing, gcs_emulator


@pytest.fixture(scope="session")
def firestore_emulator_host():
    """host:port of a Firestore emulator started once per session (FIRESTORE_EMULATOR_HOST is set while it
    runs); skipped with the reason where the gcloud SDK, java or the emulator component is missing."""
    why = firestore_emulator_missing()
    if why:
        pytest.skip(f"Firestore emulator unavailable: {why}")
    old = os.environ.get("FIRESTORE_EMULATOR_HOST")
    t0 = time.perf_counter()
    with firestore_emulator() as emu:
        os.environ["FIRESTORE_EMULATOR_HOST"] = emu["host"]
        print(f"\n[firestore emulator up on {emu['host']} in {emu['start_s']:.1f} s]", file=sys.stderr)
        try:
            yield emu["host"]
        finally:
            if old is None:
                os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
            else:
                os.environ["FIRESTORE_EMULATOR_HOST"] = old
    print(f"\n[firestore emulator session: {time.perf_counter() - t0:.1f} s]", file=sys.stderr)


@pytest.fixture(scope="session")
def firestore_emulator_client(firestore_emulator_host):
    from google.cloud import firestore
    return firestore.Client(project="demo-relayrag")


@pytest.fixture(scope="session")
def gcs_server():
    """gcp-storage-emulator on 127.0.0.1 (in memory, one bucket); STORAGE_EMULATOR_HOST set while it runs."""
    old = os.environ.get("STORAGE_EMULATOR_HOST")
    with gcs_emulator("relayrag-test") as emu:
        os.environ["STORAGE_EMULATOR_HOST"] = emu["endpoint"]
        try:
            yield emu
        finally:
            if old is None:
                os.environ.pop("STORAGE_EMULATOR_HOST", None)
            else:
                os.environ["STORAGE_EMULATOR_HOST"] = old
