"""The deploy rehearsal's checks fail where Cloud Build would (tests/infra/rehearsal.py; `nox -s
deploy_rehearsal` runs them on the real artefacts, after running this file). Here on crafted ones, offline: tiny
wheels in a local folder (pip and uv with --no-index --find-links) with a deliberately conflicting pin, a bundle
whose main.py imports a module its requirements lack, and a real stage's bundle without a module its stage
imports."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.infra.rehearsal import (REPO, RehearsalError, build_bundle, check_imports, install_requirements,
                                   make_venv, resolve, uv_binary, uv_resolve)
from tests.infra.rehearsal_images import dockerfile_copy_set, image_context


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A minimal valid pure-Python wheel: one module `name` and its dist-info."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{dist}/METADATA": "Metadata-Version: 2.1\n" f"Name: {name}\nVersion: {version}\n"
                            + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: relayrag-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    out = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return out


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> tuple[str, ...]:
    folder = tmp_path_factory.mktemp("wheels")
    _wheel(folder, "relayragtesta", "1.0", ("relayragtestb<2",))
    _wheel(folder, "relayragtestb", "1.0")
    _wheel(folder, "relayragtestb", "2.0")
    return ("--no-index", "--find-links", str(folder))


def test_a_deliberately_conflicting_pin_fails_the_resolve_naming_both(index, tmp_path):
    """B1's shape: a lock pins a dependency outside what another pinned package requires."""
    with pytest.raises(RehearsalError) as exc:
        resolve("relayragtesta==1.0\nrelayragtestb==2.0\n", tmp_path / "bad", python_version=None, pip_args=index)
    assert "relayragtestb" in str(exc.value) and "cannot resolve" in str(exc.value)
    installed = resolve("relayragtesta==1.0\nrelayragtestb==1.0\n", tmp_path / "good", python_version=None,
                        pip_args=index)
    assert sorted(i["metadata"]["name"] for i in installed) == ["relayragtesta", "relayragtestb"]


def test_the_uv_resolve_fails_on_the_same_conflicting_pin(index, tmp_path):
    """`resolve_all` resolves every generated set with uv (pip downloads each candidate wheel whole where the
    index has no separate metadata): uv must refuse the conflict pip refuses, and resolve what pip resolves."""
    try:
        uv_binary()
    except RehearsalError as exc:
        pytest.skip(f"{exc} (nox -s deploy_rehearsal installs it)")
    with pytest.raises(RehearsalError) as exc:
        uv_resolve("relayragtesta==1.0\nrelayragtestb==2.0\n", tmp_path / "bad", index_args=index)
    assert "relayragtestb" in str(exc.value) and "cannot resolve" in str(exc.value)
    assert uv_resolve("relayragtesta==1.0\nrelayragtestb==1.0\n", tmp_path / "good", index_args=index) == \
        {"relayragtesta": "1.0", "relayragtestb": "1.0"}


def test_a_real_stage_bundle_lacking_a_module_its_stage_imports_fails_the_import_check(tmp_path):
    """The rerank stage imports relayrag.stages.evidence: its bundle without that file fails `import main` as Cloud
    Functions would, naming the module (the venv here is this interpreter's: only the bundle's files differ)."""
    from relayrag_infra import bundle as bundles
    files = bundles.bundle_files("rerank")
    assert "relayrag/stages/evidence.py" in files
    good = build_bundle("rerank", {"llm": "none", "embedder": "vertex"}, tmp_path / "good")
    check_imports(Path(sys.executable), good, "rerank")
    del files["relayrag/stages/evidence.py"]
    bad = build_bundle("rerank", {"llm": "none", "embedder": "vertex"}, tmp_path / "bad", files=files)
    with pytest.raises(RehearsalError, match="missing module 'relayrag.stages.evidence'"):
        check_imports(Path(sys.executable), bad, "rerank")


def test_a_bundle_lacking_a_module_its_stage_imports_fails_the_import_check(index, tmp_path):
    files = {}
    for name, code in (("main.py", "import relayragtesta\nimport relayragtestc  # not in requirements.txt\n\n"
                                   "def classify(request):\n    return 'ok'\n"),):
        p = tmp_path / "src" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(code)
        files[name] = p
    bundle = build_bundle("classify", {}, tmp_path / "bundle", files=files, requirements="relayragtesta==1.0\n")
    python = make_venv(tmp_path / "venv")
    install_requirements(python, bundle / "requirements.txt", index)
    with pytest.raises(RehearsalError, match="missing module 'relayragtestc'"):
        check_imports(python, bundle, "classify")
    # the same bundle with the module in its requirements passes (the dev venv is never on the path)
    (bundle / "main.py").write_text(files["main.py"].read_text().replace("relayragtestc", "relayragtestb"))
    check_imports(python, bundle, "classify")
    with pytest.raises(RehearsalError, match="no attribute|classify2"):
        check_imports(python, bundle, "classify2")


def test_the_real_bundle_is_the_archive_infra_uploads(tmp_path):
    from relayrag_infra import bundle as bundles, catalog
    bundle = build_bundle("hyde", {"llm": "none", "embedder": "vertex"}, tmp_path / "hyde")
    names = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert names == set(bundles.bundle_files("hyde")) | {"requirements.txt"}
    assert (bundle / "main.py").read_text() == bundles.bundle_main("hyde")
    assert (bundle / "requirements.txt").read_text() == catalog.requirements_text("hyde", {"llm": "none",
                                                                                          "embedder": "vertex"})


@pytest.mark.slow  # a PEP 517 build in an isolated env (setuptools from the index): ~1 min on 2 shared cores
@pytest.mark.parametrize("image", ["dashboard", "assistant"])
def test_a_wheel_built_from_the_dockerfile_file_set_carries_the_workflow(image, tmp_path):
    """C4: the images copied pyproject.toml, README.md, functions/ and workflows/ but not setup.py, whose
    build_py hook copies workflows/*.yaml into relayrag/workflows/; the installed gateway had no `rag` tool."""
    app = image_context(REPO / "infra" / image / "Dockerfile", tmp_path / "app")
    assert "setup.py" in dockerfile_copy_set(REPO / "infra" / image / "Dockerfile")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                          "-w", str(tmp_path / "dist"), str(app)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    (whl,) = (tmp_path / "dist").glob("relayrag-*.whl")
    assert "relayrag/workflows/rag.yaml" in zipfile.ZipFile(whl).namelist()
