"""HTML to readable text (beautifulsoup4)."""

from __future__ import annotations

from relayrag.ingest.decode import _tidy_lines

_DROP_TAGS = ("script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "head")
_BLOCK_TAGS = (
    "address", "article", "aside", "blockquote", "caption", "dd", "details", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hr", "li", "main", "ol", "p", "pre", "section", "summary", "table", "tr", "ul",
)


def _html_to_text(src: str) -> tuple[str, str | None]:
    """HTML -> (readable text, title). Drops script/style/nav (and head/noscript/template/svg/iframe);
    block elements become lines, list items "- x", tables rows "a | b". Title: <title>, else first <h1>."""
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(src, "html.parser")
    title = " ".join(soup.title.get_text(" ").split()) if soup.title else ""
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    if not title:
        h1 = soup.find("h1")
        title = " ".join(h1.get_text(" ").split()) if h1 else ""
    for table in reversed(soup.find_all("table")):  # innermost first
        rows = []
        for tr in table.find_all("tr"):
            cells = [" ".join(c.get_text(" ").split()) for c in tr.find_all(["td", "th"], recursive=False)]
            if any(cells):
                rows.append(" | ".join(cells))
        table.replace_with(NavigableString("\n" + "\n".join(rows) + "\n"))
    for br in soup.find_all("br"):
        br.replace_with(NavigableString("\n"))
    for tag in soup.find_all(_BLOCK_TAGS):
        if tag.name == "li":  # items of a list on consecutive lines
            tag.insert_before(NavigableString("\n- "))
        else:  # other blocks separated by a blank line
            tag.insert_before(NavigableString("\n\n"))
            tag.insert_after(NavigableString("\n\n"))
    text = soup.get_text()
    return _tidy_lines(text), title or None


def _html_fragment_text(fragment: str) -> str:
    return _html_to_text(fragment)[0]
