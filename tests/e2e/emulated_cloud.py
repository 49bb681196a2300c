"""The emulated cloud for tests/e2e/test_cloud_emulated.py (and `nox -s cloud_emulated`): every process on
127.0.0.1, real client libraries, real HTTP / gRPC hops.

- Firestore: the real emulator from the gcloud SDK (`gcloud emulators firestore start`, Java 17), its own
  process group so the Java child dies with it.
- Pub/Sub: the real emulator from the gcloud SDK (`gcloud beta emulators pubsub start`, ~2 s, started
  alongside Firestore), with the dead-letter topic and a pull subscription made by the real client; the
  `ingest_object` server publishes there (RELAYRAG_DEAD_LETTER_TOPIC, PUBSUB_EMULATOR_HOST). Without the
  pubsub-emulator component the rest still runs and `pubsub_missing` says why.
- Cloud Storage: `gcp-storage-emulator` in a thread of the test process; buckets made with the real client.
  It emits no notifications, so tests send the CloudEvents GCS would send.
- Functions: one `functions-framework` process per stage target and one for `ingest_object`, with
  RELAYRAG_BLOBSTORE=gcs / RELAYRAG_DOCSTORE=firestore pointing at the emulators.
- Workflows: workflows-emulator executing workflows/rag.yaml, behind the Executions API (gRPC) by
  tests/e2e/workflows_emulator_server.py, in the emulator's own venv (it pins fastapi<0.112, which
  conflicts with fastmcp's starlette): RELAYRAG_WORKFLOWS_EMULATOR_VENV, else `.nox/workflows-emulator-1.10.0`,
  created on first use with pip (about 40 s once).

`Unavailable` says why a component cannot run here (the test skips with that reason).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS_EMULATOR = "workflows-emulator==1.10.0"
EMULATOR_VENV = Path(os.environ.get("RELAYRAG_WORKFLOWS_EMULATOR_VENV") or REPO / ".nox" / "workflows-emulator-1.10.0")
STAGES = ["classify", "hyde", "retrieve", "colpali_search", "rerank", "grade", "generate", "hallucination_check", "sql"]
PROJECT = "relayrag-emulated"
DOCS_BUCKET = "relayrag-documents"
INDEX_BUCKET = "relayrag-index"
DEAD_LETTER_TOPIC = f"projects/{PROJECT}/topics/relayrag-ingest-dead-letters"
DEAD_LETTER_SUBSCRIPTION = f"projects/{PROJECT}/subscriptions/relayrag-ingest-dead-letters-test"


class Unavailable(Exception):
    """A component of the emulated cloud cannot run on this machine (the message says which and why)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check, what: str, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise RuntimeError(f"{what} exited with {proc.returncode} before it was ready:\n{tail}")
        try:
            if check():
                return
        except (OSError, httpx.HTTPError):
            pass
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s:\n{tail}")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def emulator_python() -> Path:
    """The workflows-emulator venv's python, created (pip) on first use. Raises Unavailable if pip fails."""
    py = EMULATOR_VENV / "bin" / "python"
    marker = EMULATOR_VENV / ".relayrag-ready"
    if marker.exists() and py.exists():
        return py
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(EMULATOR_VENV)], check=True,
                       capture_output=True, timeout=120)
        subprocess.run([str(py), "-m", "pip", "install", "-q", WORKFLOWS_EMULATOR, "google-cloud-workflows>=1.14"],
                       check=True, capture_output=True, text=True, timeout=600)
    except subprocess.CalledProcessError as exc:
        raise Unavailable(f"could not install {WORKFLOWS_EMULATOR} into {EMULATOR_VENV}: "
                          f"{(exc.stderr or exc.stdout or '')[-500:]}") from exc
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(f"installing {WORKFLOWS_EMULATOR} into {EMULATOR_VENV} timed out") from exc
    marker.write_text(WORKFLOWS_EMULATOR + "\n")
    return py


