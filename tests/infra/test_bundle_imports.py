"""A stage's generated requirements.txt must install everything `import main` imports on a cold start.

The check imports the hyde bundle's main.py in a fresh interpreter from the unzipped bundle (as Cloud Functions
does from the bundle root), maps every imported module to the distribution that installed it, and requires each
one to be a stage requirement or a dependency of one (following installed metadata). The lightest stage is the
strictest case: anything missing there crashes every cold start of it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from packaging.requirements import Requirement

import tests.infra.conftest  # noqa: F401  (puts infra/ on sys.path)
from relayrag_infra import catalog

# Imported only when present (try/except ImportError in bm25s and httpx), or by the interpreter itself.
OPTIONAL = {"numba", "llvmlite", "scipy", "orjson", "tqdm", "zstandard", "setuptools", "pip"}

USED = r"""
import importlib.metadata as md, json, os, sys
sys.path.insert(0, os.getcwd())


def used_distributions():
    tops = md.packages_distributions()
    used = set()
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if not f or "site-packages" not in f and "dist-packages" not in f:
            continue
        dists = tops.get(name.split(".")[0], [])
        if len(dists) == 1:
            used.add(dists[0])
            continue
        real = os.path.realpath(f)
        for d in dists:  # namespace packages (google.*): find the distribution that owns the file
            if any(os.path.realpath(d_file.locate()) == real for d_file in md.files(d) or []
                   if str(d_file).endswith(".py") and d_file.name == os.path.basename(real)):
                used.add(d)
                break
    return sorted(used)
"""
PROBE = USED + "import main\nprint(json.dumps(used_distributions()))\n"
"""Run in a bundle root: the distributions `import main` loads, as a JSON list on the last line."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(requirements: list[str]) -> set[str]:
    """Normalised names of the requirements and, through installed metadata, everything they depend on
    (extras' dependencies excluded, as pip would)."""
    import importlib.metadata as md

    todo = [Requirement(r).name for r in requirements if not r.startswith("-")]
    seen: set[str] = set()
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for r in reqs:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def test_the_lightest_stage_requirements_cover_what_main_imports(tmp_path):
    from tests.infra.rehearsal import build_bundle
    root = build_bundle("hyde", {"llm": "none", "embedder": "vertex"}, tmp_path / "hyde")
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=root, capture_output=True,
                         text=True, timeout=120, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    imported = {_norm(d) for d in json.loads(out.stdout.strip().splitlines()[-1])}
    assert {"functions-framework", "pydantic"} <= imported  # the probe saw the bundle's imports
    for backends in ({"llm": "vertex", "embedder": "vertex"}, {"llm": "none", "embedder": "minilm-int8"}):
        reqs = catalog.stage_requirements("hyde", backends)  # no embedder, no warehouse, no parsers
        missing = imported - _closure(reqs) - OPTIONAL - {"relayrag"}
        assert not missing, (f"`import main` needs {sorted(missing)}, which the hyde bundle's requirements "
                             f"({reqs}) do not install: add them to catalog.REQUIREMENT_GROUPS['core']")
