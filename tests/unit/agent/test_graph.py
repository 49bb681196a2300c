"""The assistant's graph driven by a scripted LangChain chat model against the real MCP gateway in-process:
preprocess → analysis (ReAct over MCP tools) → structured result, its repair round, summarisation at the
budget, the supervisor's sql → documents chain, the no-LLM router, and prompt injection in a document."""

from __future__ import annotations

import asyncio

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from relayrag.agent.assistant import Assistant
from relayrag.mcp.server import build_server
from tests.agent_double import ScriptedChatModel, call, say, tool_results
from tests.conftest import sql_route_reply, write_docs
from tests.unit.agent.conftest import BEES_Q, INJECTION, TWO_HOP_Q, run_turns, settings_for


def result_call(**fields) -> AIMessage:
    return call("AnalysisResult", **fields)


def make(home, model, **overrides):
    return lambda: Assistant(collection=overrides.pop("collection", "docs"), model=model, server=build_server(),
                             settings=settings_for(home, **overrides))


def kinds(events):
    return [e["event"] if e["event"] != "node" else f"node:{e['node']}" for e in events]


def test_analysis_turn_calls_ask_over_mcp_and_returns_a_structured_result(home, bees):
    model = ScriptedChatModel(script=[
        call("ask", question=BEES_Q, collection="docs"),
        say("Up to 60,000 worker bees (bees.txt, page 1)."),
        result_call(summary="A colony has up to 60,000 worker bees in summer.", insights=["The summer peak."],
                    recommendations=[], sql="SELECT 60000",  # no SQL ran: dropped
                    citations=[{"document": "bees.txt", "page": 1}, {"document": "invented.pdf", "page": 9}])])
    [events] = run_turns(make(home, model), [BEES_Q])
    assert kinds(events) == ["start", "node:preprocess", "tool_call", "node:agent", "tool_result", "node:tools",
                             "node:agent", "node:structure", "final"]
    final = events[-1]
    assert final["mode"] == "analysis" and final["note"] is None and final["result"]["sql"] is None
    cites = final["result"]["citations"]
    # the invented source is dropped; the tool's citation keeps the run that found it
    assert [(c["document"], c["page"]) for c in cites] == [("bees.txt", 1)] and cites[0]["run_id"]
    assert "60,000" in final["answer"] and "invented.pdf" not in final["answer"]
    # the model was offered the read tools only (no sql_query: this collection has no warehouse), and saw the
    # tool's real answer
    offered = set(model.calls[0]["tools"])
    assert {"ask", "search", "list_collections", "get_run", "classify"} <= offered and "sql_query" not in offered
    assert not offered & {"ingest", "delete_document", "rag"}
    seen = tool_results(model.calls[1]["messages"])
    assert seen[0]["name"] == "ask" and "60,000" in seen[0]["result"]["answer"]


def test_a_structured_result_that_fails_validation_is_repaired_once(home, bees):
    model = ScriptedChatModel(script=[
        call("ask", question=BEES_Q, collection="docs"), say("60,000 bees."),
        result_call(insights="not a list"),  # summary missing, insights not a list
        result_call(summary="Up to 60,000 worker bees.", insights=[], recommendations=[], citations=[])])
    [events] = run_turns(make(home, model), [BEES_Q])
    repairs = [e for e in events if e["event"] == "repair"]
    assert len(repairs) == 1 and "summary" in repairs[0]["error"]
    final = events[-1]
    assert final["result"]["summary"] == "Up to 60,000 worker bees." and final["note"] is None
    # empty citations from the model: every citation the tools returned is kept
    assert [c["document"] for c in final["result"]["citations"]] == ["bees.txt"]
    repair_prompt = model.calls[-1]["messages"][-1]
    assert isinstance(repair_prompt, HumanMessage) and "failed validation" in repair_prompt.text


def test_two_invalid_structured_results_give_the_plain_answer_and_say_so(home, bees):
    model = ScriptedChatModel(script=[
        call("ask", question=BEES_Q, collection="docs"), say("Up to 60,000 worker bees."),
        say("no tool call here"), result_call(summary="")])
    [events] = run_turns(make(home, model), [BEES_Q])
    final = events[-1]
    assert final["result"] is None and "failed validation twice" in final["note"]
    assert final["answer"].startswith("Up to 60,000 worker bees.") and "bees.txt" in final["answer"]


