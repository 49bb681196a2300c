from relayrag.ingest.chunking import chunk_page, make_chunks
from relayrag.text import has_cjk, split_sentences


def test_sentences_keep_offsets_and_abbreviations():
    text = "Solar panels work, e.g. on roofs. They age slowly! Do they? Yes.\nRow | 1 | 2"
    spans = split_sentences(text)
    parts = [text[s:e] for s, e in spans]
    assert parts == ["Solar panels work, e.g. on roofs.", "They age slowly!", "Do they?", "Yes.", "Row | 1 | 2"]


def test_sentences_japanese():
    parts = [t for t in ("東京です。大阪です。",)]
    text = parts[0]
    assert [text[s:e] for s, e in split_sentences(text)] == ["東京です。", "大阪です。"]


def test_has_cjk():
    assert has_cjk("東京タワーは何メートル?") and not has_cjk("Tokyo tower")


def test_chunks_cover_text_with_overlap_and_bounds():
    text = " ".join(f"Sentence {i} talks about topic {i}." for i in range(200))
    spans = chunk_page(text, max_chars=300, overlap=80)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert s2 > s1 and s2 <= e1  # progress with overlap, no gaps
        assert e1 - s1 <= 300
    assert all(e2 - s2 <= 300 for s2, e2 in spans)


def test_long_sentence_is_cut():
    text = "word " * 1000
    spans = chunk_page(text.strip(), max_chars=200, overlap=0)
    assert all(e - s <= 200 for s, e in spans) and len(spans) >= 20


def test_chunk_ids_stable_and_content_addressed():
    pages = [(1, "Alpha beta gamma. Delta epsilon."), (2, "Zeta eta theta.")]
    a = make_chunks(doc="d.pdf", source="/x/d.pdf", title="T", pages=pages)
    b = make_chunks(doc="d.pdf", source="/x/d.pdf", title="T", pages=pages)
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    assert [c.page for c in a] == [1, 2]
    assert a[0].text == pages[0][1][a[0].start:a[0].end]
    c = make_chunks(doc="d.pdf", source="/x/d.pdf", title="T", pages=[(1, "Alpha beta gamma! Delta.")])
    assert c[0].chunk_id != a[0].chunk_id


def test_chunks_continuing_a_table_carry_its_header():
    from relayrag.ingest.chunking import table_header
    rows = "\n".join(f"State{i} | {i} | {i * 10}" for i in range(60))
    page = "Intro text.\nState | Permit | Handgun\n" + rows
    chunks = make_chunks(doc="t.pdf", source="/t.pdf", title="", pages=[(1, page)], max_chars=300, overlap=0)
    assert chunks[0].context == ""  # the header is inside the first chunk
    assert all(c.context == "State | Permit | Handgun" for c in chunks[1:])
    assert table_header("a | b\nc | d", 6) == "a | b" and table_header("text\nc | d", 5) == ""
    from relayrag.stages.generate import with_table_header
    c = chunks[2]
    row = c.text.split("\n")[1]
    assert with_table_header(c.text, c.text.index(row), row, c.context) == f"State | Permit | Handgun / {row}"
