"""RELAYRAG_COLPALI_MODEL without torch (relayrag.retrieval.page_model): page-image search is off unless a model is
configured; a tiny random test model (the marker relayrag.retrieval.colpali_tiny writes, or a tiny config) is
refused by settings outside the test suite with a clear message, and allowed with RELAYRAG_ALLOW_TEST_MODELS=1;
a real-size local folder is accepted and described with its layout."""

from __future__ import annotations

import json

import pytest

from relayrag.errors import ConfigError
from relayrag.retrieval import page_model
from relayrag.settings import Settings, load_settings


def model_folder(root, name: str, hidden: int, marker: bool = False, files=("model.safetensors",
                                                                           "preprocessor_config.json",
                                                                           "tokenizer.json")):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2_vl", "hidden_size": hidden,
                                                    "vision_config": {"hidden_size": hidden}}))
    for f in files:
        (folder / f).write_text("{}")
    if marker:
        (folder / page_model.TEST_MODEL_MARKER).write_text("{}")
    return folder


@pytest.fixture
def user(monkeypatch):
    """A user's process: the test suite's switch off."""
    monkeypatch.delenv(page_model.TEST_MODELS_ENV, raising=False)
    load_settings.cache_clear()
    yield monkeypatch
    load_settings.cache_clear()


def test_page_image_search_is_off_by_default(user):
    assert Settings().colpali_model == "" and not page_model.is_configured(Settings().colpali_model)
    from relayrag.retrieval.colpali import off_reason
    assert "no model configured" in off_reason("") and "RELAYRAG_COLPALI_MODEL" in off_reason("off")


@pytest.mark.parametrize("marker,hidden", [(True, 1536), (False, 32)])
def test_a_tiny_test_model_is_refused_outside_the_test_suite(user, tmp_path, marker, hidden):
    folder = model_folder(tmp_path, "tiny-colqwen2", hidden, marker=marker)
    user.setenv("RELAYRAG_COLPALI_MODEL", str(folder))
    with pytest.raises(ConfigError) as exc:
        load_settings()
    msg = str(exc.value)
    assert msg.startswith("invalid settings: RELAYRAG_COLPALI_MODEL=")
    assert "tiny random test model" in msg and "ranks pages at random" in msg and "test suite" in msg
    assert "Value error" not in msg
    user.setenv(page_model.TEST_MODELS_ENV, "1")  # what tests/colpali/conftest.py sets
    load_settings.cache_clear()
    assert load_settings().colpali_model == str(folder)


def test_a_real_size_local_folder_is_accepted_and_described_with_its_layout(user, tmp_path):
    folder = model_folder(tmp_path, "colqwen2-v1.0-merged", 1536)
    user.setenv("RELAYRAG_COLPALI_MODEL", str(folder))
    assert load_settings().colpali_model == str(folder)
    d = page_model.describe(str(folder))
    assert d["source"] == "local folder" and d["kind"] == "colqwen2" and d["path"] == str(folder.resolve())
    assert d["missing"] == [] and "config.json" in d["files"]
    partial = model_folder(tmp_path, "colpali-copy", 2048, files=())
    d = page_model.describe(str(partial))
    assert d["status"] == "missing" and "preprocessor_config.json" in d["missing"]
    hub = page_model.describe("vidore/colqwen2-v1.0-merged")
    assert hub["source"] == "hub id" and hub["path"].endswith("models--vidore--colqwen2-v1.0-merged")


def test_a_manifest_says_whether_its_page_vectors_serve_the_configured_model():
    key = page_model.model_key("m1")
    assert page_model.vectors_reason({"pages": 0}, "m1")[0] == "no_images"
    assert page_model.vectors_reason({"pages": 3}, "m1")[0] == "no_vectors"
    assert page_model.vectors_reason({"pages": 3, "page_vectors": {"model": "m1", "model_key": key}}, "m1") is None
    assert page_model.vectors_reason({"pages": 3, "page_vectors": {"model": "m1", "model_key": key}},
                                     "m2")[0] == "other_model"