def test_history_past_the_budget_is_summarised_and_the_raw_turns_stay_in_the_checkpoint(home, bees):
    long_answer = "Bees are fascinating. " * 60  # ~330 tokens per answer: turn 3 passes a 400-token budget

    def turn_script():
        return [call("search", query="bees", collection="docs", k=2), say(long_answer),
                result_call(summary=long_answer[:1500], insights=[], recommendations=[], citations=[])]
    model = ScriptedChatModel(script=[*turn_script(), *turn_script(), say("SUMMARY: the user asked about bees."),
                                      *turn_script()])
    factory = make(home, model, agent_history_tokens=400)

    async def go():
        async with factory() as a:
            events = []
            for i in (1, 2, 3):
                events.append([e async for e in a.turn(f"Tell me about bees, part {i}", thread_id="long")])
            return events, await a.history("long"), (await a.graph.aget_state(
                {"configurable": {"thread_id": "long"}})).values
    events, history, state = asyncio.run(go())
    assert not any(e["event"] == "summary" for e in events[0] + events[1])
    assert [e for e in events[2] if e["event"] == "summary"][0]["messages"] > 0
    assert state["summary"] == "SUMMARY: the user asked about bees." and state["summarized"] > 0
    # the summariser saw turn 1; the next model call sees the summary, not turn 1's raw question
    summariser = next(c for c in model.calls if "Summarise" in c["messages"][0].text)
    assert "part 1" in summariser["messages"][1].text
    after = model.calls[model.calls.index(summariser) + 1]["messages"]
    assert isinstance(after[0], SystemMessage) and "SUMMARY: the user asked about bees." in after[0].text
    assert not any("part 1" in m.text for m in after[1:])
    # the checkpoint keeps every raw message
    assert [m["text"] for m in history if m["role"] == "human"] == [f"Tell me about bees, part {i}" for i in (1, 2, 3)]


def test_supervisor_chains_sql_then_documents_and_keeps_both_citation_sets(home, shop, make_llm_ctx):
    sql = ("SELECT c.FirstName, c.LastName, SUM(i.Total) AS spent FROM Invoice i JOIN Customer c ON c.CustomerId = "
           "i.CustomerId WHERE i.InvoiceDate >= '2023-01-01' AND i.InvoiceDate < '2024-01-01' GROUP BY 1, 2 "
           "ORDER BY spent DESC LIMIT 3")
    make_llm_ctx(sql_route_reply(sql, "The top customers of 2023 spent the most.", tables=["Invoice", "Customer"]))
    question = "Which customers bought the most in 2023, and what does our refund policy say about them?"

    def tables_answer(messages, tools):
        rows = tool_results(messages)[-1]["result"]["rows"]
        return say(f"Top customers in 2023: {rows}")

    model = ScriptedChatModel(script=[
        call("Plan", next="tables", task="Which customers spent the most in 2023?"),
        call("sql_query", question="Which customers spent the most in 2023?", collection="shop"),
        tables_answer,
        call("Plan", next="documents", task="What does the refund policy say about customers who spend a lot?"),
        call("search", query="refund policy premium customers", collection="shop", k=3),
        say("Premium customers (over 40 dollars a year) may return purchases within 60 days."),
        call("Plan", next="finish", task=""),
        # the aggregator "forgets" the document citation: the code keeps every hop's citations
        result_call(summary="The top 2023 customers are premium customers: 60-day refunds.", insights=[],
                    recommendations=["Tell them about the 60-day window."],
                    citations=[{"kind": "sql", "document": "Invoice, Customer"}])])
    [events] = run_turns(make(home, model, collection="shop"), [question])
    final = events[-1]
    assert final["mode"] == "supervisor", final
    assert [h["specialist"] for h in final["hops"]] == ["tables", "documents"]
    assert [e["specialist"] for e in events if e["event"] == "hop"] == ["tables", "documents"]
    cites = final["result"]["citations"]
    sql_cites = [c for c in cites if c["kind"] == "sql"]
    doc_cites = [c for c in cites if c["kind"] == "document"]
    assert sql_cites and sql_cites[0]["sql"].startswith("SELECT") and sql_cites[0]["run_id"]
    assert ("refund-policy.md", 1) in {(c["document"], c["page"]) for c in doc_cites}
    assert final["result"]["sql"].startswith("SELECT")
    # the documents hop saw the tables hop's result
    docs_hop_call = model.calls[4]["messages"]
    assert "Top customers in 2023" in docs_hop_call[0].text and set(model.calls[4]["tools"]) == {"ask", "search",
                                                                                               "get_run"}


