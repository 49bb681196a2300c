"""Every character `str.splitlines()` breaks on, through every text loader and every JSON Lines path.

Issue 10 item 7: a .txt holding U+2028 ingested fine, then every ask failed with "Unterminated string"
(chunks.jsonl was split with splitlines while json.dumps(ensure_ascii=False) left U+2028 raw), and neither
re-ingest nor delete could repair the collection."""

from __future__ import annotations

import json

import pytest

from relayrag import jsonl
from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.ingest.snapshot import read_chunks, read_manifest, read_vectors, segment_prefix, version_segments

# Every line boundary of str.splitlines() (Python docs, "str.splitlines"), and \r\n.
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
IDS = [f"U+{ord(b[0]):04X}" + ("+LF" if len(b) > 1 else "") for b in BREAKS]


def _sentence(br: str) -> str:
    return f"The capybara{br}is the largest living rodent. It lives near rivers in South America."


def _write_every_loader(folder, br: str) -> dict[str, str]:
    """One file per text loader (plain text, Markdown, HTML, BEIR corpus) with `br` inside a sentence."""
    folder.mkdir(parents=True, exist_ok=True)
    s = _sentence(br)
    (folder / "ls.txt").write_bytes(s.encode("utf-8"))
    (folder / "ls.md").write_bytes(f"# Rodents{br}\n\n{s}\n".encode("utf-8"))
    (folder / "ls.html").write_bytes(f"<html><head><title>R{br}x</title></head><body><p>{s}</p></body></html>"
                                     .encode("utf-8"))
    (folder / "corpus.jsonl").write_bytes((jsonl.dumps({"_id": "d1", "title": f"T{br}t", "text": s}) + "\n")
                                          .encode("utf-8"))
    return {"ls.txt", "ls.md", "ls.html", "corpus.jsonl"}


@pytest.mark.parametrize("br", BREAKS, ids=IDS)
def test_jsonl_round_trip_every_line_break(br):
    rows = [{"text": f"a{br}b", "k": [br, {"x": br * 3}]}, {"plain": "c"}]
    data = jsonl.dump_lines(rows)
    assert data.count(b"\n") == 2  # one physical line per record, even under splitlines()
    assert len(data.decode("utf-8").splitlines()) == 2
    assert jsonl.loads(data) == rows


def test_reader_accepts_files_written_before_the_fix():
    """chunks.jsonl written with raw U+2028/U+2029/U+0085 inside strings (the old writer) reads back whole."""
    rows = [{"text": f"x{c}y"} for c in "\u2028\u2029\x85"]
    old_bytes = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    assert jsonl.loads(old_bytes) == rows


def _segment(collection: str, version: str) -> str:
    """The folder of the version's one segment (these tests ingest once into a fresh collection)."""
    from relayrag.context import default_context
    ctx = default_context()
    refs = version_segments(read_manifest(ctx.blobstore, collection, version), version)
    assert len(refs) == 1
    return segment_prefix(collection, refs[0].id)


def test_reader_names_the_bad_line():
    with pytest.raises(jsonl.JSONLError, match="line 2: not JSON"):
        jsonl.loads(b'{"a": 1}\n{"a": \n')


@pytest.mark.parametrize("br", BREAKS, ids=IDS)
def test_every_text_loader_ingests_and_answers(ctx, tmp_path, br):
    names = _write_every_loader(tmp_path / "d", br)
    summary = ingest(ctx, tmp_path / "d", "u")
    assert summary.failed == [] and summary.ingested == len(names)
    chunks = read_chunks(ctx.blobstore, "u", summary.version)
    assert {c["source"].rsplit("/", 1)[-1] for c in chunks} == names
    raw = ctx.blobstore.get_bytes(_segment("u", summary.version) + "chunks.jsonl").decode("utf-8")
    assert len(raw.splitlines()) == len(chunks)  # no record spans two lines for any reader
    result = ask("What is the largest rodent?", "u")
    assert "capybara" in result["answer"].lower()
    assert result["citations"]


def test_collection_with_unreadable_snapshot_is_recoverable(ctx, tmp_path):
    """A snapshot that cannot be read (here: a truncated chunks.jsonl) gives a clear error on ask, and both
    re-ingest and delete repair the collection."""
    folder = tmp_path / "d"
    _write_every_loader(folder, " ")
    (folder / "other.txt").write_text("Wombats produce cube-shaped droppings.", encoding="utf-8")
    first = ingest(ctx, folder, "u")
    key = _segment("u", first.version) + "chunks.jsonl"
    path = ctx.blobstore.local_path(key)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(Exception, match=r"cannot be read .*relayrag ingest"):
        ask("largest rodent", "u")

    (folder / "ls.txt").unlink()
    again = ingest(ctx, folder, "u")
    assert again.failed == [] and again.version != first.version
    assert any("could not be read" in w["warning"] for w in again.warnings)
    assert again.ingested == 4  # every remaining file re-loaded: nothing could be reused
    assert "wombat" in ask("Which animal produces cube-shaped droppings?", "u")["answer"].lower()

    # delete works on a broken snapshot too (the dense matrix this time)
    vec = ctx.blobstore.local_path(_segment("u", again.version) + "dense.npy")
    vec.write_bytes(b"garbage")
    gone = ingest(ctx, ".", "u", remove_paths=["other.txt"])
    assert gone.deleted >= 1 and gone.version
    files = {r["name"] for r in ctx.docstore.list_files("u")}
    assert "other.txt" not in files
    assert read_vectors(ctx.blobstore, "u", gone.version).shape[0] == len(read_chunks(ctx.blobstore, "u", gone.version))


def test_sql_eval_and_beir_queries_read_jsonl_with_separators(tmp_path):
    from relayrag.evaluation.retrieval import load_queries
    from relayrag.evaluation.sql import _read_jsonl
    q = tmp_path / "queries.jsonl"
    q.write_bytes("".join(json.dumps({"_id": str(i), "text": f"q{c}x"}, ensure_ascii=False) + "\n"
                          for i, c in enumerate("\u2028\u2029\x85")).encode("utf-8"))
    assert load_queries(q) == {"0": "q\u2028x", "1": "q\u2029x", "2": "q\x85x"}
    assert [r["text"] for r in _read_jsonl(q)] == ["q\u2028x", "q\u2029x", "q\x85x"]
