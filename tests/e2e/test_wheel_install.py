"""A non-editable install works: `pip wheel .` on a copy of the source tree, the wheel installed into a fresh
virtual environment, then `relayrag ingest examples/pdfs` and `relayrag ask` run from outside the repository.

Before the workflows were shipped as package data, this `ask` failed: the installed package looked for
`workflows/rag.yaml` three folders above itself (issue 9).

To stay within the default suite's time, the fresh venv gets relayrag from the wheel (no editable finder, no
repository on sys.path: the test checks where `relayrag` is imported from) and its third-party dependencies
through a `.pth` line naming this interpreter's site-packages, whose own `.pth` files (the editable install's
finder) Python does not process; `pip check` then verifies the wheel's declared requirements are met.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

REPO = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".venv", ".nox", "build", "dist", ".git", ".pytest_cache", "__pycache__", ".relayrag"}


def _run(cmd: list[str], *, cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin folder of a fresh venv holding the relayrag wheel, a clean environment for it)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=lambda d, names: [n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")])
    wheels = tmp / "wheels"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RELAYRAG_", "PYTHON", "VIRTUAL_ENV"))}
    # build isolation fetches setuptools>=77 through pip (its cache, or the configured index)
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(wheels)], cwd=tmp, env=env)
    (wheel,) = wheels.glob("relayrag-*.whl")

    target = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    py = target / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=tmp, env=env).stdout.strip())
    (site / "zz_shared_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=tmp, env=env)
    env = {**env, "RELAYRAG_HOME": str(tmp / "home"), "HF_HUB_OFFLINE": "1"}
    return target / "bin", env, tmp


def test_wheel_ships_workflows_and_is_used_non_editable(installed):
    bindir, env, tmp = installed
    code = ("import relayrag, relayrag.engine.local as l; "
            "print(relayrag.__file__); print(l.workflows_dir()); print((l.workflows_dir() / 'rag.yaml').is_file())")
    where, wf_dir, has_rag = _run([str(bindir / "python"), "-c", code], cwd=tmp, env=env).stdout.split()
    site = str((bindir.parent / "lib").resolve())
    assert where.startswith(site), f"relayrag imported from {where}, not from the fresh venv"
    assert wf_dir.startswith(site) and wf_dir.endswith("relayrag/workflows") and has_rag == "True"
    # the declared requirements are installed (the shared site-packages provides them)
    _run([str(bindir / "python"), "-m", "pip", "check"], cwd=tmp, env=env)


def test_installed_wheel_ingests_the_example_pdfs_and_answers(installed):
    bindir, env, tmp = installed
    relayrag = str(bindir / "relayrag")
    summary = json.loads(_run([relayrag, "ingest", str(EXAMPLES / "pdfs"), "-c", "examples", "--json"],
                              cwd=tmp, env=env).stdout)
    assert summary["files"]["ingested"] == 5 and summary["files"]["failed"] == 0
    res = json.loads(_run([relayrag, "ask", "What is the labor cost of the stabilizer wiring change?",
                           "-c", "examples", "--json"], cwd=tmp, env=env).stdout)
    assert res["route"] == "rag" and res["grounded"] and "$6,715" in res["answer"]
    assert res["citations"][0]["doc"] == "federal-register-2020-17221.pdf"