def test_without_an_llm_the_router_answers_with_one_tool_and_says_so(home, bees):
    [hello, q, who] = run_turns(make(home, None), ["hello", BEES_Q, "what did I ask?"])
    assert hello[-1]["mode"] == "direct" and not any(e["event"] == "tool_call" for e in hello)
    calls = [e for e in q if e["event"] == "tool_call"]
    assert [c["name"] for c in calls] == ["ask"]
    final = q[-1]
    assert final["mode"] == "router" and "No LLM is configured" in final["note"] and "'rag'" in final["note"]
    assert "60,000" in final["answer"] and final["result"]["citations"][0]["document"] == "bees.txt"
    assert who[-1]["mode"] == "direct" and BEES_Q in who[-1]["answer"] and "hello" in who[-1]["answer"]


def asked(events) -> list[str]:
    return [e["args"].get("question") for e in events if e["event"] == "tool_call"]


def test_without_an_llm_a_follow_up_is_rewritten_into_a_standalone_question_not_glued_to_the_previous(home, bees):
    first_q = "How much power does a residential solar panel produce?"
    [first, follow, queen, eggs, drones] = run_turns(make(home, None), [
        first_q, "and how much output do they lose per year?", BEES_Q, "And the queen?", "What about the drones?"])
    assert "400 watts" in first[-1]["answer"]
    # "they" is the previous question's subject; the question sent is the follow-up's, not both glued together
    assert asked(follow) == ["How much output do a residential solar panel lose per year?"]
    final = follow[-1]
    assert "follow-up" in final["note"] and "“they” as “a residential solar panel”" in final["note"]
    assert final["answer"].startswith("(Asked as: How much output do a residential solar panel lose per year?)")
    assert "0.5 percent" in final["answer"] and "400 watts" not in final["answer"]
    assert final["result"]["citations"][0]["document"] == "solar.md" and final["result"]["citations"][0]["run_id"]
    # an elliptical follow-up carries the previous subject and gets its own answer, not the previous one again
    assert "60,000" in queen[-1]["answer"]
    # the rewrite got the previous answer again (its words outweigh "queen"), and so did its new word with the
    # subject's keywords (the subject names nothing): the reply says not found rather than repeat 60,000
    # (the queen's sentence is there; the extractive answer stage ranks the worker bees' first — a known limit)
    assert asked(eggs) == ["What about the queen for worker bees?", "queen worker bees"]
    assert "could not find an answer to “What about the queen for worker bees?”" in eggs[-1]["answer"]
    assert "does not mention queen" in eggs[-1]["answer"] and "60,000" not in eggs[-1]["answer"]
    assert not eggs[-1]["result"]["citations"] and "earlier question" in eggs[-1]["note"]
    # one the documents cannot answer: not found, and neither earlier answer
    assert asked(drones)[0] == "What about the drones for worker bees?"
    assert "could not find" in drones[-1]["answer"] and not drones[-1]["result"]["citations"]
    assert "2,000 eggs" not in drones[-1]["answer"] and "60,000" not in drones[-1]["answer"]


def test_without_an_llm_a_japanese_follow_up_is_answered_in_japanese_and_an_unanswerable_one_is_not_found(home, bees):
    [first, fuji, built] = run_turns(make(home, None), ["東京タワーの高さは？", "富士山は？", "それはいつ建てられましたか？"])
    assert "333メートル" in first[-1]["answer"]
    assert asked(fuji) == ["富士山の高さは？"]
    answer = fuji[-1]["answer"]
    assert answer.startswith("（質問として: 富士山の高さは？）\n富士山は日本で最も高い山で、標高は3776メートルです。")
    assert fuji[-1]["result"]["citations"][0]["document"] == "tokyo.txt"
    # "it" is the thread's subject (富士山); the documents say nothing about building it: not found, in Japanese.
    # The first query's not-found offers the 富士山 sentence as related reading (it holds no time: wh_type), so the
    # agent tries once more with the new word and the subject's keywords, and that is not answered either. (The
    # predicate gate used to refuse it outright because tokyo.txt's one line of three sentences was read as the
    # page's heading, which said every term but 建て; a page heading now stops at a line holding 。.)
    assert asked(built) == ["富士山はいつ建てられましたか？", "建 富士山"]
    assert "見つかりませんでした" in built[-1]["answer"] and "3776" not in built[-1]["answer"]
    assert not built[-1]["result"]["citations"]


