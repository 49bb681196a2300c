"""What a first `pulumi up` on a fresh project meets (issue 29, ../shared/reviews/gcp-desk-review-2026-12.md):
sizes Cloud Run accepts, creation order, identities that must exist before they are bound, the files the images
are built from, the Python the program runs on. Each test failed before its fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]'")
from relayrag_infra import catalog  # noqa: E402

from tests.infra.harness import PROJECT, config, deploy  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RUN = "gcp:cloudrunv2/service:Service"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")


# ------------------------------------------------------------------ B2: memory and CPU go together
@pytest.mark.parametrize("memory,cpu", [("4Gi", "1"), ("8Gi", "2"), ("16Gi", "4"), ("32Gi", "8"), ("512Mi", "1")])
def test_a_memory_override_brings_the_cpu_cloud_run_requires(memory, cpu):
    """https://cloud.google.com/run/docs/configuring/services/cpu: 1 vCPU up to 4 GiB, 2 vCPU up to 8 GiB,
    4 vCPU 2-16 GiB, 8 vCPU 4-32 GiB. The README's `retrieve: 8Gi` kept 1 vCPU, which Cloud Run rejects."""
    spec = config(memory={"retrieve": memory}).spec("retrieve")
    assert spec.memory == memory and spec.cpu == cpu


def test_the_deployed_function_gets_that_cpu():
    rec = deploy(config(stages=("retrieve",), memory={"retrieve": "8Gi"}))
    (fn,) = rec.of_type("gcp:cloudfunctionsv2/function:Function")
    svc = fn.inputs["serviceConfig"]
    assert (svc["availableMemory"], svc["availableCpu"]) == ("8Gi", "2")


def test_an_explicit_cpu_too_small_for_the_memory_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"8Gi with 1 vCPU .*relayrag:cpu"):
        config(memory={"retrieve": "8Gi"}, cpu={"retrieve": "1"})
    with pytest.raises(ValueError, match="4 vCPU allows 2-16 GiB"):
        config(memory={"retrieve": "1Gi"}, cpu={"retrieve": "4"})
    with pytest.raises(ValueError, match="32 GiB"):
        config(memory={"retrieve": "64Gi"})
    assert config(memory={"retrieve": "8Gi"}, cpu={"retrieve": "4"}).spec("retrieve").cpu == "4"


def test_every_catalog_size_is_a_pair_cloud_run_accepts():
    for spec in catalog.STAGES.values():
        spec.validate()
        assert float(spec.cpu) >= float(catalog.min_cpu_for(spec.memory)), spec.name


# ------------------------------------------------------------------ M3: stage timeout below the call timeout
def test_every_http_stage_answers_before_the_workflow_gives_up_on_the_call():
    """A stage whose timeout equals the workflow's call timeout (colpali_search: 300 s = 300 s) is cut off by the
    workflow first and the call retried into another cold instance (https://cloud.google.com/workflows/quotas)."""
    doc = yaml.safe_load((REPO / "workflows" / "rag.yaml").read_text(encoding="utf-8"))
    timeouts = {args.get("timeout") for _, _, args in catalog.http_calls(doc)}
    assert timeouts == {catalog.WORKFLOW_CALL_TIMEOUT_S}
    for name in catalog.HTTP_STAGES:
        assert catalog.STAGES[name].timeout_s < catalog.WORKFLOW_CALL_TIMEOUT_S, name
    with pytest.raises(ValueError, match="below the workflow"):
        config(timeouts={"generate": 300})


# ------------------------------------------------------------------ M1: prefix and README stage list
def test_a_prefix_too_short_for_a_service_account_id_is_refused():
    """Service account ids are 6-30 characters (https://cloud.google.com/iam/docs/service-accounts-create);
    prefix `a` made `a-sql` (5)."""
    for prefix in ("a", "ab"):
        with pytest.raises(ValueError, match="relayrag:prefix"):
            config(prefix=prefix)
    from relayrag_infra.stack import SHORT_NAMES
    shortest = min(len(SHORT_NAMES.get(s, s)) for s in (*catalog.ALL_STAGES, "mcp", "build", "workflow"))
    assert len("abc") + 1 + shortest >= 6


def test_the_readme_lists_every_stage():
    text = (REPO / "infra" / "README.md").read_text(encoding="utf-8")
    intro = text.split("## Prerequisites", 1)[0]
    listed = set(re.findall(r"`([a-z_]+)`", intro))
    assert set(catalog.HTTP_STAGES) <= listed, sorted(set(catalog.HTTP_STAGES) - listed)
    assert "all nine" not in text


