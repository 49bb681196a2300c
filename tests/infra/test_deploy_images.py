"""Deploy-time cost items of issue 29 (../shared/reviews/gcp-desk-review-2026-12.md C8): where the functions'
images go and how long they stay, what a code change rebuilds, and colpali_search on an optional L4 GPU.
Each test failed before its fix."""

from __future__ import annotations

import pytest

pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]'")
from relayrag_infra import catalog  # noqa: E402
from relayrag_infra import config as stack_config  # noqa: E402

from tests.infra.harness import PROJECT, config, deploy  # noqa: E402

FN = "gcp:cloudfunctionsv2/function:Function"
REPO_T = "gcp:artifactregistry/repository:Repository"
REPO_IAM = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")


# ------------------------------------------------------------------ function images: own repository, cleaned up
def test_every_function_builds_into_a_repository_with_a_cleanup_policy(full):
    """2nd gen functions push their image to `gcf-artifacts` unless the build config names a user-managed
    Artifact Registry repository (`docker_repository`: https://cloud.google.com/functions/docs/building#image_registry);
    gcf-artifacts has no cleanup policy, so every deploy's images stayed and were billed. Cleanup policies:
    https://cloud.google.com/artifact-registry/docs/repositories/cleanup-policy (keep wins over delete)."""
    repo = full.one(REPO_T, "function-images")
    assert repo.inputs["format"] == "DOCKER" and repo.inputs["location"] == "us-central1"
    assert repo.inputs["repositoryId"] == "relayrag-functions"
    assert repo.inputs.get("cleanupPolicyDryRun") is False
    policies = {p["id"]: p for p in repo.inputs["cleanupPolicies"]}
    assert policies["keep-newest"]["action"] == "KEEP"
    assert policies["keep-newest"]["mostRecentVersions"]["keepCount"] == 5
    assert policies["delete-old"]["action"] == "DELETE"
    assert policies["delete-old"]["condition"] == {"tagState": "ANY", "olderThan": f"{30 * 86400}s"}
    path = f"projects/{PROJECT}/locations/us-central1/repositories/relayrag-functions"
    fns = full.of_type(FN)
    assert fns and all(f.inputs["buildConfig"].get("dockerRepository") == path for f in fns), \
        {f.name: f.inputs["buildConfig"].get("dockerRepository") for f in fns}


def test_the_build_identity_may_write_to_that_repository_and_functions_wait_for_it(full):
    (grant,) = [g for g in full.of_type(REPO_IAM) if g.inputs["repository"] == "relayrag-functions"]
    assert grant.inputs["role"] == "roles/artifactregistry.writer"
    assert grant.inputs["member"] == f"serviceAccount:relayrag-build@{PROJECT}.iam.gserviceaccount.com"
    for fn in full.of_type(FN):
        assert grant.name in full.deps(FN, fn.name), fn.name


def test_keep_count_and_age_are_stack_config():
    rec = deploy(config(stages=("classify",), function_images_keep=2, function_images_max_age_days=7))
    policies = {p["id"]: p for p in rec.one(REPO_T, "function-images").inputs["cleanupPolicies"]}
    assert policies["keep-newest"]["mostRecentVersions"]["keepCount"] == 2
    assert policies["delete-old"]["condition"]["olderThan"] == f"{7 * 86400}s"

    class Cfg(dict):
        def get_object(self, key):
            return None

    cfg = stack_config.config_from_pulumi(Cfg(project=PROJECT, region="us-central1", functionImagesKeep="3",
                                         functionImagesMaxAgeDays="14"), Cfg())
    assert (cfg.function_images_keep, cfg.function_images_max_age_days) == (3, 14)
    with pytest.raises(ValueError, match="functionImagesKeep"):
        config(function_images_keep=0)
    with pytest.raises(ValueError, match="functionImagesMaxAgeDays"):
        stack_config.config_from_pulumi(Cfg(project=PROJECT, region="us-central1", functionImagesMaxAgeDays="soon"),
                                   Cfg())


# ------------------------------------------------------------------ colpali_search on an optional L4 GPU
RUN = "gcp:cloudrunv2/service:Service"
RUN_IAM = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
WF = "gcp:workflows/workflow:Workflow"


@pytest.fixture(scope="module")
def gpu():
    return deploy(config(colpali_gpu=True))


def _stage_urls(rec) -> dict:
    import json
    (wf,) = rec.of_type(WF)
    return json.loads(wf.inputs["userEnvVars"]["RELAYRAG_STAGE_URLS"])