@dataclass
class EmulatedCloud:
    workdir: Path
    env: dict = field(default_factory=dict)            # what every relayrag process gets
    stage_urls: dict = field(default_factory=dict)
    ingest_url: str = ""
    executions_target: str = ""                        # host:port of the Executions API shim
    procs: list = field(default_factory=list)
    storage_server: object = None
    pubsub_missing: str | None = None                  # why there is no Pub/Sub emulator (None: it runs)

    @property
    def workflow(self) -> str:
        return f"projects/{PROJECT}/locations/us-central1/workflows/relayrag-rag"

    # -- clients the test uses ------------------------------------------------------------------------
    def storage(self):
        from google.cloud import storage
        return storage.Client(project=PROJECT)

    def executions_client(self):
        import grpc
        from google.cloud.workflows.executions_v1 import ExecutionsClient
        from google.cloud.workflows.executions_v1.services.executions.transports import ExecutionsGrpcTransport
        return ExecutionsClient(transport=ExecutionsGrpcTransport(channel=grpc.insecure_channel(self.executions_target)))

    def functions_home(self) -> Path:
        """The RELAYRAG_HOME every function process shares here (one machine; a deployed function's is its own
        /tmp/relayrag)."""
        return Path(self.env["RELAYRAG_HOME"])

    def context(self):
        """A StageContext in this process with the cloud settings (GCS + Firestore on the emulators)."""
        from relayrag.context import StageContext, build_blobstore, build_docstore
        from relayrag.settings import Settings
        s = Settings(home=self.workdir / "client-home", blobstore="gcs", docstore="firestore", gcp_project=PROJECT,
                     gcs_bucket=INDEX_BUCKET, firestore_prefix=self.env["RELAYRAG_FIRESTORE_PREFIX"],
                     workflow=self.workflow)
        return StageContext(s, build_blobstore(s), build_docstore(s))

    # -- processes ------------------------------------------------------------------------------------
    def _spawn(self, name: str, cmd: list[str], env: dict, cwd: str | None = None) -> tuple[subprocess.Popen, Path]:
        """Start a process in its own process group (functions-framework forks gunicorn workers, gcloud a
        JVM), logging to WORKDIR/NAME.log; in `cwd` (default: the repository)."""
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd or REPO,
                                    start_new_session=True)
        self.procs.append((name, proc))
        return proc, log

    def stop(self) -> None:
        """Kill every process group at once: all state is in memory and thrown away, so nothing needs a
        graceful shutdown (a JVM or a gunicorn worker busy in onnxruntime can take seconds to honour SIGTERM)."""
        for _name, proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        for _name, proc in self.procs:
            proc.wait(timeout=10)
        self.procs.clear()
        if self.storage_server is not None:
            self.storage_server.stop()
            self.storage_server = None

    def log_tail(self, name: str, chars: int = 3000) -> str:
        p = self.workdir / f"{name}.log"
        return p.read_text(errors="replace")[-chars:] if p.exists() else ""


def check_components() -> None:
    """Raise Unavailable naming what is missing (before anything is started)."""
    if shutil.which("gcloud") is None:
        raise Unavailable("gcloud (Google Cloud SDK) is not installed: the Firestore emulator ships with it")
    if shutil.which("java") is None:
        raise Unavailable("java is not installed: the Firestore emulator needs Java 17+")
    try:
        import gcp_storage_emulator  # noqa: F401
        import google.cloud.firestore  # noqa: F401
        import google.cloud.storage  # noqa: F401
        import google.cloud.workflows  # noqa: F401
    except ImportError as exc:
        raise Unavailable(f"{exc.name} is not installed: pip install -e '.[dev,gcp]'") from exc


