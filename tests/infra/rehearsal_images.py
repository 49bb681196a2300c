"""The deploy rehearsal's images part (`python -m tests.infra.rehearsal images`, issue 29): each Cloud Run image's
file set, exactly what its Dockerfile COPYs (`dockerfile_copy_set`), installed with its Dockerfile's `pip install`
line into a clean venv (`install_image`), its packaged workflow checked, its commands started and probed
(`rehearse_images`). PyPI only; no Docker, no Google Cloud."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.infra.rehearsal import REPO, WHEELHOUSE, RehearsalError, _pip_install, make_venv


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


def _build_requires(app: Path) -> tuple[str, ...]:
    """[build-system] requires of the image's pyproject.toml (pip installs them into the build's own env)."""
    import tomllib
    data = tomllib.loads((app / "pyproject.toml").read_text(encoding="utf-8"))
    return tuple(data.get("build-system", {}).get("requires", ()))


def install_image(dockerfile: Path, workdir: Path, pip_args: tuple[str, ...] = (),
                  wheelhouse: Path | None = WHEELHOUSE) -> Path:
    """Install the image's package from its file set alone into a clean venv (non-editable, as `pip install .`
    in the Dockerfile; through `wheelhouse` as install_requirements does, the build requirements included).
    Returns the venv's python."""
    app = image_context(dockerfile, workdir / "app")
    python = make_venv(workdir / "venv")
    args = dockerfile_pip_install(dockerfile)
    _pip_install(python, args, pip_args, wheelhouse, workdir / "install-report.json", app,
                 extra_downloads=_build_requires(app))
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