def test_colpali_gpu_deploys_colpali_search_as_an_l4_cloud_run_service_from_the_function_source(gpu):
    """Cloud Functions have no GPU; a Cloud Run service does: one NVIDIA L4 per instance
    (`node_selector.accelerator = nvidia-l4`, `nvidia.com/gpu: 1`), at least 4 vCPU and 16 GiB, instance-based
    billing, zonal redundancy optional (https://cloud.google.com/run/docs/configuring/services/gpu). Built from
    the same zip as the function by Cloud Run's function build (`build_config`: source, function target, base
    image), as the build identity, into the functions' image repository."""
    assert "colpali_search" not in {f.name.removeprefix("fn-") for f in gpu.of_type(FN)}
    svc = gpu.one(RUN, "colpali-gpu")
    tpl = svc.inputs["template"]
    assert tpl["nodeSelector"] == {"accelerator": "nvidia-l4"}
    assert tpl["gpuZonalRedundancyDisabled"] is True
    (ctr,) = tpl["containers"]
    limits = ctr["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "1"
    assert float(limits["cpu"]) >= 4 and catalog.memory_mib(limits["memory"]) >= 16 * 1024
    assert ctr["resources"]["cpuIdle"] is False
    assert tpl["scaling"]["minInstanceCount"] == 0 and svc.inputs["scaling"]["minInstanceCount"] == 0
    assert tpl["serviceAccount"] == f"relayrag-colpali-search@{PROJECT}.iam.gserviceaccount.com"
    assert int(tpl["timeout"].rstrip("s")) < catalog.WORKFLOW_CALL_TIMEOUT_S
    env = {e["name"]: e["value"] for e in ctr["envs"]}
    assert env["RELAYRAG_COLPALI_MODEL"] == "vidore/colqwen2-v1.0" and env["RELAYRAG_BLOBSTORE"] == "gcs"
    build = svc.inputs["buildConfig"]
    assert build["functionTarget"] == "colpali_search"
    assert build["serviceAccount"] == f"projects/{PROJECT}/serviceAccounts/relayrag-build@{PROJECT}.iam.gserviceaccount.com"
    assert build["baseImage"].endswith("/serverless-runtimes/google-22-full/runtimes/python312")
    assert build["imageUri"].startswith(f"us-central1-docker.pkg.dev/{PROJECT}/relayrag-functions/")
    src = gpu.one("gcp:storage/bucketObject:BucketObject", "source-colpali_search")
    assert build["sourceLocation"] == f"gs://{PROJECT}-relayrag-deploy/{src.inputs['name']}"


def test_the_gpu_bundle_installs_cuda_torch_and_the_cpu_function_the_cpu_build():
    cpu = catalog.stage_requirements("colpali_search", {"llm": "vertex", "embedder": "vertex"})
    gpu = catalog.stage_requirements("colpali_search", {"llm": "vertex", "embedder": "vertex", "colpali": "gpu"})
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in cpu
    assert not any(r.startswith("--") for r in gpu)
    torch = [r for r in gpu if r.startswith("torch")]
    assert torch and "+cpu" not in torch[0]
    assert config(colpali_gpu=True).backends["colpali"] == "gpu"
    assert "colpali" not in config().backends


def test_the_workflow_calls_the_gpu_service_and_may_invoke_it(gpu):
    urls = _stage_urls(gpu)
    assert urls["colpali_search"] == "https://relayrag-colpali-search-gpu-abc123-uc.a.run.app"
    (inv,) = [b for b in gpu.of_type(RUN_IAM) if b.name == "invoke-colpali_search-by-workflow"]
    assert inv.inputs["name"] == "relayrag-colpali-search-gpu" and inv.inputs["role"] == "roles/run.invoker"
    assert inv.inputs["member"] == f"serviceAccount:relayrag-workflow@{PROJECT}.iam.gserviceaccount.com"
    assert inv.name in gpu.deps(WF, "rag")


def test_without_colpali_gpu_nothing_changes(full):
    assert not [s for s in full.of_type(RUN) if s.name == "colpali-gpu"]
    assert full.one(FN, "fn-colpali_search")
    assert _stage_urls(full)["colpali_search"] == "https://relayrag-colpali-search-abc123-uc.a.run.app"


def test_colpali_gpu_is_stack_config_and_needs_the_stage():
    class Cfg(dict):
        def get_object(self, key):
            return None

    assert stack_config.config_from_pulumi(Cfg(project=PROJECT, region="us-central1", colpaliGpu="true"), Cfg()).colpali_gpu
    assert not stack_config.config_from_pulumi(Cfg(project=PROJECT, region="us-central1"), Cfg()).colpali_gpu
    with pytest.raises(ValueError, match="colpaliGpu"):
        stack_config.config_from_pulumi(Cfg(project=PROJECT, region="us-central1", colpaliGpu="yes"), Cfg())
    with pytest.raises(ValueError, match="colpaliGpu.*colpali_search"):
        config(colpali_gpu=True, stages=("classify",))


# ------------------------------------------------------------------ what a code change rebuilds
def _digests(functions_dir, backends: dict, stages) -> dict[str, str]:
    from relayrag_infra import bundle
    return {s: bundle.bundle_digest(bundle.bundle_files(s, functions_dir), catalog.requirements_text(s, backends))
            for s in stages}


@pytest.fixture
def functions_copy(tmp_path):
    import shutil
    dest = tmp_path / "functions"
    shutil.copytree(catalog.FUNCTIONS_DIR, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def _touch(path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")


def test_no_bundle_carries_code_no_function_can_load():
    """Every function's digest covered the whole package, so a dashboard, CLI or assistant change rebuilt all
    eleven functions (colpali_search's image included). What a function can load is the closure of its own
    main.py's imports (lazy ones and the backend registry's targets included); no bundle carries another
    stage's module unless its own stage imports it."""
    from relayrag_infra import bundle
    every = {s: set(bundle.bundle_files(s)) for s in catalog.ALL_STAGES}
    for stage, files in every.items():
        for left_out in ("relayrag/dashboard/", "relayrag/cli/", "relayrag/agent/", "relayrag/mcp/",
                         "relayrag/evaluation/", "relayrag/service.py", "relayrag/engine/local.py",
                         "relayrag/entrypoints.py", "relayrag/stage_registry.py"):
            assert not [f for f in files if f.startswith(left_out)], (stage, left_out)
        for kept in ("main.py", "relayrag/backends/gcs.py", "relayrag/backends/firestore.py",
                     "relayrag/backends/llm.py"):
            assert kept in files, (stage, kept)
        assert any(f.startswith("relayrag/assets/minilm/") for f in files)  # read by path, not imported
    for stage in catalog.HTTP_STAGES:
        assert {f"relayrag/stages/{stage}.py", "relayrag/stage_http.py"} <= every[stage]
    assert "relayrag/stages/sql.py" not in every["classify"] and "relayrag/stages/classify.py" not in every["sql"]
    assert "relayrag/ingest/pipeline.py" in every["ingest"] and "relayrag/ingest/pipeline.py" not in every["retrieve"]
    assert not [f for f in every["ingest"] if f.startswith("relayrag/stages/") and f != "relayrag/stages/__init__.py"
                and f != "relayrag/stages/base.py"]


def test_a_stage_change_rebuilds_that_function_only(functions_copy):
    """functions/main.py imported every stage (relayrag.entrypoints), so every bundle carried every stage and a
    change to one stage's module rebuilt all eleven functions. Each bundle now has its own main.py and the code it
    loads: changing `rerank` changes rerank's digest alone; a change outside every bundle changes none; a module
    every stage loads (relayrag.stages.base) changes every HTTP stage's."""
    backends = {"llm": "vertex", "embedder": "vertex"}
    stages = catalog.ALL_STAGES
    before = _digests(functions_copy, backends, stages)
    _touch(functions_copy / "relayrag" / "dashboard" / "app.py")
    _touch(functions_copy / "relayrag" / "cli" / "app.py")
    _touch(functions_copy / "relayrag" / "stage_registry.py")
    assert _digests(functions_copy, backends, stages) == before
    _touch(functions_copy / "relayrag" / "stages" / "rerank.py")
    after = _digests(functions_copy, backends, stages)
    assert {s for s in stages if after[s] != before[s]} == {"rerank"}
    _touch(functions_copy / "relayrag" / "ingest" / "pipeline.py")
    assert {s for s, d in _digests(functions_copy, backends, stages).items() if d != after[s]} == {"ingest"}
    before = _digests(functions_copy, backends, stages)
    _touch(functions_copy / "relayrag" / "stages" / "base.py")
    after = _digests(functions_copy, backends, stages)
    assert {s for s in stages if after[s] != before[s]} >= set(catalog.HTTP_STAGES)


def test_a_dependency_change_rebuilds_only_the_bundles_that_install_it():
    """Two bundles, one change that only one of them carries: Gemini's client goes only into the stages that
    call an LLM or Vertex, so switching relayrag:llm rebuilds those and leaves the others' digests alone."""
    none, vertex = {"llm": "none", "embedder": "minilm-int8"}, {"llm": "vertex", "embedder": "minilm-int8"}
    calls = [s for s in catalog.ALL_STAGES if catalog.needs_vertex(s, vertex)]
    other = [s for s in catalog.ALL_STAGES if not catalog.needs_vertex(s, vertex)]
    assert calls and other
    before = _digests(catalog.FUNCTIONS_DIR, none, catalog.ALL_STAGES)
    after = _digests(catalog.FUNCTIONS_DIR, vertex, catalog.ALL_STAGES)
    assert all(before[s] != after[s] for s in calls)
    assert all(before[s] == after[s] for s in other)


def test_the_readme_documents_the_new_keys_and_the_gpu_cost_at_rest():
    from tests.infra.conftest import REPO_ROOT
    text = " ".join((REPO_ROOT / "infra" / "README.md").read_text(encoding="utf-8").split())
    for key in ("relayrag:functionImagesKeep", "functionImagesMaxAgeDays", "relayrag:colpaliGpu"):
        assert f"`{key}`" in text or f"/ `{key}`" in text, key
    assert "## Function images" in text and "## colpali_search on a GPU" in text
    assert ("`colpali_search` on a GPU (`colpaliGpu: true`, Cloud Run with an L4) | ≈ $0 compute at zero instances"
            in text and "never set min instances above 0" in text)
    assert "gcf-artifacts` repository, which has no cleanup policy" not in text