@contextlib.contextmanager
def emulated_cloud(workdir: Path) -> Iterator[EmulatedCloud]:
    """Start everything (about 10 s once the emulator venv exists), yield, stop everything."""
    check_components()
    py_emulator = emulator_python()
    cloud = EmulatedCloud(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        # Firestore (real emulator)
        fs_port = free_port()
        fs, fs_log = cloud._spawn("firestore", ["gcloud", "emulators", "firestore", "start",
                                                f"--host-port=127.0.0.1:{fs_port}"], dict(os.environ))
        # Pub/Sub (real emulator, starting meanwhile)
        from tests.emulators import pubsub_emulator_missing
        cloud.pubsub_missing = pubsub_emulator_missing()
        try:
            import google.cloud.pubsub_v1  # noqa: F401
        except ImportError:
            cloud.pubsub_missing = (cloud.pubsub_missing
                                    or "google-cloud-pubsub is not installed: pip install -e '.[dev]'")
        ps_port = free_port()
        if cloud.pubsub_missing is None:
            ps, ps_log = cloud._spawn("pubsub", ["gcloud", "beta", "emulators", "pubsub", "start",
                                                 f"--host-port=127.0.0.1:{ps_port}", "--quiet"], dict(os.environ))
        # Cloud Storage (gcp-storage-emulator, in a thread here)
        from gcp_storage_emulator.server import create_server
        gcs_port = free_port()
        cloud.storage_server = create_server("127.0.0.1", gcs_port, in_memory=True)
        cloud.storage_server.start()
        os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{gcs_port}"
        os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{fs_port}"
        client = cloud.storage()
        for b in (DOCS_BUCKET, INDEX_BUCKET):
            client.create_bucket(b)

        cloud.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("RELAYRAG_")},
            "RELAYRAG_HOME": str(workdir / "functions-home"),
            "RELAYRAG_BLOBSTORE": "gcs", "RELAYRAG_GCS_BUCKET": INDEX_BUCKET,
            "RELAYRAG_DOCSTORE": "firestore", "RELAYRAG_GCP_PROJECT": PROJECT,
            "RELAYRAG_FIRESTORE_PREFIX": f"e2e{uuid.uuid4().hex[:8]}",
            "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{gcs_port}", "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{fs_port}",
            "GOOGLE_CLOUD_PROJECT": PROJECT, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
        }
        if cloud.pubsub_missing is None:
            cloud.env.update(PUBSUB_EMULATOR_HOST=f"127.0.0.1:{ps_port}", RELAYRAG_DEAD_LETTER_TOPIC=DEAD_LETTER_TOPIC)
        ff = str(Path(sys.executable).parent / "functions-framework")
        # nox -s deploy_rehearsal: each target runs from its own installed upload bundle (tests/infra/rehearsal.py)
        # with nothing of this environment on its path
        bundles = json.loads(Path(os.environ["RELAYRAG_REHEARSAL_FUNCTIONS"]).read_text(encoding="utf-8")) \
            if os.environ.get("RELAYRAG_REHEARSAL_FUNCTIONS") else {}
        ports = {}
        for target in [*STAGES, "ingest_object"]:
            ports[target] = port = free_port()
            own = bundles.get(target)
            cmd = [own["bin"] if own else ff, "--source", own["source"] if own else str(REPO / "functions" / "main.py"),
                   "--target", target, "--host", "127.0.0.1", "--port", str(port)]
            if target == "ingest_object":
                cmd += ["--signature-type", "cloudevent"]
            env = cloud.env if not own else {k: v for k, v in cloud.env.items()
                                             if not k.startswith(("PYTHONPATH", "VIRTUAL_ENV"))}
            cloud._spawn(f"ff-{target}", cmd, env, cwd=str(Path(own["source"]).parent) if own else None)
        cloud.stage_urls = {s: f"http://127.0.0.1:{ports[s]}/" for s in STAGES}
        cloud.ingest_url = f"http://127.0.0.1:{ports['ingest_object']}/"

        # Workflows: workflows-emulator behind the Executions API, with the deployment's stage URLs
        wf_port = free_port()
        wf_env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RELAYRAG_", "PYTHON"))},
                  "RELAYRAG_STAGE_URLS": json.dumps(cloud.stage_urls)}
        wf, wf_log = cloud._spawn("workflows-emulator", [str(py_emulator), str(REPO / "tests" / "e2e" /
                                  "workflows_emulator_server.py"), "--source", str(REPO / "workflows" / "rag.yaml"),
                                  "--port", str(wf_port)], wf_env)
        cloud.executions_target = f"127.0.0.1:{wf_port}"

        wait_for(lambda: httpx.get(f"http://127.0.0.1:{fs_port}/", timeout=1).status_code == 200,
                 "Firestore emulator", 60, fs, fs_log)
        if cloud.pubsub_missing is None:
            wait_for(lambda: httpx.get(f"http://127.0.0.1:{ps_port}/", timeout=1).status_code == 200,
                     "Pub/Sub emulator", 60, ps, ps_log)
            from tests.emulators import pubsub_topic_with_subscription
            os.environ["PUBSUB_EMULATOR_HOST"] = f"127.0.0.1:{ps_port}"
            pubsub_topic_with_subscription(DEAD_LETTER_TOPIC, DEAD_LETTER_SUBSCRIPTION)
        for name, proc in cloud.procs:
            if name.startswith("ff-"):
                port = ports[name[3:]]
                wait_for(lambda p=port: port_open(p), f"functions-framework {name[3:]}", 60, proc,
                         workdir / f"{name}.log")
        wait_for(lambda: port_open(wf_port), "workflows-emulator Executions API", 60, wf, wf_log)
        yield cloud
    finally:
        cloud.stop()
        for k in ("STORAGE_EMULATOR_HOST", "FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST"):
            os.environ.pop(k, None)


def storage_event(etype: str, blob, *, event_id: str | None = None):
    """The CloudEvent Eventarc delivers for a Cloud Storage object (built from the object's metadata)."""
    from cloudevents.http import CloudEvent
    return CloudEvent({"type": etype, "source": f"//storage.googleapis.com/projects/_/buckets/{blob.bucket.name}",
                       "subject": f"objects/{blob.name}", "id": event_id or uuid.uuid4().hex},
                      {"bucket": blob.bucket.name, "name": blob.name, "generation": str(blob.generation),
                       "metageneration": str(blob.metageneration or 1), "size": str(blob.size or 0),
                       "contentType": blob.content_type, "md5Hash": blob.md5_hash,
                       **({"metadata": dict(blob.metadata)} if blob.metadata else {})})


def post_event(url: str, event) -> httpx.Response:
    from cloudevents.conversion import to_binary
    headers, body = to_binary(event)
    return httpx.post(url, headers=headers, content=body, timeout=120)
