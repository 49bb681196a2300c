"""Page-image search that never makes an answer worse (issue 26), with the `colpali` extra installed:

- a tiny random test model configured by a user (outside the test suite: no RELAYRAG_ALLOW_TEST_MODELS) is
  refused by ingest with a clear message, and nothing is indexed;
- without a configured model, a visual question is answered from text and the answer says page-image search is
  off and how to turn it on — the same answer as in a process where the extra is not importable at all;
- without a configured model, neither text nor visual questions call the model loader, even in a collection
  that has page vectors (a timing-free check: the loader is replaced by one that records and raises);
- with a model, it loads once per process (two collections, repeated questions) and each version's page index
  once;
- fusion with a page scorer that ranks pages at random never moves a text question's correct top passage down,
  and the answer is the one text retrieval alone gives;
- `relayrag model` lists the page-image model and where it loads from (a local folder with the real layout).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.retrieval import colpali
from relayrag.retrieval.colpali import PageHit
from relayrag.stage_registry import STAGES
from relayrag.stages.base import execute
from tests.pages_doubles import use_doubles, write_manual, write_png

REPO = Path(__file__).resolve().parents[2]
RELAYRAG = Path(sys.executable).parent / "relayrag"
PDF = REPO / "examples" / "pdfs" / "amt_handbook_sample.pdf"
VISUAL_Q = "Which figure shows self-locking nuts?"

# The CLI with torch, byaldi and colpali_engine made unimportable: what a user without the extra runs.
WITHOUT_EXTRA = """
import sys
for name in ("torch", "byaldi", "colpali_engine"):  # None in sys.modules: import fails, find_spec returns None
    sys.modules[name] = None
