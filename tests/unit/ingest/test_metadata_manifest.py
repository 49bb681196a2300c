"""Document metadata at ingest (issue 14): the collection schema, the JSONL manifest rejected with line numbers
before anything is written, and incremental ingest on the metadata hash (a metadata-only change embeds
nothing and keeps chunk ids)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from relayrag.errors import ConfigError
from relayrag.ingest.pipeline import ingest
from relayrag.ingest.snapshot import read_chunks
from relayrag.metadata import ManifestError, metadata_hash, normalise, parse_schema_bytes
from tests.conftest import EXAMPLES

POLICIES = EXAMPLES / "policies"


@pytest.fixture
def policies(tmp_path) -> Path:
    """A copy of the bundled example (three policy documents, manifest, schema) that tests may edit."""
    return Path(shutil.copytree(POLICIES, tmp_path / "policies"))


def lines(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]


def write_manifest(folder: Path, rows: list[dict], name: str = "manifest.jsonl") -> Path:
    p = folder / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def nothing_written(ctx, collection: str) -> bool:
    return (ctx.docstore.get_collection(collection) is None and not ctx.docstore.list_files(collection)
            and ctx.blobstore.list(f"snapshots/{collection}/", include_partial=True) == []
            and ctx.schemas.read_bytes(collection) is None)


def test_the_example_ingests_with_its_manifest_and_every_chunk_carries_its_metadata(ctx, policies):
    s = ingest(ctx, policies, "pol", manifest=policies / "manifest.jsonl", schema=policies / "relayrag.collection.yaml")
    assert s.failed == [] and s.ingested == 3
    assert s.unsupported == []  # the schema and the manifest are not documents
    chunks = read_chunks(ctx.blobstore, "pol", s.version)
    by_doc = {c["doc"]: c["meta"] for c in chunks}
    assert by_doc["travel-policy-2019.md"]["valid_until"] == "2021-12-31"
    assert by_doc["remote-work-policy.md"]["tags"] == ["remote", "home office"]
    assert "valid_until" not in by_doc["equipment-handbook.md"] and by_doc["equipment-handbook.md"]["needs_review"]
    rec = {r["name"]: r for r in ctx.docstore.list_files("pol")}["travel-policy-2019.md"]
    assert rec["metadata"]["department"] == "Finance" and rec["metadata_hash"] == metadata_hash(rec["metadata"])
    assert ctx.schemas.get("pol").fields["department"].values == ["HR", "Finance", "IT"]


BAD_LINES = {
    "unknown field": ({"colour": "red"}, r"line 2: travel-policy-2019\.md: unknown field 'colour'"),
    "missing required": ({"department": None}, r"line 2: .*missing required field 'department'"),
    "enum violation": ({"department": "Legal"}, r"line 2: .*'Legal' is not one of HR, Finance, IT"),
    "valid_until before valid_from": ({"valid_from": "2022-01-01", "valid_until": "2021-12-31"},
                                      r"line 2: .*valid_until 2021-12-31 is before valid_from 2022-01-01"),
    "bad date": ({"valid_until": "31.12.2021"}, r"line 2: .*'31.12.2021' is not a date"),
    "bad number": ({"review_cycle_months": "twelve"}, r"line 2: .*'twelve' is not a number"),
    # issue 24 row 6: json.dumps writes NaN / Infinity, which Python's json.loads accepted
    "NaN": ({"review_cycle_months": float("nan")}, r"line 2: not a JSON object \(NaN is not a number JSON allows"),
    "Infinity": ({"review_cycle_months": float("-inf")}, r"line 2: not a JSON object \(-Infinity is not a number"),
    # issue 24 row 14: NUL and a right-to-left override in a metadata value
    "NUL": ({"title": "Travel\x00policy"}, r"line 2: .*holds the control or bidi-override character U\+0000"),
    "RLO": ({"title": "Travel \u202egnp.exe"}, r"line 2: .*holds the control or bidi-override character U\+202E"),
}


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_each_bad_manifest_line_is_rejected_with_its_line_number_and_nothing_is_written(ctx, policies, kind):
    change, message = BAD_LINES[kind]
    rows = lines(policies)
    rows[1] = {k: v for k, v in {**rows[1], **change}.items() if v is not None}
    manifest = write_manifest(policies, rows)
    with pytest.raises(ManifestError, match=message) as err:
        ingest(ctx, policies, "pol", manifest=manifest, schema=policies / "relayrag.collection.yaml")
    assert [e["line"] for e in err.value.errors] == [2]
    assert nothing_written(ctx, "pol")


def test_a_duplicate_path_and_a_document_without_a_line_are_rejected(ctx, policies):
    rows = lines(policies)
    dup = write_manifest(policies, [rows[0], rows[1], {**rows[0], "title": "again"}])
    with pytest.raises(ManifestError, match=r"line 3: duplicate document_path 'remote-work-policy.md' "
                                            r"\(first on line 1\)"):
        ingest(ctx, policies, "pol", manifest=dup, schema=policies / "relayrag.collection.yaml")
    missing = write_manifest(policies, rows[:2])
    with pytest.raises(ManifestError, match=r"document .*equipment-handbook\.md has no manifest line"):
        ingest(ctx, policies, "pol", manifest=missing, schema=policies / "relayrag.collection.yaml")
    stray = write_manifest(policies, [*rows, {**rows[0], "document_path": "gone.md"}])
    with pytest.raises(ManifestError, match=r"line 4: document_path .*gone\.md is not a document under"):
        ingest(ctx, policies, "pol", manifest=stray, schema=policies / "relayrag.collection.yaml")
    (policies / "broken.jsonl").write_text('{"document_path": "a.md"\n[1]\n', encoding="utf-8")
    with pytest.raises(ManifestError, match=r"line 1: not a JSON object .*; line 2: not a JSON object \(a list\)"):
        ingest(ctx, policies, "pol", manifest=policies / "broken.jsonl")
    assert nothing_written(ctx, "pol")


def test_a_number_past_a_double_is_rejected_with_its_line_number(ctx, policies):
    rows = lines(policies)
    text = "".join(json.dumps(r) + "\n" for r in rows).replace('"review_cycle_months": 12',
                                                               '"review_cycle_months": 1e999', 1)
    assert "1e999" in text
    (policies / "overflow.jsonl").write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError, match=r"line \d: not a JSON object \(1e999 is out of range"):
        ingest(ctx, policies, "pol", manifest=policies / "overflow.jsonl", schema=policies / "relayrag.collection.yaml")
    assert nothing_written(ctx, "pol")


def test_all_errors_of_a_manifest_are_reported_at_once(ctx, policies):
    rows = lines(policies)
    rows[0]["colour"] = "red"
    rows[2]["department"] = "Legal"
    with pytest.raises(ManifestError) as err:
        ingest(ctx, policies, "pol", manifest=write_manifest(policies, rows),
               schema=policies / "relayrag.collection.yaml")
    assert [e["line"] for e in err.value.errors] == [1, 3]
    assert "nothing was written" in str(err.value)


def test_an_invalid_schema_is_rejected_before_anything_is_written(ctx, policies, tmp_path):
    bad = tmp_path / "relayrag.collection.yaml"
    bad.write_text("fields:\n  kind: {type: enum}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"relayrag.collection.yaml: fields.kind: an enum field needs `values`"):
        ingest(ctx, policies, "pol", manifest=policies / "manifest.jsonl", schema=bad)
    bad.write_text("fields:\n  valid_until: {type: string}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="built-in field 'valid_until' is of type date"):
        ingest(ctx, policies, "pol", schema=bad)
    assert nothing_written(ctx, "pol")


def test_a_metadata_only_change_embeds_nothing_and_keeps_the_chunk_ids(ctx, policies):
    first = ingest(ctx, policies, "pol", manifest=policies / "manifest.jsonl",
                   schema=policies / "relayrag.collection.yaml")
    before = read_chunks(ctx.blobstore, "pol", first.version)
    rows = lines(policies)
    rows[0]["department"] = "Finance"  # remote-work-policy.md: metadata only, same bytes
    rows[0]["valid_until"] = "2031-06-30"
    manifest = write_manifest(policies, rows)
    second = ingest(ctx, policies, "pol", manifest=manifest)
    d = second.to_dict()
    assert d["chunks_embedded"] == 0 and d["metadata_updated"] == 1 and d["files"]["ingested"] == 0
    assert second.version != first.version
    after = read_chunks(ctx.blobstore, "pol", second.version)
    # the same chunk ids (segments: the updated file's rows move to the new segment, so compare as sets)
    assert sorted(c["chunk_id"] for c in after) == sorted(c["chunk_id"] for c in before)
    changed = {c["doc"]: c["meta"] for c in after}["remote-work-policy.md"]
    assert changed["department"] == "Finance" and changed["valid_until"] == "2031-06-30"
    rec = {r["name"]: r for r in ctx.docstore.list_files("pol")}["remote-work-policy.md"]
    assert rec["metadata"] == changed and rec["metadata_hash"] == metadata_hash(changed)
    # the same manifest again: nothing changes at all
    third = ingest(ctx, policies, "pol", manifest=manifest)
    assert third.version == second.version and third.skipped == 3 and third.chunks_embedded == 0
    # without a manifest, documents keep the metadata their records hold
    fourth = ingest(ctx, policies, "pol")
    assert fourth.version == second.version and fourth.skipped == 3


def test_without_a_schema_or_manifest_ingest_is_as_before(ctx, small_corpus):
    s = ingest(ctx, small_corpus, "plain")
    assert s.failed == [] and s.ingested == 4
    assert all("meta" not in c for c in read_chunks(ctx.blobstore, "plain", s.version))
    assert all("metadata" not in r for r in ctx.docstore.list_files("plain"))


def test_a_manifest_without_a_schema_allows_only_the_built_in_fields(ctx, small_corpus):
    rows = [{"document_path": f"docs/{n}", "title": n.upper(), "valid_until": "2030-01-01"}
            for n in ("solar.md", "bees.txt", "rail.html", "tokyo.txt")]
    ok = ingest(ctx, small_corpus, "m", manifest=write_manifest(small_corpus.parent, rows, "m.jsonl"))
    assert ok.failed == [] and {c["meta"]["title"] for c in read_chunks(ctx.blobstore, "m", ok.version)} == \
        {"SOLAR.MD", "BEES.TXT", "RAIL.HTML", "TOKYO.TXT"}
    rows[0]["department"] = "HR"
    with pytest.raises(ManifestError, match=r"line 1: docs/solar.md: unknown field 'department' \(fields: needs_review, "
                                            r"title, valid_from, valid_until\)"):
        ingest(ctx, small_corpus, "m2", manifest=write_manifest(small_corpus.parent, rows, "m2.jsonl"))


def test_a_document_without_metadata_in_a_collection_whose_schema_requires_fields_fails_alone(ctx, policies):
    ingest(ctx, policies, "pol", manifest=policies / "manifest.jsonl", schema=policies / "relayrag.collection.yaml")
    (policies / "new.md").write_text("# New\n\nA new document without a manifest line.\n", encoding="utf-8")
    s = ingest(ctx, policies, "pol")
    assert [Path(f["path"]).name for f in s.failed] == ["new.md"]
    assert "missing required field 'department'" in s.failed[0]["error"] and "--manifest" in s.failed[0]["error"]
    assert s.skipped == 3


def test_normalisation_gives_one_hash_for_equal_metadata():
    schema = parse_schema_bytes((POLICIES / "relayrag.collection.yaml").read_bytes(), "example")
    a = normalise({"department": "HR", "document_type": "policy", "title": "  Remote   Work ",
                   "review_cycle_months": 12, "tags": [" remote ", "home office"]}, schema)
    b = normalise({"tags": ["remote", "home office"], "title": "Remote Work", "review_cycle_months": 12,
                   "document_type": "policy", "department": "HR"}, schema)
    assert a == b and metadata_hash(a) == metadata_hash(b)
    # the same values as text (GCS custom metadata) normalise alike
    c = normalise({"department": "HR", "document_type": "policy", "title": "Remote Work",
                   "review_cycle_months": "12", "tags": "remote, home office"}, schema, from_text=True)
    assert metadata_hash(c) == metadata_hash(a)


def test_source_metadata_and_a_record_only_update_keep_the_collection_stats(ctx, policies):
    """The GCS path (ingest_source): object metadata becomes the document's; the same bytes under a new
    generation with the same metadata only move the record (same version), and the collection's stats stay."""
    from relayrag.ingest.pipeline import Source, ingest_source
    ctx.schemas.put("pol", (policies / "relayrag.collection.yaml").read_bytes())
    schema = ctx.schemas.get("pol")
    row = lines(policies)[1]
    meta = normalise({k: v for k, v in row.items() if k != "document_path"}, schema)
    key = "gs://bucket/pol/travel-policy-2019.md"
    first = ingest_source(ctx, Source(policies / "travel-policy-2019.md", key, {"generation": "1"}, meta), "pol")
    stats = ctx.docstore.get_collection("pol")["stats"]
    assert first.ingested == 1 and stats["n_files"] == 1 and ctx.docstore.get_file("pol", key)["metadata"] == meta
    again = ingest_source(ctx, Source(policies / "travel-policy-2019.md", key, {"generation": "2"}, meta), "pol")
    assert again.skipped == 1 and again.version == first.version
    assert ctx.docstore.get_file("pol", key)["generation"] == "2"
    assert ctx.docstore.get_collection("pol")["stats"] == stats  # the record-only commit kept them
    moved = ingest_source(ctx, Source(policies / "travel-policy-2019.md", key, {"generation": "3"},
                                      {**meta, "department": "HR"}), "pol")
    assert moved.metadata_updated == 1 and moved.chunks_embedded == 0 and moved.version != first.version
    assert ctx.docstore.get_file("pol", key)["metadata"]["department"] == "HR"