def test_without_an_llm_an_ordinal_follow_up_picks_the_item_of_the_previous_table_result(home, chinook_shop):
    [countries, first, second] = run_turns(make(home, None, collection="shop"), [
        "Which three countries have the most customers?", "What does our refund policy say about the first one?",
        "And the second one?"])
    assert "USA | 13" in countries[-1]["answer"]
    # the rewrite's own words ("our", "say") no longer refuse the good passage: in this one-document collection
    # the smoothed idf keeps "refund" and "USA" from weighing nothing (before: refused, then its keywords asked)
    assert asked(first) == ["What does our refund policy say about USA?"]
    assert "Customers in the USA" in first[-1]["answer"]
    assert asked(second)[0] == "What does our refund policy say about Canada?"
    assert "Customers in Canada" in second[-1]["answer"] and "USA" not in second[-1]["answer"].split(")", 1)[1]
    assert (second[-1]["result"]["citations"][0]["document"], second[-1]["result"]["citations"][0]["page"]) == \
        ("refund-policy.pdf", 2)


def test_without_an_llm_a_follow_up_of_a_two_hop_question_continues_its_document_part(home, chinook_shop):
    [two_hop, germany, second] = run_turns(make(home, None, collection="shop"), [
        TWO_HOP_Q, "And Germany?", "and the second one?"])
    assert two_hop[-1]["mode"] == "supervisor" and "USA | 13" in two_hop[-1]["answer"]
    assert asked(germany) == ["What does our refund policy say about Germany?"]  # answered as worded (see above)
    assert "European Union (for example France, Germany" in germany[-1]["answer"]
    assert germany[-1]["mode"] == "router" and germany[-1]["result"]["citations"][0]["page"] == 2
    # the ordinal is the second row of the two-hop question's table part
    assert asked(second)[0] == "What does our refund policy say about Canada?"
    assert "Customers in Canada" in second[-1]["answer"]


def test_a_thread_resumed_by_a_new_assistant_on_the_sqlite_checkpointer_keeps_its_follow_up_subject(home, bees):
    def factory():
        return Assistant(collection="docs", model=None, server=build_server(),
                         settings=settings_for(home, agent_checkpoint="sqlite"))
    [first] = run_turns(factory, ["How much power does a residential solar panel produce?"], thread_id="kept")
    [follow] = run_turns(factory, ["and how much output do they lose per year?"], thread_id="kept")
    assert (home / "agent" / "threads.sqlite3").is_file() and "400 watts" in first[-1]["answer"]
    assert asked(follow) == ["How much output do a residential solar panel lose per year?"]
    assert "0.5 percent" in follow[-1]["answer"]


def test_with_a_model_a_follow_up_is_condensed_by_the_model_and_the_agent_sees_the_standalone_question(home, bees):
    def condense_from_thread(messages, tools):
        assert "standalone question" in messages[0].text and not tools
        assert BEES_Q in messages[1].text and "Last message: And the queen?" in messages[1].text
        return say("How many eggs does the queen lay per day?")

    def answer_from_history(messages, tools):
        humans = [m.text for m in messages if isinstance(m, HumanMessage)]
        assert humans == [BEES_Q, "And the queen?"]  # the first turn is in the thread
        assert any(isinstance(m, AIMessage) and "60,000" in m.text for m in messages)
        assert "as a standalone question: How many eggs does the queen lay per day?" in messages[0].text
        return call("search", query="queen bee eggs per day", collection="docs", k=3)
    model = ScriptedChatModel(script=[
        call("ask", question=BEES_Q, collection="docs"), say("Up to 60,000."),
        result_call(summary="Up to 60,000 worker bees.", insights=[], recommendations=[], citations=[]),
        condense_from_thread, answer_from_history, say("The queen lays up to 2,000 eggs per day."),
        result_call(summary="The queen lays up to 2,000 eggs per day.", insights=[], recommendations=[],
                    citations=[{"document": "bees.txt", "page": 1}])])
    [_, second] = run_turns(make(home, model), [BEES_Q, "And the queen?"])
    assert second[-1]["result"]["summary"].startswith("The queen lays") and second[-1]["result"]["citations"]
    # the structured result was asked for the standalone question
    assert "Question: How many eggs does the queen lay per day?" in model.calls[-1]["messages"][1].text


