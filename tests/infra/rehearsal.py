"""The deploy rehearsal (`nox -s deploy_rehearsal`, issue 29): what Cloud Build and Cloud Run would do with each
deployable artefact, done here with pip and local processes (PyPI only; no Google Cloud).

- `resolve_all()`: every distinct requirements.txt the stack can generate (stage x llm x embedder x
  distributed index) resolved with `pip install --dry-run --ignore-installed --report` for the functions'
  runtime (Python 3.12, wheels only); any conflict fails, naming the stages and backends that generate it.
- `build_bundle()` + `install_bundle()`: one stage's upload bundle, made from the same files and the same
  requirements text the Pulumi program archives (bundle.bundle_files, catalog.requirements_text), unzipped
  and installed into its own virtualenv from its own requirements.txt only; `check_imports()` then imports
  `main` and the stage's entry point with that interpreter alone (no PYTHONPATH, no dev venv).
  `functions_map()` writes what tests/e2e/emulated_cloud.py needs to run those installs under
  functions-framework (RELAYRAG_REHEARSAL_FUNCTIONS) behind workflows-emulator.
- tests/infra/rehearsal_images.py: a Cloud Run image's file set, exactly what its Dockerfile COPYs, installed with
  its Dockerfile's `pip install` line into a clean venv; its commands started and probed.

`python -m tests.infra.rehearsal resolve|bundles|images` runs one part (nox -s deploy_rehearsal runs all).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "infra") not in sys.path:
    sys.path.insert(0, str(REPO / "infra"))

from relayrag_infra import bundle as bundles, catalog  # noqa: E402

RUNTIME_PYTHON = "3.12"  # catalog.RUNTIME = python312
RUNTIME_PLATFORM = "x86_64-manylinux_2_35"  # Cloud Functions' python312 base image is Ubuntu 22.04 (glibc 2.35)
UV = "uv==0.13.8"
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


class RehearsalError(AssertionError):
    """A deployable artefact would fail: the message names it and says why."""


# ------------------------------------------------------------------------------------------ resolve
def backend_matrix() -> list[dict[str, str]]:
    """Every backend combination the stack config can produce (StackConfig.backends): llm x embedder x the
    distributed index x colpali_search on the CPU function or the GPU service (relayrag:colpaliGpu)."""
    out = []
    for llm in catalog.LLM_BACKENDS:
        for embedder in catalog.EMBEDDERS:
            for index in (False, True):
                for gpu in (False, True):
                    out.append({"llm": llm, "embedder": embedder, **({"index": "bigquery"} if index else {}),
                                **({"colpali": "gpu"} if gpu else {})})
    return out


def requirement_sets() -> dict[str, list[str]]:
    """requirements.txt text -> the "stage (backends)" labels that generate it: each distinct text once."""
    pins = catalog.locked_pins()
    sets: dict[str, list[str]] = {}
    for backends in backend_matrix():
        for stage in catalog.ALL_STAGES:
            text = catalog.requirements_text(stage, backends, pins)
            sets.setdefault(text, []).append(f"{stage} ({', '.join(f'{k}={v}' for k, v in backends.items())})")
    return sets


def text_key(text: str) -> str:
    """16 hex characters naming one requirements text (its resolution and its venv are kept under this name)."""
    import hashlib
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _reachable(url: str, timeout: float = 3.0) -> bool:
    host = re.sub(r"^https?://", "", url).split("/", 1)[0]
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def for_this_network(text: str) -> tuple[str, str]:
    """(requirements text pip can use here, note). Where PyTorch's CPU index cannot be reached (CI that allows
    PyPI only), the `--extra-index-url` line is dropped and `torch==X+cpu` becomes `torch==X` (PyPI's build of
    the same release: the same torch requirements plus the CUDA wheels), and the note says so."""
    if CPU_TORCH_INDEX not in text or _reachable(CPU_TORCH_INDEX):
        return text, ""
    lines = [re.sub(r"^(torch==[^+;\s]+)\+cpu", r"\1", ln) for ln in text.splitlines()
             if not ln.startswith(f"--extra-index-url {CPU_TORCH_INDEX}")]
    note = f"{CPU_TORCH_INDEX} unreachable here: torch resolved from PyPI's build of the same version"
    return "\n".join(lines) + "\n", note


def resolve(text: str, workdir: Path, *, python_version: str | None = RUNTIME_PYTHON,
            pip_args: tuple[str, ...] = ()) -> list[dict]:
    """Resolve one requirements.txt with pip (dry run, nothing installed); return the report's install list.
    Raises RehearsalError with pip's explanation when it cannot be resolved. pip downloads every candidate wheel
    whole where the index serves no separate metadata (PEP 658), so `resolve_all` uses uv; this is pip's own
    verdict (the unit tests, and `python -m tests.infra.rehearsal resolve --pip`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    req, report = workdir / "requirements.txt", workdir / "report.json"
    req.write_text(text, encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
           "--disable-pip-version-check", "--report", str(report), "-r", str(req), *pip_args]
    if python_version:
        # --target: pip before 23.3 refuses platform options without it, even on a dry run (nothing is written)
        cmd += ["--python-version", python_version, "--only-binary=:all:", "--target", str(workdir / "target")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0 and python_version and "(from versions: none)" in out.stderr:
        # a dependency published only as an sdist (colpali-engine's GPUtil) cannot be resolved for another
        # Python with --only-binary: resolve it for this interpreter instead (conflicts show either way)
        print(f"note: {req}: an sdist-only dependency; resolved for Python {sys.version_info[0]}.{sys.version_info[1]}"
              f" instead of {python_version}", flush=True)
        return resolve(text, workdir, python_version=None, pip_args=pip_args)
    if out.returncode != 0:
        why = "\n".join(ln for ln in (out.stderr or out.stdout).splitlines() if not ln.startswith("WARNING: Location"))
        raise RehearsalError(f"pip cannot resolve {req}:\n{why[-3000:]}")
    return json.loads(report.read_text(encoding="utf-8"))["install"]


def uv_binary() -> str:
    """The uv executable: next to this interpreter (nox installs it into the session) or on PATH. Raises
    RehearsalError when there is none."""
    here = Path(sys.executable).parent / "uv"
    found = str(here) if here.exists() else shutil.which("uv")
    if not found:
        raise RehearsalError(f"uv is not installed: pip install {UV}")
    return found


def uv_resolve(text: str, workdir: Path, *, python_version: str = RUNTIME_PYTHON,
               platform: str | None = RUNTIME_PLATFORM, index_args: tuple[str, ...] = (),
               reuse_for_s: float = 0) -> dict[str, str]:
    """Resolve one requirements.txt with `uv pip compile` for `python_version` on `platform` (the functions'
    runtime by default); return {normalised name: version}. Raises RehearsalError with uv's explanation when it
    cannot be resolved.

    uv reads each wheel's metadata with HTTP range requests where the index serves no separate metadata, where
    pip downloads the whole wheel (gigabytes for torch's CUDA dependencies); it builds an sdist's metadata
    (colpali-engine's GPUtil) for the target Python instead of giving up on it. `--index-strategy
    unsafe-best-match` makes it weigh every index's versions together as pip does (uv's default takes a package
    from the first index that has it). `index_args` replace the default index (the unit tests' local folder).
    `reuse_for_s`: a resolution of the same text with the same options made in `workdir` less than that many
    seconds ago is read back instead of resolved again (the bundles part after the resolve part)."""
    workdir.mkdir(parents=True, exist_ok=True)
    req, out_file, stamp = workdir / "requirements.txt", workdir / "uv-resolved.txt", workdir / "uv-args.json"
    args = ["--index-strategy", "unsafe-best-match", "--python-version", python_version,
            *(["--python-platform", platform] if platform else []), *index_args]
    done = (reuse_for_s > 0 and out_file.exists() and req.exists() and stamp.exists()
            and time.time() - stamp.stat().st_mtime < reuse_for_s
            and req.read_text(encoding="utf-8") == text and json.loads(stamp.read_text(encoding="utf-8")) == args)
    if not done:
        req.write_text(text, encoding="utf-8")
        out_file.unlink(missing_ok=True)
        cmd = [uv_binary(), "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--no-config", *args,
               "-o", str(out_file), str(req)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                             env={**os.environ, "UV_NO_PROGRESS": "1"})
        if out.returncode != 0:
            raise RehearsalError(f"uv cannot resolve {req}:\n{(out.stderr or out.stdout)[-3000:]}")
        stamp.write_text(json.dumps(args), encoding="utf-8")
    pins = {}
    for line in out_file.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line and not line.startswith("-"):
            name, _, version = line.partition("==")
            pins[_norm(name.split("[")[0])] = version.split(";")[0].strip()
    return pins


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve_all(workdir: Path, jobs: int = 6) -> list[str]:
    """Resolve every distinct generated requirement set with uv for the functions' runtime (Python 3.12,
    manylinux_2_35: Cloud Functions' Ubuntu 22.04 base); raise RehearsalError listing every set that fails.
    The resolutions are kept as WORKDIR/<text_key>/uv-resolved.txt; the bundles part installs the representative
    configuration's sets with pip, as Cloud Build does, and holds pip's result to these (`compare_with_uv`)."""
    from concurrent.futures import ThreadPoolExecutor
    failures, notes = [], []
    sets = sorted(requirement_sets().items())
    print(f"resolve: {len(sets)} distinct requirement sets from {len(backend_matrix())} backend configurations x "
          f"{len(catalog.ALL_STAGES)} stages", flush=True)

    def one(i: int, text: str, users: list[str]) -> None:
        usable, note = for_this_network(text)
        if note:
            notes.append(f"set {i}: {note}")
        t0 = time.monotonic()
        try:
            n = len(uv_resolve(usable, workdir / text_key(text)))
            print(f"resolve set {i}: {n} distributions in {time.monotonic() - t0:.0f} s ({users[0]}"
                  f"{f' +{len(users) - 1}' if len(users) > 1 else ''})", flush=True)
        except RehearsalError as exc:
            print(f"resolve set {i}: FAILS ({users[0]})", flush=True)
            failures.append(f"{'; '.join(users)}:\n{exc}")

    # uv mostly waits on the index: a few resolutions at once (each its own process, one shared cache)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(one, i, text, users) for i, (text, users) in enumerate(sets)]:
            f.result()
    if failures:
        raise RehearsalError(f"{len(failures)} generated requirement set(s) cannot be installed:\n\n"
                             + "\n\n".join(failures))
    return notes


# ------------------------------------------------------------------------------------------ bundles
def build_bundle(stage: str, backends: dict, dest: Path, files: dict[str, Path | str] | None = None,
                 requirements: str | None = None) -> Path:
    """The stage's upload archive as the Pulumi program builds it (the stage's own files and main.py,
    relayrag_infra.bundle.bundle_files; the same requirements text), unzipped into `dest` as Cloud Build sees it.
    `files`: archive path -> file or text (default: the stage's bundle). Returns `dest`."""
    files = bundles.bundle_files(stage) if files is None else files
    requirements = catalog.requirements_text(stage, backends) if requirements is None else requirements
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, content in sorted(files.items()):
            z.writestr(rel, bundles.file_bytes(content))
        z.writestr("requirements.txt", requirements)
    with zipfile.ZipFile(archive) as z:
        z.extractall(dest)
    return dest


def runtime_python() -> tuple[Path, str]:
    """(base interpreter for the functions' venvs, note): Python 3.12, the functions' runtime, from
    RELAYRAG_REHEARSAL_PYTHON, `python3.12` on PATH or pyenv's 3.12; else this interpreter, and the note says so."""
    import glob
    candidates = [os.environ.get("RELAYRAG_REHEARSAL_PYTHON"), shutil.which(f"python{RUNTIME_PYTHON}"),
                  *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{RUNTIME_PYTHON}.*/bin/python{RUNTIME_PYTHON}")),
                          reverse=True)]
    for c in filter(None, candidates):
        try:
            out = subprocess.run([c, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == RUNTIME_PYTHON:
            return Path(c), ""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return Path(sys.executable), f"no Python {RUNTIME_PYTHON} here: the bundles are installed for Python {here}"


def make_venv(path: Path, base: Path | None = None) -> Path:
    """A clean virtualenv of `base` (default this interpreter; no system site-packages); returns its python."""
    if not (path / "bin" / "python").exists():
        subprocess.run([str(base or sys.executable), "-m", "venv", "--without-pip", str(path)], check=True,
                       timeout=300)
    return path / "bin" / "python"


def python_version(python: Path) -> str:
    out = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


WHEELHOUSE = Path(os.environ.get("RELAYRAG_REHEARSAL_WHEELHOUSE") or
                  os.path.expanduser("~/.cache/relayrag/rehearsal-wheels"))
"""Where `install_requirements` keeps what pip downloads: pip's own cache keeps nothing when the index's answers
carry no caching headers (this machine's PyPI), so each venv downloaded every wheel again."""


_DOWNLOAD_LOCK = threading.Lock()


def _pip(python: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args, "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=1800, cwd=cwd)


def install_requirements(python: Path, requirements: Path, pip_args: tuple[str, ...] = (),
                         wheelhouse: Path | None = None, report: Path | None = None) -> list[dict]:
    """pip install -r `requirements` into the venv of `python` (this process's pip, --python), nothing else;
    returns pip's report of what it installed. With `wheelhouse`: `pip download` into it first (pip's resolution
    against the index, fetching only the files the wheelhouse lacks), then `pip install --no-index --find-links
    wheelhouse` (the same resolution, offline). Bytecode is not compiled (--no-compile: imports compile what they
    use). Raises RehearsalError with pip's explanation."""
    return _pip_install(python, ["-r", str(requirements)], pip_args, wheelhouse, report or
                        requirements.with_name("install-report.json"), requirements.parent)


def _pip_install(python: Path, what: list[str], pip_args: tuple[str, ...], wheelhouse: Path | None, report: Path,
                 cwd: Path, extra_downloads: tuple[str, ...] = ()) -> list[dict]:
    if wheelhouse is not None:
        wheelhouse.mkdir(parents=True, exist_ok=True)
        with _DOWNLOAD_LOCK:  # pip takes a file already in the folder as downloaded: never while another writes it
            out = _pip(python, "download", "--quiet", "-d", str(wheelhouse), *what, *extra_downloads, *pip_args,
                       cwd=cwd)
        if out.returncode != 0:
            raise RehearsalError(f"pip download {' '.join(what)} (in {cwd}) failed:\n{(out.stderr or out.stdout)[-3000:]}")
        pip_args = (*pip_args, "--no-index", "--find-links", str(wheelhouse))
    out = _pip(python, "install", "--quiet", "--no-compile", "--report", str(report), *what, *pip_args, cwd=cwd)
    if out.returncode != 0:
        raise RehearsalError(f"pip install {' '.join(what)} (in {cwd}) failed:\n{(out.stderr or out.stdout)[-3000:]}")
    return json.loads(report.read_text(encoding="utf-8"))["install"]


def compare_with_uv(installed: list[dict], text: str, version: str, workdir: Path) -> dict[str, tuple]:
    """{name: (pip's version, uv's version)} for every distribution where what pip installed from `text` and
    what uv resolves for it (Python `version`, the functions' platform) differ: uv stands in for pip in
    `resolve_all` only while this is empty. uv's resolution is reused from `workdir` when `resolve` made it."""
    pip_pins = {_norm(i["metadata"]["name"]): i["metadata"]["version"] for i in installed}
    uv_pins = uv_resolve(text, workdir, python_version=version, reuse_for_s=3600)
    return {n: (pip_pins.get(n), uv_pins.get(n)) for n in sorted(set(pip_pins) | set(uv_pins))
            if pip_pins.get(n) != uv_pins.get(n)}


def check_imports(python: Path, bundle: Path, entry_point: str) -> None:
    """Import `main` and its `entry_point` from the bundle with the venv's interpreter only (isolated mode: no
    PYTHONPATH, no user site) and no bytecode written (-B): a .pyc left in the bundle by an earlier check is trusted
    when the source changed within the same second at the same size, so a second check would import the old code.
    Raises RehearsalError naming the missing module."""
    code = ("import sys; sys.path.insert(0, '.'); import main; "
            f"f = getattr(main, {entry_point!r}); print('ok', f.__module__)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RELAYRAG_", "VIRTUAL_ENV"))}
    env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run([str(python), "-I", "-B", "-c", code], cwd=bundle, capture_output=True, text=True, env=env,
                         timeout=300)
    if out.returncode != 0:
        missing = re.findall(r"No module named '([^']+)'", out.stderr)
        raise RehearsalError(f"bundle {bundle.name}: `import main; main.{entry_point}` fails with its own "
                             f"requirements.txt{f' (missing module {missing[-1]!r})' if missing else ''}:\n"
                             f"{out.stderr[-2000:]}")


REPRESENTATIVE = {"llm": "none", "embedder": "minilm-int8"}
"""The configuration the bundles are rehearsed with: no Vertex (nothing to call here), the local embedder."""


@dataclass
class InstalledBundle:
    stage: str
    bundle: Path
    python: Path


def prepare_bundles(workdir: Path, backends: dict | None = None, stages: tuple[str, ...] | None = None,
                    pip_args: tuple[str, ...] = (), wheelhouse: Path | None = WHEELHOUSE,
                    jobs: int = 2) -> dict[str, InstalledBundle]:
    """Build, install and import-check each stage's bundle, as Cloud Build would: the stage's own archive
    unzipped, `pip install -r requirements.txt` into a clean venv of Python 3.12 (`runtime_python`). Stages
    whose requirements.txt are identical share one venv (the install is the same), each keeps its own unzipped
    bundle; a venv is reused while its requirements do not change. pip's versions are then held to uv's
    resolution of the same text (`compare_with_uv`; RehearsalError when they differ). Installs run `jobs` at a
    time (downloads first, one at a time, into `wheelhouse`)."""
    from concurrent.futures import ThreadPoolExecutor
    backends = dict(REPRESENTATIVE if backends is None else backends)
    base, base_note = runtime_python()
    if base_note:
        print(f"note: {base_note}", flush=True)
    t0 = time.monotonic()
    bundles: dict[str, tuple[Path, str, str]] = {}  # stage -> (bundle, text, note)
    for stage in stages or catalog.ALL_STAGES:
        if stages is None and "colpali" in catalog.requirement_groups(stage, backends) \
                and not _reachable(CPU_TORCH_INDEX):
            # installing PyPI's CUDA torch (several GB) is what the CPU index exists to avoid; its requirements are
            # still resolved by `resolve`, and the emulated run uses the development install for this one target
            print(f"bundle {stage}: not installed ({CPU_TORCH_INDEX} unreachable here)", flush=True)
            continue
        bundle = build_bundle(stage, backends, workdir / "bundles" / stage)
        text, note = for_this_network((bundle / "requirements.txt").read_text(encoding="utf-8"))
        (bundle / "requirements.txt").write_text(text, encoding="utf-8")
        bundles[stage] = (bundle, text, note)
    distinct = {text_key(text): (bundle, text) for bundle, text, _ in bundles.values()}
    print(f"bundles: {len(bundles)} stages, {len(distinct)} distinct requirements.txt (one venv each)", flush=True)

    def install(key: str) -> Path:
        bundle, text = distinct[key]
        venv = workdir / "venvs" / key
        python = make_venv(venv, base)
        marker = venv / ".installed"
        if marker.exists() and marker.read_text(encoding="utf-8") == text:
            return python
        t1 = time.monotonic()
        installed = install_requirements(python, bundle / "requirements.txt", pip_args, wheelhouse,
                                         report=venv / "install-report.json")
        if not pip_args:  # against the real index (the unit tests use a local folder)
            differ = compare_with_uv(installed, text, python_version(python), workdir / "resolve" / key)
            if differ:
                raise RehearsalError(f"pip installed other versions than uv resolved for {bundle.name}'s "
                                     f"requirements.txt ({{name: (pip, uv)}}): {differ}")
        marker.write_text(text, encoding="utf-8")
        print(f"venv {key}: {len(installed)} distributions installed by pip in {time.monotonic() - t1:.0f} s, "
              f"the same versions uv resolves ({', '.join(s for s, b in bundles.items() if text_key(b[1]) == key)})",
              flush=True)
        return python

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        pythons = dict(zip(distinct, pool.map(install, distinct)))
    out = {}
    for stage, (bundle, text, note) in bundles.items():
        python = pythons[text_key(text)]
        check_imports(python, bundle, catalog.STAGES[stage].entry_point)
        out[stage] = InstalledBundle(stage, bundle, python)
        print(f"bundle {stage}: its main.{catalog.STAGES[stage].entry_point} imports from its own files and venv "
              f"({text_key(text)}){f'; {note}' if note else ''}", flush=True)
    print(f"bundles: {len(out)} stages installed and imported in {time.monotonic() - t0:.0f} s", flush=True)
    return out


def functions_map(installed: dict[str, InstalledBundle]) -> dict[str, dict[str, str]]:
    """functions-framework target -> {"bin": its functions-framework, "source": the bundle's main.py}, for
    RELAYRAG_REHEARSAL_FUNCTIONS (tests/e2e/emulated_cloud.py)."""
    out = {}
    for stage, ib in installed.items():
        target = catalog.STAGES[stage].entry_point
        out[target] = {"bin": str(ib.python.parent / "functions-framework"), "source": str(ib.bundle / "main.py")}
    return out


# ------------------------------------------------------------------------------------------ CLI
def main(argv: list[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m tests.infra.rehearsal")
    ap.add_argument("part", choices=("resolve", "bundles", "images"))
    ap.add_argument("--workdir", type=Path, default=REPO / ".nox" / "deploy-rehearsal")
    ap.add_argument("--functions-map", type=Path, help="bundles: write the functions map JSON here")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    if args.part == "resolve":
        for note in resolve_all(args.workdir / "resolve"):
            print("note:", note)
    elif args.part == "bundles":
        installed = prepare_bundles(args.workdir)
        if args.functions_map:
            args.functions_map.write_text(json.dumps(functions_map(installed), indent=1), encoding="utf-8")
    else:
        from tests.infra.rehearsal_images import rehearse_images
        rehearse_images(args.workdir / "images")
    print(f"{args.part}: ok in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
