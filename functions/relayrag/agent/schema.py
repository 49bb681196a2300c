"""The assistant's structured result and the citations that back it (pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Citation(BaseModel):
    """One source of a reply. kind `document`: a page of a document (`document` = the file name as cited,
    `page` 1-based); kind `sql`: a query on the collection's tables (`document` = the tables, `sql` = the
    statement). `run_id`: the relayrag run that produced it (see the MCP tool get_run); None for search."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["document", "sql"] = "document"
    document: str = Field(..., min_length=1, max_length=500, description="File name as cited, or the tables queried.")
    page: int | None = Field(None, ge=1, description="1-based page of the document (null for sql).")
    run_id: str | None = Field(None, max_length=200, description="run_id returned by the tool that found it.")
    sql: str | None = Field(None, max_length=4000, description="The SQL statement (kind sql).")

    def key(self) -> tuple:
        return (self.kind, self.document, self.page, self.sql)


class AnalysisResult(BaseModel):
    """The assistant's reply to one turn: a short summary answering the question, insights drawn from the tool
    results, recommendations (may be empty), the citations that back them (only sources the tools returned)
    and the SQL that ran, if any."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(..., min_length=1, max_length=4000, description="The answer, in 1-4 sentences.")
    insights: list[str] = Field(default_factory=list, max_length=10, description="Findings from the tool results.")
    recommendations: list[str] = Field(default_factory=list, max_length=10,
                                       description="Suggested next steps; empty when none follow.")
    citations: list[Citation] = Field(default_factory=list, max_length=30,
                                      description="Sources backing the reply; copy them from the evidence list.")
    sql: str | None = Field(None, max_length=4000, description="The SQL that produced numbers used, if any.")

    def render(self) -> str:
        """Plain text for terminals and the thread history."""
        lines = [self.summary]
        if self.insights:
            lines += ["", "Insights:", *(f"- {i}" for i in self.insights)]
        if self.recommendations:
            lines += ["", "Recommendations:", *(f"- {r}" for r in self.recommendations)]
        if self.sql:
            lines += ["", f"SQL: {self.sql}"]
        if self.citations:
            lines += ["", "Sources:", *(f"- {format_citation(c)}" for c in self.citations)]
        return "\n".join(lines)


def format_citation(c: Citation) -> str:
    if c.kind == "sql":
        where = f"SQL on {c.document}"
    else:
        where = f"{c.document}" + (f", page {c.page}" if c.page else "")
    return where + (f" (run {c.run_id})" if c.run_id else "")


def merge_citations(*groups: list[Citation]) -> list[Citation]:
    """Citations of all groups in order, each (kind, document, page, sql) once (the first run_id kept)."""
    seen: set[tuple] = set()
    out: list[Citation] = []
    for group in groups:
        for c in group:
            if c.key() not in seen:
                seen.add(c.key())
                out.append(c)
    return out


class TurnResult(BaseModel):
    """What a front door shows for one turn. mode: direct (answered without tools), analysis (ReAct agent),
    supervisor (specialist hops), router (no LLM: the deterministic router ran one tool). `result` is None
    when the reply is plain text (direct, or a structured result that failed validation twice: `note` says)."""

    thread_id: str
    mode: Literal["direct", "analysis", "supervisor", "router"]
    answer: str
    result: AnalysisResult | None = None
    hops: list[dict] = Field(default_factory=list)
    note: str | None = None
