"""The deploy rehearsal (`nox -s deploy_rehearsal`, issue 29): what Cloud Build and Cloud Run would do with each
deployable artefact, done here with pip and local processes (PyPI only; no Google Cloud).

- `resolve_all()`: every distinct requirements.txt the stack can generate (stage x llm x embedder x
  distributed index) resolved with `pip install --dry-run --ignore-installed --report` for the functions'
  runtime (Python 3.12, wheels only); any conflict fails, naming the stages and backends that generate it.
- `build_bundle()` + `install_bundle()`: one stage's upload bundle, made from the same files and the same
  requirements text the Pulumi program archives (catalog.bundle_files, catalog.requirements_text), unzipped
  and installed into its own virtualenv from its own requirements.txt only; `check_imports()` then imports
  `main` and the stage's entry point with that interpreter alone (no PYTHONPATH, no dev venv).
  `functions_map()` writes what tests/e2e/emulated_cloud.py needs to run those installs under
  functions-framework (RELAYRAG_REHEARSAL_FUNCTIONS) behind workflows-emulator.
- `dockerfile_copy_set()` + `rehearse_image()`: a Cloud Run image's file set, exactly what its Dockerfile
  COPYs, installed with its Dockerfile's `pip install` line into a clean venv; its command started and probed.

`python -m tests.infra.rehearsal resolve|bundles|images` runs one part (nox -s deploy_rehearsal runs all).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "infra") not in sys.path:
    sys.path.insert(0, str(REPO / "infra"))

from relayrag_infra import catalog  # noqa: E402

RUNTIME_PYTHON = "3.12"  # catalog.RUNTIME = python312
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


class RehearsalError(AssertionError):
    """A deployable artefact would fail: the message names it and says why."""


# ------------------------------------------------------------------------------------------ resolve
def backend_matrix() -> list[dict[str, str]]:
    """Every backend combination the stack config can produce (StackConfig.backends)."""
    out = []
    for llm in catalog.LLM_BACKENDS:
        for embedder in catalog.EMBEDDERS:
            for index in (False, True):
                out.append({"llm": llm, "embedder": embedder, **({"index": "bigquery"} if index else {})})
    return out


def requirement_sets() -> dict[str, list[str]]:
    """requirements.txt text -> the "stage (backends)" labels that generate it."""
    pins = catalog.locked_pins()
    sets: dict[str, list[str]] = {}
    for backends in backend_matrix():
        for stage in catalog.ALL_STAGES:
            text = catalog.requirements_text(stage, backends, pins)
            sets.setdefault(text, []).append(f"{stage} ({', '.join(f'{k}={v}' for k, v in backends.items())})")
    return sets


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
    Raises RehearsalError with pip's explanation when it cannot be resolved."""
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


def resolve_all(workdir: Path, jobs: int = 3) -> list[str]:
    """Resolve every generated requirement set; raise RehearsalError listing every set that fails."""
    from concurrent.futures import ThreadPoolExecutor
    failures, notes = [], []

    def one(i: int, text: str, users: list[str]) -> None:
        usable, note = for_this_network(text)
        if note:
            notes.append(f"set {i}: {note}")
        try:
            n = len(resolve(usable, workdir / f"set-{i}"))
            print(f"resolve set {i}: {n} distributions ({users[0]}{f' +{len(users) - 1}' if len(users) > 1 else ''})",
                  flush=True)
        except RehearsalError as exc:
            print(f"resolve set {i}: FAILS ({users[0]})", flush=True)
            failures.append(f"{'; '.join(users)}:\n{exc}")

    # pip mostly waits on the index: a few resolutions at once (each its own process)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(one, i, text, users) for i, (text, users) in enumerate(sorted(requirement_sets().items()))]:
            f.result()
    if failures:
        raise RehearsalError(f"{len(failures)} generated requirement set(s) cannot be installed:\n\n"
                             + "\n\n".join(failures))
    return notes


# ------------------------------------------------------------------------------------------ bundles
def build_bundle(stage: str, backends: dict, dest: Path, files: dict[str, Path] | None = None,
                 requirements: str | None = None) -> Path:
    """The stage's upload archive as the Pulumi program builds it (same files, same requirements text),
    unzipped into `dest` as Cloud Build sees it. Returns `dest`."""
    files = catalog.bundle_files() if files is None else files
    requirements = catalog.requirements_text(stage, backends) if requirements is None else requirements
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, path in sorted(files.items()):
            z.write(path, rel)
        z.writestr("requirements.txt", requirements)
    with zipfile.ZipFile(archive) as z:
        z.extractall(dest)
    return dest


def make_venv(path: Path) -> Path:
    """A clean virtualenv (no system site-packages); returns its python."""
    if not (path / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


def install_requirements(python: Path, requirements: Path, pip_args: tuple[str, ...] = ()) -> None:
    """pip install -r `requirements` into the venv of `python` (this process's pip, --python), nothing else."""
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                          "--disable-pip-version-check", "-r", str(requirements), *pip_args],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RehearsalError(f"installing {requirements} failed:\n{(out.stderr or out.stdout)[-3000:]}")


