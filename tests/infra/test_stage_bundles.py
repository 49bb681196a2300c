"""Every stage's bundle, for every supported configuration (embedder minilm-int8 | vertex × LLM none | vertex):
its requirements install what its code loads, and its environment carries the settings that code reads.

What a stage's code uses is read from the code (relayrag.catalog.stage_uses). What it loads is measured: a fresh
interpreter in the stage's own unzipped upload archive (the bundle root, relayrag_infra.bundle.bundle_files) gets
the stage's deployed environment and imports `main` as Cloud Functions does (once per stage); then, once per
backend choice and roles, a fresh interpreter builds the backends of the roles the stage uses through the
registry (the local embedder also embeds one query, which loads ONNX Runtime and the model package) and lists
the distributions that added. No network and no credentials are needed
(clients connect lazily). Issue 10 item 3: hyde and grade load the snapshot, which builds the query embedder,
but were deployed without its settings and packages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.infra.conftest import REPO_ROOT  # also puts infra/ on sys.path
from tests.infra.test_bundle_imports import OPTIONAL, PROBE, USED, _closure, _norm
from relayrag_infra import catalog
from relayrag_infra.config import StackConfig

# Imported only when installed: google-genai uses Pillow for image parts if present; jaraco.context (via the
# dev venv's setuptools) imports backports.tarfile on Python < 3.12 only (Cloud Functions runs python312).
ALSO_OPTIONAL = {"pillow", "backports-tarfile"}
CONFIGS = [(e, llm) for e in ("minilm-int8", "vertex") for llm in ("none", "vertex")]
BUILD = r"""
from relayrag.backends import registry
from relayrag.settings import load_settings
s = load_settings()
for role in ROLES:
    obj = registry.build(role, getattr(s, role), s)
    if role == "embedder" and s.embedder != "vertex":
        obj.embed(["probe"], kind="query")
"""


def stack(embedder: str, llm: str) -> StackConfig:
    return StackConfig(project="relayrag-test-123", region="europe-west1", llm=llm, embedder=embedder)


USE_THEN_BUILD = (  # in one bundle: the distributions after `import main`, then after building ROLES
    USED + "import main\nprint(json.dumps(used_distributions()))\n" + BUILD
    + "print(json.dumps(used_distributions()))\n")


_main: dict[str, frozenset[str]] = {}
_backends: dict[tuple, frozenset[str]] = {}


@pytest.fixture(scope="module")
def bundle_roots(tmp_path_factory):
    """Each stage's upload archive, unzipped: a module its bundle leaves out fails to import here as it would in
    the cloud."""
    from tests.infra.rehearsal import build_bundle
    root = tmp_path_factory.mktemp("b")
    return {s: build_bundle(s, {"embedder": "vertex", "llm": "none"}, root / s) for s in catalog.HTTP_STAGES}


def _run(code: str, stage_env: dict, root) -> list[list[str]]:
    env = {**stage_env, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.strip().splitlines() if line.startswith("[")]


def loaded_distributions(stage: str, stage_env: dict, roles: tuple[str, ...], roots) -> frozenset[str]:
    """Distributions a fresh interpreter in `stage`'s bundle imports for `import main` (measured once per stage)
    plus those building `roles` adds (once per backend choice and roles: nothing else changes what the
    registry imports)."""
    if stage not in _main:
        _main[stage] = frozenset(_norm(d) for d in _run(PROBE, stage_env, roots[stage])[-1])
    key = (stage_env["RELAYRAG_EMBEDDER"], stage_env["RELAYRAG_LLM"], roles)
    if key not in _backends:
        code = USE_THEN_BUILD.replace("ROLES", repr(roles))
        before, after = _run(code, stage_env, roots["hyde"])[-2:]
        _backends[key] = frozenset(_norm(d) for d in set(after) - set(before))
    return _main[stage] | _backends[key]


@pytest.mark.parametrize("embedder,llm", CONFIGS, ids=[f"{e}+{x}" for e, x in CONFIGS])
def test_every_stage_bundle_installs_and_configures_what_its_code_loads(embedder, llm, tmp_path, bundle_roots):
    cfg = stack(embedder, llm)
    backends = {"embedder": embedder, "llm": llm}
    for stage in catalog.HTTP_STAGES:
        uses = catalog.STAGES[stage].uses
        env = {k: str(v) for k, v in cfg.stage_env(stage, snapshots_bucket="bucket", bigquery_dataset="p.d").items()}
        env["RELAYRAG_HOME"] = str(tmp_path / "home")  # /tmp/relayrag in the cloud; anywhere writable here
        # settings its code reads
        if "embedder" in uses and embedder == "vertex":
            assert env.get("RELAYRAG_VERTEX_EMBEDDING_MODEL") == cfg.vertex_embedding_model, stage
        if "llm" in uses and llm == "vertex":
            assert env.get("RELAYRAG_LLM_MODEL") == cfg.llm_model, stage
        # packages its code loads
        roles = tuple(r for r in ("embedder", "llm") if r in uses)
        loaded = loaded_distributions(stage, env, roles, bundle_roots)
        reqs = catalog.stage_requirements(stage, backends)
        missing = loaded - _closure(reqs) - OPTIONAL - ALSO_OPTIONAL - {"relayrag"}
        assert not missing, f"{stage} ({embedder}, {llm}) loads {sorted(missing)}, not in its requirements {reqs}"


def test_uses_are_read_from_the_code():
    from relayrag.catalog import stage_uses
    # hyde and grade load the snapshot (and with it the embedder), which the hand-kept table missed
    assert {"snapshots", "embedder"} <= stage_uses("hyde") and {"snapshots", "embedder"} <= stage_uses("grade")
    assert "llm" not in stage_uses("retrieve") and "warehouse" in stage_uses("sql")
    assert {"warehouse_routing", "sql_config"} <= stage_uses("classify")
    assert all(catalog.STAGES[s].uses == stage_uses(s) for s in catalog.HTTP_STAGES)


def test_main_exposes_exactly_the_catalog_entry_points():
    from relayrag.catalog import entry_points
    code = ("import json, os, sys; sys.path.insert(0, os.getcwd()); import main; "
            "print(json.dumps(sorted(n for n in dir(main) if not n.startswith('_') and callable(getattr(main, n)))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT / "functions", capture_output=True, text=True,
                         timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    names = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert set(entry_points()) <= names and names - set(entry_points()) <= {"Path"}