def test_with_a_model_whose_condensed_question_is_empty_the_rule_based_rewrite_is_used(home, bees):
    first_q = "How much power does a residential solar panel produce?"
    model = ScriptedChatModel(script=[
        say(""),  # the condensing call of turn 2 returns nothing usable
        call("ask", question="How much output do solar panels lose per year?", collection="docs"),
        say("About 0.5 percent per year."),
        result_call(summary="About 0.5 percent per year.", insights=[], recommendations=[], citations=[])])

    async def go():
        async with make(home, model)() as a:
            # turn 1 as a thread without a model would leave it, then the follow-up with the model
            await a.graph.aupdate_state({"configurable": {"thread_id": "t1"}}, {
                "messages": [HumanMessage(first_q), AIMessage("About 400 watts.")], "asked": first_q})
            return [e async for e in a.turn("and how much output do they lose per year?", thread_id="t1")]
    events = asyncio.run(go())
    assert "standalone question: How much output do a residential solar panel lose per year?" in \
        model.calls[1]["messages"][0].text
    assert events[-1]["result"]["summary"] == "About 0.5 percent per year."


def test_injected_instructions_in_a_document_cause_no_mutating_tool_call(home, ctx, tmp_path):
    from relayrag.service import Service
    assert not Service(ctx).ingest(write_docs(tmp_path / "inj", {"notes.txt": INJECTION}), "inj").failed

    def obey_the_document(messages, tools):
        # a model that follows whatever the tool result says: it tries the mutating tools
        assert "delete_document" not in tools and "ingest" not in tools
        text = " ".join(m.text for m in messages if isinstance(m, ToolMessage))
        assert "delete_document" in text
        return AIMessage(content="", tool_calls=[
            {"name": "delete_document", "args": {"collection": "inj", "documents": ["notes.txt"]}, "id": "x1",
             "type": "tool_call"},
            {"name": "ingest", "args": {"path": "/etc", "collection": "inj"}, "id": "x2", "type": "tool_call"}])
    model = ScriptedChatModel(script=[
        call("search", query="bees", collection="inj"), obey_the_document,
        say("The notes say a colony has up to 60,000 bees."),
        result_call(summary="Up to 60,000 bees.", insights=[], recommendations=[], citations=[])])
    [events] = run_turns(make(home, model, collection="inj"), ["What do the notes say about bees?"])
    refused = [e for e in events if e["event"] == "tool_result" and e["name"] in ("delete_document", "ingest")]
    assert len(refused) == 2 and not any(e["ok"] for e in refused)
    assert all("not a valid tool" in e["preview"] for e in refused)
    col = {c.name: c for c in Service(ctx).list_collections()}["inj"]
    assert col.stats["n_documents"] == 1  # nothing was deleted or added
    assert events[-1]["result"]["summary"] == "Up to 60,000 bees."


def test_mutating_tools_are_offered_only_when_the_setting_allows(home, bees):
    async def go(allow):
        async with Assistant(collection="docs", model=None, server=build_server(),
                             settings=settings_for(home, agent_allow_mutating=allow)) as a:
            return set(a.toolset.offered), dict(a.toolset.withheld)
    offered, withheld = asyncio.run(go(False))
    assert not offered & {"ingest", "delete_document"} and {"ingest", "delete_document"} <= set(withheld)
    offered, _ = asyncio.run(go(True))
    assert {"ingest", "delete_document"} <= offered


