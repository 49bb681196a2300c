"""Shared fixtures: an isolated RELAYRAG_HOME per test, a real embedded context, a scripted LLM double."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


class ScriptedLLM:
    """A real implementation of relayrag.backends.llm.LLM for tests: replies come from a function of the
    messages (or a queue), and every call is recorded."""

    name = "scripted"

    def __init__(self, reply):
        self.reply = reply
        self.calls: list[dict] = []

    def complete(self, messages, *, temperature=0.0, max_tokens=512, json_schema=None) -> str:
        self.calls.append({"messages": messages, "json_schema": json_schema})
        out = self.reply(messages, json_schema) if callable(self.reply) else self.reply.pop(0)
        return out if isinstance(out, str) else json.dumps(out)


def sql_route_reply(sqls, answer: str = "There are 5 customers in Brazil.", tables=("Customer",),
                    strict: bool = False):
    """A ScriptedLLM reply for the sql route, by the JSON schema asked for: route → sql; SQL generation →
    the next of `sqls` (a str: that one every time); the answer sentence → `answer`. strict: any other
    call fails the test (otherwise it gets `{"answer": answer}`)."""
    queue = [sqls] if isinstance(sqls, str) else list(sqls)

    def reply(messages, schema):
        props = (schema or {}).get("properties", {})
        if "route" in props:
            return {"route": "sql"}
        if "sql" in props:
            sql = queue[0] if isinstance(sqls, str) else queue.pop(0)
            return {"sql": sql, "tables": list(tables), "assumptions": []}
        if strict and "answer" not in props:
            raise AssertionError(f"unexpected call: {messages}")
        return {"answer": answer}
    return reply


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    from relayrag.context import set_default_context
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_HOME", str(tmp_path / "home"))
    load_settings.cache_clear()
    set_default_context(None)
    yield tmp_path / "home"
    load_settings.cache_clear()
    set_default_context(None)


@pytest.fixture
def ctx(home):
    from relayrag.context import default_context
    return default_context()


@pytest.fixture
def make_llm_ctx(home):
    """ctx whose LLM is a ScriptedLLM(reply); installed as the process default so stages see it."""
    from relayrag.context import StageContext, build_blobstore, build_docstore, set_default_context
    from relayrag.settings import load_settings

    def make(reply) -> tuple:
        s = load_settings()
        llm = ScriptedLLM(reply)
        c = StageContext(s, build_blobstore(s), build_docstore(s), llm=llm)
        set_default_context(c)
        return c, llm
    return make


@pytest.fixture(scope="session")
def embedder():
    from relayrag.backends.embedder import get_embedder
    return get_embedder("minilm-int8")


def write_docs(folder: Path, docs: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def small_corpus(tmp_path) -> Path:
    return write_docs(tmp_path / "docs", {
        "solar.md": "# Solar power\n\nSolar panels convert sunlight into electricity using photovoltaic cells. "
                    "A typical residential panel produces about 400 watts at peak sun.\n\n"
                    "Panels lose roughly 0.5 percent of their output per year as they age.",
        "bees.txt": "Honey bees communicate the direction of flowers with a waggle dance. "
                    "A colony can contain up to 60,000 worker bees in summer. "
                    "The queen lays up to 2,000 eggs per day.",
        "rail.html": "<html><head><title>Rail gauge</title></head><body><p>The standard rail gauge is "
                     "1,435 millimetres. It is used by about 55 percent of the world's railway lines.</p></body></html>",
        "tokyo.txt": "東京都の人口は約1400万人です。東京タワーの高さは333メートルです。"
                     "富士山は日本で最も高い山で、標高は3776メートルです。",
    })


@pytest.fixture
def chinook_shop(home, ctx) -> str:
    """Collection `shop` as the README builds it: the Chinook warehouse with its SQL config (examples/chinook)
    and the store's refund policy PDF (examples/shop-policies)."""
    from relayrag.service import Service
    svc = Service(ctx)
    svc.warehouse_load("shop", [EXAMPLES / "chinook" / "chinook.sqlite"],
                       config=EXAMPLES / "chinook" / "relayrag.sql.yaml")
    assert not svc.ingest(EXAMPLES / "shop-policies", "shop").failed
    return "shop"