# ------------------------------------------------------------------ B5: Python 3.10
def test_the_pulumi_venv_installs_tomli_on_python_3_10():
    """catalog.pyproject_pins imports tomli below 3.11; neither pulumi nor pulumi-gcp depends on it, and Pulumi
    builds its venv from infra/requirements.txt only."""
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    reqs = [Requirement(line.split("#", 1)[0]) for line in
            (REPO / "infra" / "requirements.txt").read_text(encoding="utf-8").splitlines() if line.split("#", 1)[0].strip()]
    env310 = {**default_environment(), "python_version": "3.10", "python_full_version": "3.10.14"}
    assert any(r.name == "tomli" and (r.marker is None or r.marker.evaluate(env310)) for r in reqs)


# ------------------------------------------------------------------ B1 / C8: colpali_search's requirements
@pytest.mark.parametrize("embedder", catalog.EMBEDDERS)
def test_colpali_search_installs_cpu_torch_from_its_own_index_and_a_tokenizers_transformers_accepts(embedder):
    """PyPI's Linux torch is the CUDA build (nvidia-* and triton wheels, several GB) in a function with no GPU;
    with `embedder: minilm-int8` the bundle pinned tokenizers 0.23.3 next to transformers 4.47.1, which needs
    tokenizers>=0.21,<0.22 (pip: ResolutionImpossible). tests/infra/test_deploy_rehearsal.py resolves it."""
    reqs = catalog.stage_requirements("colpali_search", {"llm": "vertex", "embedder": embedder},
                                      catalog.locked_pins())
    assert reqs[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert "torch==2.13.0+cpu" in reqs
    tok = [r for r in reqs if r.startswith("tokenizers")]
    if embedder == "minilm-int8":
        from packaging.specifiers import SpecifierSet
        assert tok and SpecifierSet(">=0.21,<0.22").contains(tok[0].split("==")[1])
    # no other stage gets the extra index
    for stage in catalog.ALL_STAGES:
        if stage != "colpali_search":
            assert not any(r.startswith("-") for r in catalog.stage_requirements(stage, {"embedder": embedder}))


def test_the_workflow_is_created_without_colpali_search_and_visual_questions_take_the_text_path():
    """colpali_search (16 GiB, torch) is optional: leaving it out of relayrag:stages still creates the workflow,
    whose URLs then lack it, and a visual question runs hyde -> retrieve -> ... instead of failing on a missing
    key."""
    from relayrag.engine.interpreter import Interpreter, load_workflow
    stages = tuple(s for s in catalog.HTTP_STAGES if s != "colpali_search")
    rec = deploy(config(stages=stages))
    (wf,) = rec.of_type("gcp:workflows/workflow:Workflow")
    invoked = {r.inputs["name"] for r in rec.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember")}
    assert "relayrag-colpali-search" not in invoked
    routes = {"classify": "visual", "grade": "pass", "hallucination_check": "grounded"}
    seen = []

    def transport(method, url, body, timeout):
        stage = url.removeprefix("local://")
        seen.append(stage)
        return 200, {"run_id": body["run_id"], "route": routes.get(stage, "ok"), "page_vectors": 1}

    urls = {s: f"local://{s}" for s in stages}
    Interpreter(load_workflow(wf.inputs["sourceContents"]), transport, sleep=lambda s: None).run(
        {"question": "what does figure 2 show", "collection": "c", "run_id": "r1"},
        env={"RELAYRAG_STAGE_URLS": json.dumps(urls)})
    assert "colpali_search" not in seen and seen[:3] == ["classify", "hyde", "retrieve"] and "generate" in seen
    # with the stage deployed, the same question goes to page-image search first
    seen.clear()
    urls["colpali_search"] = "local://colpali_search"
    routes["colpali_search"] = "pages"
    Interpreter(load_workflow(wf.inputs["sourceContents"]), transport, sleep=lambda s: None).run(
        {"question": "what does figure 2 show", "collection": "c", "run_id": "r1"},
        env={"RELAYRAG_STAGE_URLS": json.dumps(urls)})
    assert seen[:2] == ["classify", "colpali_search"]


# ------------------------------------------------------------------ B4: services wait for what they need
@pytest.fixture(scope="module")
def services():
    return deploy(config(dashboard=True, dashboard_image="img:1", dashboard_members=("user:a@example.com",),
                         dashboard_tokens="t", assistant=True, assistant_image="img:2",
                         assistant_tokens="a", mcp_tokens="m", assistant_threads="postgres"))


def test_each_cloud_run_service_depends_on_its_secret_accessor_bindings(services):
    """Cloud Run checks the revision identity's access to each referenced secret when it creates the revision
    ("Permission denied on secret ... for Revision service account";
    https://cloud.google.com/run/docs/configuring/services/secrets, terraform-docs-samples#168): the service
    must `depends_on` the SecretIamMember, not only the secret version."""
    accessors = services.of_type("gcp:secretmanager/secretIamMember:SecretIamMember")
    sa_of = {"dashboard": "relayrag-dashboard@", "mcp": "relayrag-mcp@", "assistant": "relayrag-assistant@"}
    for svc_name, prefix in sa_of.items():
        svc = services.one(RUN, svc_name)
        mine = {a.name for a in accessors if a.inputs["member"].startswith(f"serviceAccount:{prefix}")}
        assert mine and mine <= services.deps(RUN, svc_name), (svc_name, mine, services.deps(RUN, svc_name))
        assert svc.inputs["template"]["serviceAccount"].startswith(prefix)


def test_the_assistant_starts_only_after_its_gateway_grant_and_database(services):
    """Its startup opens the MCP session (run.invoker on the gateway) and the Postgres checkpointer (the database,
    its IAM user, the login grants, the subnet its traffic to the private IP leaves through); a failed startup
    probe fails the revision and `pulumi up`."""
    deps = services.deps(RUN, "assistant")
    assert {"mcp-invoker-assistant", "threads-db", "threads-iam-user", "assistant-threads-cloudsql-instanceUser",
            "assistant-threads-cloudsql-client", "threads-run-subnet"} <= deps


# ------------------------------------------------------------------ B7: the IAP service agent exists first
def test_iap_mode_creates_the_iap_service_agent_before_binding_it():
    """IAP's service agent does not exist on a fresh project until created (cloud-foundation-fabric#1381, the same
    failure Eventarc's agent had); https://cloud.google.com/run/docs/securing/identity-aware-proxy-cloud-run
    grants it run.invoker."""
    rec = deploy(config(dashboard=True, dashboard_image="img:1", dashboard_access="iap",
                        dashboard_members=("user:a@example.com",), dashboard_tokens="t"))
    agent = rec.one("gcp:projects/serviceIdentity:ServiceIdentity", "iap-agent")
    assert agent.inputs["service"] == "iap.googleapis.com"
    binding = rec.one("gcp:cloudrunv2/serviceIamMember:ServiceIamMember", "dashboard-invoker-iap-agent")
    assert binding.inputs["member"] == "serviceAccount:service-123456789@gcp-sa-iap.iam.gserviceaccount.com"
    assert "iap-agent" in rec.deps("gcp:cloudrunv2/serviceIamMember:ServiceIamMember", "dashboard-invoker-iap-agent")


def test_iam_mode_lets_the_local_proxy_origin_in(services):
    envs = {e["name"]: e.get("value") for e in services.one(RUN, "dashboard").inputs["template"]["containers"][0]["envs"]}
    assert envs["RELAYRAG_DASHBOARD_ORIGINS"] == "http://127.0.0.1:8780,http://localhost:8780"


# ------------------------------------------------------------------ B6: images build as the stack's build account
@pytest.mark.parametrize("image", ["dashboard", "assistant"])
def test_image_builds_name_the_build_service_account_and_a_logs_destination(image):
    """Cloud Build's default account is the Compute default account since 2024 and lacks Artifact Registry,
    Logging and Storage access on new organisations
    (https://cloud.google.com/build/docs/cloud-build-service-account-updates); a user-specified account needs
    `options.logging` (https://cloud.google.com/build/docs/build-config-file-schema)."""
    text = (REPO / "infra" / image / "cloudbuild.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text)["options"]["logging"] == "CLOUD_LOGGING_ONLY"
    assert "--service-account" in text and "build_service_account" in text
    readme = (REPO / "infra" / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(f"--config infra/{image}/cloudbuild.yaml") - 200:][:600]
    assert "--service-account" in block, block


def test_the_build_service_account_is_a_stack_output(full):
    build = next(r for r in full.of_type("gcp:serviceaccount/account:Account") if r.name == "sa-build")
    assert full.deployment.build_service_account is not None
    assert build.outputs["name"] == f"projects/{PROJECT}/serviceAccounts/relayrag-build@{PROJECT}.iam.gserviceaccount.com"


def test_the_readme_lists_the_operator_roles_a_first_deploy_needs():
    text = " ".join((REPO / "infra" / "README.md").read_text(encoding="utf-8").split())
    for role in ("Cloud Build Editor", "Cloud Run Admin", "Secret Manager Admin", "Cloud SQL Admin",
                 "Artifact Registry Administrator", "IAP Policy Admin", "Service Account User"):
        assert role in text, role


# ------------------------------------------------------------------ C4: images are built with setup.py
@pytest.mark.parametrize("image", ["dashboard", "assistant"])
def test_images_copy_what_the_package_build_reads(image):
    """setup.py's build_py hook copies workflows/*.yaml into relayrag/workflows/; without it the installed
    package has no rag.yaml and the gateway offers no `rag` tool. tests/infra/test_deploy_rehearsal.py builds
    the wheel from exactly this file set."""
    from tests.infra.rehearsal_images import dockerfile_copy_set
    copied = dockerfile_copy_set(REPO / "infra" / image / "Dockerfile")
    assert {"setup.py", "pyproject.toml", "README.md", "functions", "workflows", "MANIFEST.in"} <= copied