def test_without_an_llm_the_deterministic_supervisor_chains_the_table_and_document_parts(home, chinook_shop):
    [events] = run_turns(make(home, None, collection="shop"), [TWO_HOP_Q])
    final = events[-1]
    assert final["mode"] == "supervisor" and "deterministic supervisor" in final["note"]
    assert "deterministic supervisor" in final["answer"] and "part 1 → 'sql' → sql_query" in final["note"]
    tables, documents = final["hops"]
    assert (tables["specialist"], tables["tool"], documents["specialist"], documents["tool"]) == \
        ("tables", "sql_query", "documents", "ask")
    # the document part saw the table part's rows: "them" became each country of the result
    assert documents["queries"] == ["refund policy USA", "refund policy Canada", "refund policy Brazil"]
    assert "30 days" in documents["answer"] and "reais" in documents["answer"] and "14 days" in documents["answer"]
    calls = [(e["name"], e["args"].get("question")) for e in events if e["event"] == "tool_call"]
    assert calls[0] == ("sql_query", "Which three countries have the most customers") and len(calls) == 4
    cites = final["result"]["citations"]
    sql = [c for c in cites if c["kind"] == "sql"]
    pages = [c for c in cites if c["kind"] == "document"]
    assert len(sql) == 1 and sql[0]["run_id"] and "FROM Customer" in sql[0]["sql"]
    assert [(c["document"], c["page"]) for c in pages] == [("refund-policy.pdf", 2)] and pages[0]["run_id"]
    assert final["result"]["sql"] == sql[0]["sql"] and "USA | 13" in final["answer"]


def test_without_an_llm_a_table_part_it_cannot_answer_is_said_and_the_reference_stays_unresolved(home, chinook_shop):
    q = "How many customers does each support rep have, and what does our refund policy say about them?"
    [events] = run_turns(make(home, None, collection="shop"), [q])
    final = events[-1]
    tables, documents = final["hops"]
    assert "Text-to-SQL needs an LLM" in tables["answer"] and tables["sql"] is None and not tables["citations"]
    assert documents["queries"] == ["what does our refund policy say about them?"]
    assert "refers back (“them”), but no earlier part returned table rows" in final["note"]
    assert not any(c["kind"] == "sql" for c in final["result"]["citations"])


def test_without_an_llm_parts_that_go_to_one_tool_stay_one_router_question(home, bees):
    q = "How many worker bees live in a colony in summer, and how much power does a residential solar panel produce?"
    [events] = run_turns(make(home, None), [q])
    assert events[-1]["mode"] == "router" and [e["args"]["question"] for e in events if e["event"] == "tool_call"] == [q]


def test_a_model_that_picks_no_specialist_gets_the_deterministic_supervisor_not_an_invented_answer(home, chinook_shop):
    # Qwen2.5-Coder-0.5B did this: `finish` before any hop, then an aggregate of countries it made up
    model = ScriptedChatModel(script=[call("Plan", next="finish", task="")])
    [events] = run_turns(make(home, model, collection="shop"), [TWO_HOP_Q])
    final = events[-1]
    assert final["mode"] == "supervisor" and "chose no specialist" in final["note"]
    assert "deterministic supervisor" in final["note"] and [h["tool"] for h in final["hops"]] == ["sql_query", "ask"]
    assert {c["kind"] for c in final["result"]["citations"]} == {"sql", "document"}
    assert len(model.calls) == 1  # the model was asked once (the plan); the tools answered the rest


def test_a_document_part_the_gateways_llm_routes_to_the_tables_is_answered_by_search(home, chinook_shop,
                                                                                      make_llm_ctx):
    # the real 1.5B model's classifier sent "refund policy Canada" to sql and cited the failed queries; the
    # part was routed to the documents, so its pages come from search and no extra SQL is cited
    sql = "SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country ORDER BY customers DESC, Country LIMIT 3"
    make_llm_ctx(sql_route_reply(sql, "USA, Canada and Brazil have the most customers."))
    [events] = run_turns(make(home, None, collection="shop"), [TWO_HOP_Q])
    final = events[-1]
    tables, documents = final["hops"]
    assert tables["sql"] == sql and documents["queries"] == ["refund policy USA", "refund policy Canada",
                                                             "refund policy Brazil"]
    names = [e["name"] for e in events if e["event"] == "tool_call"]
    assert names == ["sql_query", "ask", "search", "ask", "search", "ask", "search"]
    assert "ask routed this to the tables, so search found the passages" in documents["answer"]
    assert ("refund-policy.pdf", 2) in {(c["document"], c["page"]) for c in documents["citations"]}
    assert [c["sql"] for c in final["result"]["citations"] if c["kind"] == "sql"] == [sql]