from relayrag.cli import app
sys.argv = ["relayrag", *sys.argv[1:]]
app()
"""


def user_env(home: Path, **env: str) -> dict:
    """A user's environment: the test suite's switch for tiny models removed."""
    e = {k: v for k, v in os.environ.items() if k not in ("RELAYRAG_ALLOW_TEST_MODELS", "RELAYRAG_COLPALI_MODEL")}
    return {**e, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1", **env}


def cli(home: Path, *args: str, without_extra: bool = False, **env: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", WITHOUT_EXTRA, *args] if without_extra else [str(RELAYRAG), *args]
    return subprocess.run(cmd, env=user_env(home, **env), capture_output=True, text=True, timeout=900)


def test_a_tiny_test_model_configured_by_a_user_is_refused_by_ingest(tmp_path, tiny_models):
    home = tmp_path / "home"
    p = cli(home, "ingest", str(PDF), "--collection", "m", RELAYRAG_COLPALI_MODEL=str(tiny_models["colqwen2"]))
    assert p.returncode != 0
    msg = " ".join((p.stderr + p.stdout).split())
    assert "tiny random test model" in msg and "RELAYRAG_COLPALI_MODEL" in msg and "test suite" in msg
    assert "ranks pages at random" in msg
    assert not (home / "blobs" / "snapshots").exists()  # nothing indexed
    # `relayrag model` says the same instead of failing
    p = cli(home, "model", "--json", RELAYRAG_COLPALI_MODEL=str(tiny_models["colqwen2"]))
    assert p.returncode == 0, p.stderr[-2000:]
    page = next(m for m in json.loads(p.stdout)["models"] if m["setting"] == "RELAYRAG_COLPALI_MODEL")
    assert page["status"] == "refused" and "tiny random test model" in page["message"]


def test_relayrag_model_lists_a_local_model_folder_with_the_real_layout(tmp_path, tiny_models):
    folder = tiny_models["colqwen2"]
    p = subprocess.run([str(RELAYRAG), "model", "--json"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "RELAYRAG_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1",
                            "RELAYRAG_COLPALI_MODEL": str(folder)})
    assert p.returncode == 0, p.stderr[-2000:]
    page = next(m for m in json.loads(p.stdout)["models"] if m["setting"] == "RELAYRAG_COLPALI_MODEL")
    assert page["status"] == "ready" and page["source"] == "local folder" and page["kind"] == "colqwen2"
    assert page["path"] == str(folder.resolve()) and page["missing"] == []
    assert {"config.json", "model.safetensors", "preprocessor_config.json", "tokenizer.json"} <= set(page["files"])
    p = subprocess.run([str(RELAYRAG), "model"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "RELAYRAG_HOME": str(tmp_path / "home"),
                            "RELAYRAG_COLPALI_MODEL": str(folder)})
    assert p.returncode == 0 and str(folder.resolve()) in p.stdout and "local folder" in p.stdout


@pytest.mark.parametrize("question,note", [
    (VISUAL_Q, "Page-image search is off"),
    ("セルフロックナットを示す図はどれですか", "ページ画像検索はオフ"),
])
def test_without_a_model_a_visual_question_is_answered_from_text_as_without_the_extra(tmp_path, question, note):
    home = tmp_path / "home"
    p = cli(home, "ingest", str(PDF), "--collection", "m")
    assert p.returncode == 0, p.stderr[-3000:]
    with_extra = cli(home, "ask", question, "--collection", "m", "--json")
    without = cli(home, "ask", question, "--collection", "m", "--json", without_extra=True)
    assert with_extra.returncode == 0 and without.returncode == 0, (with_extra.stderr + without.stderr)[-3000:]
    a, b = json.loads(with_extra.stdout), json.loads(without.stdout)
    assert a["route"] == "visual" and a["page_search"]["cause"] == "no_model"
    assert "not set" in a["page_search"]["reason"] and "not installed" in b["page_search"]["reason"]
    assert note in a["answer"] and "RELAYRAG_COLPALI_MODEL" in a["answer"]
    assert a["answer"] == b["answer"]
    assert [(c["doc"], c["page"], c["quote"]) for c in a["citations"]] == \
        [(c["doc"], c["page"], c["quote"]) for c in b["citations"]]
    assert a["found"] == b["found"] and a["grounded"] == b["grounded"]
    if question == VISUAL_Q:  # the text route finds the figure caption
        assert a["found"] and "Self-locking nuts" in a["answer"]


def _counting_loader(monkeypatch) -> list:
    calls: list = []

    def loader(*a, **kw):
        calls.append(a)
        raise AssertionError("the page-image model loader was called")
    monkeypatch.setattr(colpali, "load_rag", loader)
    return calls


def test_without_a_model_no_question_calls_the_loader_even_where_page_vectors_exist(tmp_path, tiny_models,
                                                                                   home, monkeypatch):
    from relayrag.context import default_context, set_default_context
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_COLPALI_MODEL", str(tiny_models["colpali"]))
    monkeypatch.setenv("RELAYRAG_COLPALI_DEVICE", "cpu")
    load_settings.cache_clear()
    write_manual(tmp_path / "docs")
    s = ingest(default_context(), tmp_path / "docs", "m").to_dict()
    assert s["pages"]["embedded"] == 3  # the collection has page vectors
    monkeypatch.delenv("RELAYRAG_COLPALI_MODEL")  # the user turns page-image search off
    load_settings.cache_clear()
    set_default_context(None)
    calls = _counting_loader(monkeypatch)
    r = ask("What must be checked every week?", "m")
    assert r["route"] == "rag" and "colpali_search" not in [st["name"] for st in r["stages"]]
    assert r["found"] and "oil level" in r["answer"]
    r = ask("Which diagram shows the pump motor wiring?", "m")
    step = next(st for st in r["stages"] if st["name"] == "colpali_search")
    assert r["route"] == "visual" and step["method"] == "text fallback"
    assert r["page_search"]["cause"] == "no_model" and "Page-image search is off" in r["answer"]
    assert calls == []


def test_with_a_model_it_loads_once_per_process_and_each_page_index_once_per_version(tmp_path, tiny_models, home,
                                                                                      monkeypatch):
    from relayrag.context import default_context
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_COLPALI_MODEL", str(tiny_models["colqwen2"]))
    monkeypatch.setenv("RELAYRAG_COLPALI_DEVICE", "cpu")
    load_settings.cache_clear()
    monkeypatch.setattr(colpali, "_models", {})  # a fresh process's model cache
    before = colpali.loads
    indexes: list = []
    real_index = colpali.ByaldiIndex

    def counted(*a, **kw):
        indexes.append(a[0])
        return real_index(*a, **kw)
    monkeypatch.setattr(colpali, "ByaldiIndex", counted)
    ctx = default_context()
    write_manual(tmp_path / "a")
    write_png(tmp_path / "b" / "photo.png", "green", "PUMP HOUSE")
    ingest(ctx, tmp_path / "a", "a")
    ingest(ctx, tmp_path / "b", "b")
    for _ in range(2):
        for c in ("a", "b"):
            r = ask("Which figure shows the pump?", c)
            assert r["page_search"]["status"] == "on", r["page_search"]
    assert colpali.loads - before == 1  # one model for ingestion and both collections' questions
    assert len(indexes) == 2  # one page index per (collection, version), not per question


class RandomScorer:
    """PageScorer double that ranks a version's pages at random (seeded): what a model without retrieval
    quality does."""

    model_id = "test-colour-double"

    def __init__(self, folder: Path, seed: int):
        self.pages = json.loads((Path(folder) / "index.json").read_text())
        self.rng = random.Random(seed)

    def search(self, query: str, k: int) -> list[PageHit]:
        pages = self.pages[:]
        self.rng.shuffle(pages)
        return [PageHit(sha256=p["sha256"], source=p["source"], doc=p["doc"], page=int(p["page"]),
                        score=1.0 - i / 100) for i, p in enumerate(pages[:k])]


TEXT_QUESTIONS = ["What must be checked every week?", "What is wired to the pump motor?",
                  "What is the cross-section of?"]


def test_fusion_with_a_random_page_scorer_never_moves_the_correct_text_passage_down(ctx, tmp_path):
    docs = tmp_path / "docs"
    write_manual(docs)
    for n, colour in enumerate(("red", "blue", "green", "black")):
        write_png(docs / f"photo-{n}.png", colour, f"SITE PHOTO {n}")
    use_doubles(ctx)
    ingest(ctx, docs, "m")
    snap = ctx.snapshot("m")
    # the answers text retrieval alone gives (page-image search off for this context)
    ctx.page_model_id, ctx.page_scorer_factory = None, None
    text_only = {q: ask(q, "m") for q in TEXT_QUESTIONS}
    assert all(r["found"] and r["route"] == "rag" for r in text_only.values())
    use_doubles(ctx)
    for seed in range(12):
        ctx._page_scorers.clear()
        ctx.page_scorer_factory = lambda c, v, folder, seed=seed: RandomScorer(folder, seed)
        for i, q in enumerate(TEXT_QUESTIONS):
            run_id = f"f{seed}-{i}"
            assert execute(STAGES["classify"], {"run_id": run_id, "question": q, "collection": "m"}, ctx)[0] == 200
            status, out = execute(STAGES["retrieve"], {"run_id": run_id, "attempt": 0, "arm": ""}, ctx)
            assert status == 200 and out["page_vectors"] == 1
            text_top = ctx.docstore.get_run(run_id)["candidates"][0]["row"]
            n_text = len(ctx.docstore.get_run(run_id)["candidates"])
            status, out = execute(STAGES["colpali_search"], {"run_id": run_id, "attempt": 1, "mode": "fuse"}, ctx)
            assert status == 200 and out["route"] == "fused"
            fused = ctx.docstore.get_run(run_id)["candidates"]
            assert fused[0]["row"] == text_top, (seed, q, snap.chunks[fused[0]["row"]]["text"])
            assert len(fused) >= n_text  # no text candidate dropped
            # end to end: the answer is the one text retrieval alone gives
            r = ask(q, "m")
            assert r["route"] == "rag" and "colpali_search" in [st["name"] for st in r["stages"]]
            assert r["answer"] == text_only[q]["answer"], (seed, q)
            assert [(c["doc"], c["page"]) for c in r["citations"]] == \
                [(c["doc"], c["page"]) for c in text_only[q]["citations"]]
