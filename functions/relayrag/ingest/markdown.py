"""Markdown to readable text (markdown-it-py)."""

from __future__ import annotations

import re
from typing import Any

from relayrag.ingest.html import _html_fragment_text

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.{0,20000}?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
# inline raw HTML that opens / closes an element whose content is code, not text (a browser never shows it)
_CODE_OPEN = re.compile(r"<(script|style)\b[^>]*?(/?)>", re.I)
_CODE_CLOSE = re.compile(r"</(script|style)\s*>", re.I)


def _markdown_to_text(src: str) -> tuple[str, str | None]:
    """Markdown -> (readable text, title). Headings, paragraphs, list items ("- x", "1. x"), code blocks
    (verbatim) and tables ("a | b") are kept; inline markup, link targets and raw HTML tags are dropped, and
    so is the content of raw <script>/<style> elements (block or inline: code a reader never sees), while
    the line breaks around them stay. The text kept is data: nothing in it is interpreted.
    Title: the first level-1 heading, else a YAML front-matter `title:`, else None."""
    from markdown_it import MarkdownIt

    fm_title = None
    m = _FRONT_MATTER.match(src)
    if m:
        t = re.search(r"^title:\s*(.+?)\s*$", m.group(1), re.M)
        if t:
            fm_title = t.group(1).strip("'\"") or None
        src = src[m.end():]
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = md.parse(src)
    blocks: list[str] = []  # top-level blocks, joined by blank lines
    lists: list[list] = []  # stack of [ordered, next number]
    item_prefix: str | None = None
    row: list[str] | None = None
    table_rows: list[str] = []
    title = None
    new_list = [False]  # the next list item starts a new top-level list (a block of its own)
    in_code: list[str | None] = [None]  # inside an inline <script>/<style>: its tag name (may span paragraphs)

    def emit(text: str) -> None:
        nonlocal item_prefix
        if not text.strip():
            return
        if lists:
            indent = "  " * (len(lists) - 1)
            if item_prefix is not None:
                text = indent + item_prefix + text.replace("\n", "\n" + indent + "  ")
                item_prefix = None
            else:
                text = indent + "  " + text.replace("\n", "\n" + indent + "  ")
            if blocks and blocks[-1].startswith("\x00list") and not new_list[0]:
                blocks[-1] += "\n" + text
            else:
                blocks.append("\x00list" + text)
            new_list[0] = False
        else:
            blocks.append(text)

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        kind = tok.type
        if kind == "heading_open":
            text = _md_inline(tokens[i + 1], in_code) if i + 1 < len(tokens) else ""
            if tok.tag == "h1" and title is None and text.strip():
                title = text.strip()
            emit(text)
            i += 3
            continue
        if kind in ("bullet_list_open", "ordered_list_open"):
            start = tok.attrGet("start")
            if not lists:
                new_list[0] = True
            lists.append([kind == "ordered_list_open", int(start) if start else 1])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            if lists:
                lists.pop()
        elif kind == "list_item_open" and lists:
            ordered, n = lists[-1]
            item_prefix = f"{n}. " if ordered else "- "
            lists[-1][1] = n + 1
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close":
            if row is not None and any(c for c in row):
                table_rows.append(" | ".join(row))
            row = None
        elif kind == "table_close":
            emit("\n".join(table_rows))
            table_rows = []
        elif kind == "inline":
            text = _md_inline(tok, in_code)
            if row is not None:
                row.append(" ".join(text.split()))
            else:
                emit(text)
        elif kind in ("fence", "code_block"):
            emit(tok.content.rstrip("\n"))
        elif kind == "html_block":
            emit(_html_fragment_text(tok.content))
        i += 1
    out = "\n\n".join(b.removeprefix("\x00list") for b in blocks)
    return out.strip(), title or fm_title


def _md_inline(tok: Any, in_code: list[str | None]) -> str:
    """An inline token's text. `in_code[0]`: the raw <script>/<style> element open at this point (its
    content is skipped up to its closing tag, line breaks kept); updated in place."""
    parts = []
    for child in tok.children or []:
        if child.type == "html_inline":
            if in_code[0] is None:
                m = _CODE_OPEN.match(child.content)
                if m and not m.group(2):
                    in_code[0] = m.group(1).lower()
            else:
                m = _CODE_CLOSE.match(child.content)
                if m and m.group(1).lower() == in_code[0]:
                    in_code[0] = None
            continue
        if in_code[0] is not None:
            if child.type in ("softbreak", "hardbreak"):
                parts.append("\n")
            continue
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)  # alt text
    return "".join(parts)