@contextlib.contextmanager
def running(argv: list[str], env: dict, url_path: str, port: int, log: Path, timeout: float = 180,
            expect=(200,), headers: dict | None = None):
    """Start a command, wait (generously) until `url_path` answers one of `expect`, yield that status while it
    runs, then stop it. Raises RehearsalError with the log's tail when it exits or never answers."""
    import signal

    import httpx
    with open(log, "wb") as fh:
        proc = subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        last = None
        while True:
            if proc.poll() is not None:
                raise RehearsalError(f"{argv[0]} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                last = httpx.get(f"http://127.0.0.1:{port}{url_path}", timeout=5, headers=headers or {}).status_code
            except httpx.HTTPError:
                pass
            if last in expect:
                break
            if time.monotonic() > deadline:
                raise RehearsalError(f"{' '.join(argv)}: {url_path} never answered {expect} (last {last}):\n"
                                     f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(1)
        yield last
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def start_and_probe(argv: list[str], env: dict, url_path: str, port: int, log: Path, timeout: float = 180,
                    expect=(200,), headers: dict | None = None) -> int:
    """`running`, stopped as soon as it answered: returns the status."""
    with running(argv, env, url_path, port, log, timeout, expect, headers) as status:
        return status


def _cmd_for(dockerfile: Path, python: Path, port: int, override: list[str] | None = None) -> list[str]:
    """The image's command with ${PORT} and 0.0.0.0 -> this port on 127.0.0.1, run from the venv's bin."""
    cmd = override or dockerfile_cmd(dockerfile)
    if cmd[:2] == ["sh", "-c"]:
        cmd = shlex.split(cmd[2].replace("${PORT}", str(port)))
    cmd = [c.replace("0.0.0.0", "127.0.0.1") for c in cmd if c != "exec"]
    return [str(python.parent / cmd[0]), *cmd[1:]]


def rehearse_images(workdir: Path, pip_args: tuple[str, ...] = ()) -> None:
    """Dashboard and assistant images: install from their file set, check the packaged workflow, start each
    command and probe it: the dashboard's /healthz; the MCP gateway (refusing a request without its token), then
    the image's own command, chat-serve, against it: a POST /chat without a token refused, one with a token
    answered from a document the image's CLI ingested (`probe_chat`)."""
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
    # one document in the gateway's collection, ingested by the image's own CLI
    docs = workdir / "assistant-docs"
    shutil.rmtree(docs, ignore_errors=True)
    docs.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "policies" / CHAT_DOC, docs / CHAT_DOC)
    out = subprocess.run([str(py.parent / "relayrag"), "ingest", str(docs), "-c", "pol", "--no-progress"],
                         env=base_env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RehearsalError(f"{bot}: `relayrag ingest` from the image's install failed:\n{out.stderr[-3000:]}")
    gw_port, chat_port = free_port(), free_port()
    # the gateway's command (the mcp service's args in relayrag_infra/assistant.py), on the local engine
    gw = ["relayrag", "mcp", "--http", "--host", "0.0.0.0", "--port", str(gw_port)]
    with running(_cmd_for(bot, py, gw_port, gw), {**base_env, "RELAYRAG_MCP_TOKENS": "mcp-token"}, "/mcp", gw_port,
                 workdir / "mcp.log", expect=(401, 403, 405, 406, 400)) as status:
        print(f"image assistant (mcp --http): installed, started, /mcp answered {status} without a token "
              f"({time.monotonic() - t0:.0f} s)", flush=True)
        # the image's own command, chat-serve, against that gateway as the deployed service is (its env in
        # relayrag_infra/assistant.py; threads in SQLite here, in Firestore or Postgres in the cloud)
        chat_env = {**base_env, "RELAYRAG_AGENT_MCP_URL": f"http://127.0.0.1:{gw_port}/mcp",
                    "RELAYRAG_AGENT_MCP_TOKEN": "mcp-token", "RELAYRAG_AGENT_TOKENS": "chat-token",
                    "RELAYRAG_AGENT_CHECKPOINT": "sqlite", "RELAYRAG_HOME": str(workdir / "chat-home")}
        with running(_cmd_for(bot, py, chat_port), chat_env, "/healthz", chat_port, workdir / "chat-serve.log"):
            final = probe_chat(chat_port, workdir / "chat-serve.log")
    print(f"image assistant (chat-serve): started, POST /chat without a token 401, with one: {final['mode']} "
          f"answered citing {CHAT_DOC} ({time.monotonic() - t0:.0f} s): {final['answer'][:160]!r}", flush=True)


CHAT_DOC = "travel-policy-2019.md"
CHAT_QUESTION = "What is the daily meal allowance for business travel?"


def probe_chat(port: int, log: Path) -> dict:
    """POST /chat to a running chat-serve: without a token it must answer 401; with one, a stream of SSE events
    ending in `final` whose answer cites CHAT_DOC (no LLM is configured: the deterministic router runs the rag
    tool through the gateway). Returns the final event's data; raises RehearsalError otherwise."""
    import httpx
    url = f"http://127.0.0.1:{port}/chat"
    body = {"message": CHAT_QUESTION, "collection": "pol"}
    r = httpx.post(url, json=body, timeout=30)
    if r.status_code != 401:
        raise RehearsalError(f"chat-serve answered {r.status_code} to POST /chat without a token (expected 401)")
    events: list[tuple[str, dict]] = []
    with httpx.stream("POST", url, json=body, timeout=300, headers={"Authorization": "Bearer chat-token"}) as r:
        if r.status_code != 200:
            raise RehearsalError(f"POST /chat with the token answered {r.status_code}: {r.read()[:500]!r}\n"
                                 f"{log.read_text(errors='replace')[-2000:]}")
        name = ""
        for line in r.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line.split(":", 1)[1])))
    final = [data for name, data in events if name == "final"]
    if not final or not final[-1].get("answer") or CHAT_DOC not in json.dumps(final[-1]):
        raise RehearsalError(f"POST /chat gave no final answer citing {CHAT_DOC}: events {[n for n, _ in events]}, "
                             f"last {events[-1] if events else None}\n{log.read_text(errors='replace')[-2000:]}")
    return final[-1]