def test_specialists_that_find_no_sources_get_the_deterministic_supervisor_not_an_aggregate(home, chinook_shop):
    # Qwen2.5-Coder-0.5B with the enum plan: three `tables` hops that only listed collections, then an
    # aggregate that invented countries; an aggregate needs at least one cited source
    model = ScriptedChatModel(script=[
        call("Plan", next="tables", task="list_collections"), call("list_collections"), say("shop"),
        call("Plan", next="finish", task="")])
    [events] = run_turns(make(home, model, collection="shop"), [TWO_HOP_Q])
    final = events[-1]
    assert "found no sources" in final["note"] and "deterministic supervisor" in final["note"]
    assert {c["kind"] for c in final["result"]["citations"]} == {"sql", "document"}
    assert len(model.calls) == 4  # plan, hop model twice, plan: no aggregate call


def test_without_an_llm_a_document_question_that_names_a_table_is_answered_from_the_documents(home, chinook_shop):
    """The classifier sends "customers … refunded" to the tables (it names Customer); with no LLM and no
    verified query, sql_query says Text-to-SQL needs an LLM, and the router asks the documents instead."""
    [events] = run_turns(make(home, None, collection="shop"), ["How are customers in Brazil refunded?"])
    final = events[-1]
    calls = [e["name"] for e in events if e["event"] == "tool_call"]
    assert calls == ["sql_query", "ask"] and "asked the documents with ask instead" in final["note"]
    assert [(c["document"], c["page"]) for c in final["result"]["citations"] if c["kind"] == "document"] == \
        [("refund-policy.pdf", 2)]


def test_without_an_llm_an_ordinal_follow_up_with_no_list_to_pick_from_is_answered_honestly(home, bees):
    """Issue 28, item 8: "and the second one?" after an answer that listed no rows used to be asked of the
    documents ("What about the second one for …?") and came back not found; it now says what is missing."""
    [first, second, ja] = run_turns(make(home, None), [BEES_Q, "and the second one?", "2つ目は？"])
    assert "60,000" in first[-1]["answer"]
    assert not any(e["event"] == "tool_call" for e in second)
    assert second[-1]["mode"] == "direct" and "“the second one”" in second[-1]["answer"]
    assert "no list of rows" in second[-1]["answer"] and "No LLM is configured" in second[-1]["note"]
    assert not any(e["event"] == "tool_call" for e in ja) and "2つ目" in ja[-1]["answer"]


def test_the_ordinal_reference_check_reads_only_bare_references():
    from relayrag.agent.followup import unresolved_ordinal
    assert unresolved_ordinal("And the third?", ["USA", "Canada"]) == \
        "The previous list has only 2 items (USA; Canada), so there is no “the third”."
    assert unresolved_ordinal("and the second one?", ["USA", "Canada"]) is None  # condense picks Canada
    assert unresolved_ordinal("What was the first amendment about?", []) is None  # a question of its own
    assert unresolved_ordinal("What about the last one?", []) is not None
    assert unresolved_ordinal("じゃあ最後は？", ["東京"]) is None

def test_without_an_llm_the_assistant_answers_a_template_with_the_questions_values(home, chinook_shop):
    """Issue 25: the no-LLM router sends table questions to sql_query, which answers from the SQL config's
    templates with the question's own numbers ("5", トップ3) and cites the filled SQL."""
    en, ja = run_turns(make(home, None, collection="shop"), ["Which 5 countries have the most customers?",
                                                             "顧客が多い国トップ3は？"])
    for events, limit, last in ((en, 5, "Germany | 4"), (ja, 3, "Brazil | 5")):
        final = events[-1]
        assert [e["name"] for e in events if e["event"] == "tool_call"] == ["sql_query"]
        sql = [c for c in final["result"]["citations"] if c["kind"] == "sql"]
        assert len(sql) == 1 and f"LIMIT {limit}" in sql[0]["sql"] and "USA | 13" in final["answer"]
        assert last in final["answer"]


def test_without_an_llm_the_assistant_replies_to_thanks_and_goodbye_in_kind(home, bees):
    """Small talk in the assistant (no LLM): thanks gets "you're welcome", a goodbye a goodbye, a greeting a
    greeting, each in the message's language and without a tool call (relayrag.smalltalk, as `ask`)."""
    turns = run_turns(make(home, None), ["Thank you very much!", "bye", "ありがとうございます", "hello"])
    replies = [t[-1]["answer"] for t in turns]
    assert all(t[-1]["mode"] == "direct" and not any(e["event"] == "tool_call" for e in t) for t in turns)
    assert replies[0].startswith("You're welcome") and replies[1].startswith("Goodbye")
    assert replies[2].startswith("どういたしまして") and replies[3].startswith("Hello!")