def check_imports(python: Path, bundle: Path, entry_point: str) -> None:
    """Import `main` and its `entry_point` from the bundle with the venv's interpreter only (isolated mode: no
    PYTHONPATH, no user site). Raises RehearsalError naming the missing module."""
    code = ("import sys; sys.path.insert(0, '.'); import main; "
            f"f = getattr(main, {entry_point!r}); print('ok', f.__module__)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RELAYRAG_", "VIRTUAL_ENV"))}
    env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run([str(python), "-I", "-c", code], cwd=bundle, capture_output=True, text=True, env=env,
                         timeout=300)
    if out.returncode != 0:
        missing = re.findall(r"No module named '([^']+)'", out.stderr)
        raise RehearsalError(f"bundle {bundle.name}: `import main; main.{entry_point}` fails with its own "
                             f"requirements.txt{f' (missing module {missing[-1]!r})' if missing else ''}:\n"
                             f"{out.stderr[-2000:]}")


def _install_key(bundle: Path) -> str:
    import hashlib
    return hashlib.sha256((bundle / "requirements.txt").read_bytes()).hexdigest()[:16]


REPRESENTATIVE = {"llm": "none", "embedder": "minilm-int8"}
"""The configuration the bundles are rehearsed with: no Vertex (nothing to call here), the local embedder."""


@dataclass
class InstalledBundle:
    stage: str
    bundle: Path
    python: Path


def prepare_bundles(workdir: Path, backends: dict | None = None, stages: tuple[str, ...] | None = None,
                    pip_args: tuple[str, ...] = ()) -> dict[str, InstalledBundle]:
    """Build, install and import-check each stage's bundle. Stages whose requirements.txt are identical share
    one venv (the install is the same), each keeps its own unzipped bundle."""
    backends = dict(REPRESENTATIVE if backends is None else backends)
    out = {}
    for stage in stages or catalog.ALL_STAGES:
        t0 = time.monotonic()
        if stages is None and "colpali" in catalog.requirement_groups(stage, backends) \
                and not _reachable(CPU_TORCH_INDEX):
            # installing PyPI's CUDA torch (several GB) is what the CPU index exists to avoid; its requirements are
            # still resolved by `resolve`, and the emulated run uses the development install for this one target
            print(f"bundle {stage}: not installed ({CPU_TORCH_INDEX} unreachable here)", flush=True)
            continue
        bundle = build_bundle(stage, backends, workdir / "bundles" / stage)
        text, note = for_this_network((bundle / "requirements.txt").read_text(encoding="utf-8"))
        (bundle / "requirements.txt").write_text(text, encoding="utf-8")
        venv = workdir / "venvs" / _install_key(bundle)
        python = make_venv(venv)
        marker = venv / ".installed"
        if not marker.exists():
            install_requirements(python, bundle / "requirements.txt", pip_args)
            marker.write_text(text, encoding="utf-8")
        check_imports(python, bundle, catalog.STAGES[stage].entry_point)
        out[stage] = InstalledBundle(stage, bundle, python)
        print(f"bundle {stage}: installed and imported in {time.monotonic() - t0:.0f} s ({venv.name})"
              f"{f'; {note}' if note else ''}", flush=True)
    return out


def functions_map(installed: dict[str, InstalledBundle]) -> dict[str, dict[str, str]]:
    """functions-framework target -> {"bin": its functions-framework, "source": the bundle's main.py}, for
    RELAYRAG_REHEARSAL_FUNCTIONS (tests/e2e/emulated_cloud.py)."""
    out = {}
    for stage, ib in installed.items():
        target = catalog.STAGES[stage].entry_point
        out[target] = {"bin": str(ib.python.parent / "functions-framework"), "source": str(ib.bundle / "main.py")}
    return out


# ------------------------------------------------------------------------------------------ images
def _dockerfile_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def dockerfile_copy_set(path: Path) -> set[str]:
    """The repository paths a Dockerfile COPYs (sources of every COPY instruction)."""
    out: set[str] = set()
    for line in _dockerfile_lines(path):
        if line.upper().startswith("COPY "):
            parts = [p for p in shlex.split(line[5:]) if not p.startswith("--")]
            out.update(p.rstrip("/") for p in parts[:-1])
    return out


def dockerfile_pip_install(path: Path) -> list[str]:
    """The arguments of the Dockerfile's `pip install` (the first RUN that has one)."""
    for line in _dockerfile_lines(path):
        if line.upper().startswith("RUN ") and "pip install" in line:
            cmd = line[4:].split("&&")[0]
            return shlex.split(cmd.split("pip install", 1)[1])
    raise RehearsalError(f"{path}: no `RUN pip install`")


def dockerfile_cmd(path: Path) -> list[str]:
    for line in _dockerfile_lines(path):
        if line.upper().startswith("CMD "):
            return json.loads(line[4:])
    raise RehearsalError(f"{path}: no CMD")


def image_context(dockerfile: Path, dest: Path) -> Path:
    """Exactly the Dockerfile's COPY set, copied from the repository into `dest` (the image's /app)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for rel in sorted(dockerfile_copy_set(dockerfile)):
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        else:
            shutil.copy2(src, dest / rel)
    return dest


def install_image(dockerfile: Path, workdir: Path, pip_args: tuple[str, ...] = ()) -> Path:
    """Install the image's package from its file set alone into a clean venv (non-editable, as `pip install .`
    in the Dockerfile). Returns the venv's python."""
    app = image_context(dockerfile, workdir / "app")
    python = make_venv(workdir / "venv")
    args = dockerfile_pip_install(dockerfile)
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                          "--disable-pip-version-check", *args, *pip_args], cwd=app, capture_output=True, text=True,
                         timeout=1800)
    if out.returncode != 0:
        raise RehearsalError(f"{dockerfile}: pip install {' '.join(args)} from its file set failed:\n"
                             f"{(out.stderr or out.stdout)[-3000:]}")
    return python


def installed_workflows(python: Path) -> list[str]:
    code = ("import relayrag, pathlib; p = pathlib.Path(relayrag.__file__).parent / 'workflows'; "
            "print(sorted(x.name for x in p.glob('*.yaml')) if p.is_dir() else [])")
    out = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, timeout=120, cwd="/")
    if out.returncode != 0:
        raise RehearsalError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().replace("'", '"'))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_and_probe(argv: list[str], env: dict, url_path: str, port: int, log: Path, timeout: float = 180,
                    expect=(200,), headers: dict | None = None) -> int:
    """Start a command, wait (generously) until `url_path` answers one of `expect`, stop it. Returns the status.
    Raises RehearsalError with the log's tail when it exits or never answers."""
    import httpx
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RehearsalError(f"{argv[0]} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                r = httpx.get(f"http://127.0.0.1:{port}{url_path}", timeout=5, headers=headers or {})
                last = r.status_code
                if last in expect:
                    return last
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise RehearsalError(f"{' '.join(argv)}: {url_path} never answered {expect} (last {last}):\n"
                             f"{log.read_text(errors='replace')[-3000:]}")
    finally:
        import signal
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)


def _cmd_for(dockerfile: Path, python: Path, port: int, override: list[str] | None = None) -> list[str]:
    """The image's command with ${PORT} and 0.0.0.0 -> this port on 127.0.0.1, run from the venv's bin."""
    cmd = override or dockerfile_cmd(dockerfile)
    if cmd[:2] == ["sh", "-c"]:
        cmd = shlex.split(cmd[2].replace("${PORT}", str(port)))
    cmd = [c.replace("0.0.0.0", "127.0.0.1") for c in cmd if c != "exec"]
    return [str(python.parent / cmd[0]), *cmd[1:]]


def rehearse_images(workdir: Path, pip_args: tuple[str, ...] = ()) -> None:
    """Dashboard and assistant images: install from their file set, check the packaged workflow, start each
    command (the dashboard; the MCP gateway, then the assistant against it) and probe it."""
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RELAYRAG_", "VIRTUAL_ENV"))}
    base_env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", RELAYRAG_HOME=str(workdir / "home"))

    dash = REPO / "infra" / "dashboard" / "Dockerfile"
    t0 = time.monotonic()
    py = install_image(dash, workdir / "dashboard", pip_args)
    if "rag.yaml" not in installed_workflows(py):
        raise RehearsalError(f"{dash}: the installed package has no relayrag/workflows/rag.yaml")
    port = free_port()
    start_and_probe(_cmd_for(dash, py, port), {**base_env, "RELAYRAG_DASHBOARD_TOKENS": "rehearsal-token"},
                    "/healthz", port, workdir / "dashboard.log")
    print(f"image dashboard: installed from its file set, started, /healthz 200 ({time.monotonic() - t0:.0f} s)",
          flush=True)

    bot = REPO / "infra" / "assistant" / "Dockerfile"
    t0 = time.monotonic()
    py = install_image(bot, workdir / "assistant", pip_args)
    if "rag.yaml" not in installed_workflows(py):
        raise RehearsalError(f"{bot}: the installed package has no relayrag/workflows/rag.yaml")
    port = free_port()
    # the gateway's command (the mcp service's args in relayrag_infra/assistant.py), on the local engine
    gw = ["relayrag", "mcp", "--http", "--host", "0.0.0.0", "--port", str(port)]
    status = start_and_probe(_cmd_for(bot, py, port, gw), {**base_env, "RELAYRAG_MCP_TOKENS": "mcp-token"}, "/mcp",
                             port, workdir / "mcp.log", expect=(401, 403, 405, 406, 400))
    print(f"image assistant (mcp --http): installed, started, /mcp answered {status} without a token "
          f"({time.monotonic() - t0:.0f} s)", flush=True)


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
        rehearse_images(args.workdir / "images")
    print(f"{args.part}: ok in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
