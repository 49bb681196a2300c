"""A collection's segments mirrored into BigQuery, searched there: the distributed retrieval backend for
collections larger than one function instance's memory.

Why BigQuery rather than Vertex AI Vector Search (docs/DESIGN.md, "Distributed retrieval backend"): nothing
runs at rest (storage only, ~$0.02/GB-month; Vector Search bills its deployed index nodes around the clock),
the lexical arm can be exact BM25 in SQL with collection-wide statistics (Vector Search's sparse vectors
carry idf and length normalisation baked in at write time, so they drift as the collection changes), no
endpoint to deploy, and relayrag already uses BigQuery (warehouse, same client). The price is latency:
~0.5-2 s per query against Vector Search's tens of milliseconds. Vector Search stays possible behind the same
interface (`add_segment`, `add_tombstones`, `drop_segments`, `search`, `fetch`).

Tables (dataset RELAYRAG_BIGQUERY_INDEX_DATASET; `table_ddl` creates them, infra/ deploys them):
    chunks(collection, segment, row, chunk_id, source, doc, title, page, start, `end`, text, context,
           content_hash, doc_len, embedding ARRAY<FLOAT64>)     one row per segment row (append-only)
    postings(collection, segment, row, token, tf)               BM25 postings (retrieval.bm25.TermStats)
    tombstones(collection, segment, version, row)               a segment's deleted rows as of a version
The blob store's version manifest stays the source of truth: every query names the version's segments and,
per segment, which tombstone set applies (`VersionFilter`), so a query reads exactly one version's live rows
(snapshot isolation, as the embedded reader), rows of segments no version lists yet are invisible (a crash
before the flip leaves the old version serving), and deleted rows never answer. BM25 is computed in SQL over
the live rows with N, df and avgdl of those rows: the same numbers as `retrieval.bm25.BM25Index`.

Writes are load jobs (append), deletes DML by segment; all requests go through a `google.cloud.bigquery.Client`
(imported lazily; tests pass a double that runs the same SQL in DuckDB).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrag.errors import ConfigError
from relayrag.ingest.snapshot import SegmentRef, index_text
from relayrag.retrieval.bm25 import B, K1, CollectionStats, TermStats

CHUNK_FIELDS = ("chunk_id", "source", "doc", "title", "page", "start", "end", "text", "context", "content_hash")


@dataclass(frozen=True)
class VersionFilter:
    """Which rows a version reads: its segments, each with the version naming its tombstone set (or '')."""
    segments: tuple[str, ...]
    tombstones: tuple[str, ...]

    @classmethod
    def of(cls, refs: list[SegmentRef]) -> "VersionFilter":
        return cls(tuple(r.id for r in refs), tuple(r.tombstones or "" for r in refs))


def table_ddl(dataset: str, dim: int) -> list[str]:
    """CREATE statements for the three tables and the vector index (`dataset` = PROJECT.DATASET)."""
    return [
        f"CREATE TABLE IF NOT EXISTS `{dataset}.chunks` (collection STRING NOT NULL, segment STRING NOT NULL, "
        f"row INT64 NOT NULL, chunk_id STRING, source STRING, doc STRING, title STRING, page INT64, start INT64, "
        f"`end` INT64, text STRING, context STRING, content_hash STRING, doc_len INT64, "
        f"embedding ARRAY<FLOAT64>) CLUSTER BY collection, segment",
        f"CREATE TABLE IF NOT EXISTS `{dataset}.postings` (collection STRING NOT NULL, segment STRING NOT NULL, "
        f"row INT64 NOT NULL, token STRING NOT NULL, tf FLOAT64) CLUSTER BY collection, token",
        f"CREATE TABLE IF NOT EXISTS `{dataset}.tombstones` (collection STRING NOT NULL, segment STRING NOT NULL, "
        f"version STRING NOT NULL, row INT64 NOT NULL) CLUSTER BY collection, segment",
        # IVF needs >= 5,000 rows before BigQuery builds it; until then VECTOR_SEARCH scans (exact). dim: a check
        f"CREATE VECTOR INDEX IF NOT EXISTS chunks_embedding ON `{dataset}.chunks`(embedding) "
        f"STORING (collection, segment, row) OPTIONS (index_type = 'IVF', distance_type = 'COSINE')"
        f" /* {dim}-d */",
    ]


def _live(dataset: str) -> str:
    """SQL of the version's live rows (parameters @collection, @vf: ARRAY<STRUCT<segment, tombstones>>)."""
    return (f"SELECT c.* FROM `{dataset}.chunks` AS c JOIN UNNEST(@vf) AS v ON c.segment = v.segment "
            f"WHERE c.collection = @collection AND NOT EXISTS (SELECT 1 FROM `{dataset}.tombstones` AS t "
            f"WHERE t.collection = @collection AND t.segment = c.segment AND t.version = v.tombstones "
            f"AND t.row = c.row)")


def bm25_sql(dataset: str) -> str:
    """Exact BM25 (bm25s's Lucene formula, k1 1.5, b 0.75) over the version's live rows; a repeated query
    token counts again, as in retrieval.bm25. Parameters: @collection, @vf, @tokens, @k."""
    return (f"WITH live AS ({_live(dataset)}), "
            f"stats AS (SELECT COUNT(*) AS n, AVG(doc_len) AS avgdl FROM live), "
            f"q AS (SELECT token FROM UNNEST(@tokens) AS token), "
            f"hits AS (SELECT p.token, l.chunk_id, p.tf, l.doc_len FROM `{dataset}.postings` AS p "
            f"JOIN live AS l ON p.segment = l.segment AND p.row = l.row "
            f"WHERE p.collection = @collection AND p.token IN UNNEST(@tokens)), "
            f"df AS (SELECT token, COUNT(*) AS df FROM hits GROUP BY token) "
            f"SELECT h.chunk_id, SUM(LN(1 + (s.n - d.df + 0.5) / (d.df + 0.5)) * h.tf / "
            f"(h.tf + {K1} * (1 - {B} + {B} * h.doc_len / s.avgdl))) AS score "
            f"FROM q JOIN hits AS h ON q.token = h.token JOIN df AS d ON q.token = d.token CROSS JOIN stats AS s "
            f"GROUP BY h.chunk_id ORDER BY score DESC, h.chunk_id LIMIT @k")


def dense_sql(dataset: str) -> str:
    """Cosine top-k with VECTOR_SEARCH over the version's live rows. Parameters: @collection, @vf, @q, @k."""
    return (f"SELECT base.chunk_id AS chunk_id, 1 - distance AS score FROM VECTOR_SEARCH(({_live(dataset)}), "
            f"'embedding', (SELECT @q AS embedding), top_k => @k, distance_type => 'COSINE') "
            f"ORDER BY score DESC, chunk_id")


class BigQueryIndex:
    """Search a collection's version in BigQuery; mirror its segments there on ingest.

    client: google.cloud.bigquery.Client (or a double with the same request/response types); bigquery_module:
    the module providing QueryJobConfig, LoadJobConfig, ScalarQueryParameter, ArrayQueryParameter,
    StructQueryParameter (default: google.cloud.bigquery, extra `gcp`)."""

    def __init__(self, dataset: str, *, client: Any = None, bigquery_module: Any = None, timeout_s: float = 30.0,
                 max_bytes_billed: int = 20_000_000_000, load_timeout_s: float = 480.0):
        if dataset.count(".") != 1:
            raise ConfigError(f"the BigQuery index dataset must be PROJECT.DATASET; got {dataset!r}")
        self.dataset = dataset
        self.timeout_s = timeout_s
        self.max_bytes_billed = int(max_bytes_billed)
        self.load_timeout_s = load_timeout_s
        if bigquery_module is None:
            try:
                from google.cloud import bigquery  # type: ignore
            except ImportError as exc:
                raise ConfigError("the BigQuery index needs google-cloud-bigquery: pip install 'relayrag[gcp]'") \
                    from exc
            bigquery_module = bigquery
        self._bq = bigquery_module
        self._client = client if client is not None else bigquery_module.Client(project=dataset.split(".")[0])

    # -- writes ---------------------------------------------------------------------------------------------
    def _load(self, table: str, rows: list[dict]) -> None:
        """One load job for all `rows` of one table: BigQuery allows 1,500 modifications per table per day, failed
        jobs included (https://cloud.google.com/bigquery/quotas#load_jobs, "Table operations per day"), and a
        segment's postings are ~100 rows per chunk, so batching by rows (the old 5,000-row jobs) spent that quota
        in a few hundred documents or one merge. Load jobs append atomically (the whole file or nothing)."""
        if not rows:
            return
        cfg = self._bq.LoadJobConfig(write_disposition="WRITE_APPEND")
        self._client.load_table_from_json(rows, f"{self.dataset}.{table}",
                                          job_config=cfg).result(timeout=self.load_timeout_s)

    def add_segment(self, collection: str, sid: str, chunks: list[dict], vectors: np.ndarray,
                    stats: TermStats | None = None) -> None:
        """Append one segment's rows and postings (before the version listing it is flipped: invisible until)."""
        stats = stats if stats is not None else TermStats.from_texts(index_text(c) for c in chunks)
        rows = [{"collection": collection, "segment": sid, "row": i, **{f: c.get(f) for f in CHUNK_FIELDS},
                 "doc_len": int(stats.doc_len[i]), "embedding": [float(x) for x in np.asarray(v, np.float32)]}
                for i, (c, v) in enumerate(zip(chunks, vectors))]
        self._load("chunks", rows)
        words = {j: t for t, j in stats.vocab.items()}
        coo = stats.tf.tocoo()
        self._load("postings", [{"collection": collection, "segment": sid, "row": int(r), "token": words[int(j)],
                                 "tf": float(tf)} for r, j, tf in zip(coo.row, coo.col, coo.data)])

    def add_tombstones(self, collection: str, ref: SegmentRef, rows: np.ndarray) -> None:
        """Append the tombstone set `ref.tombstones` of segment `ref.id` (all its deleted rows as of it)."""
        self._load("tombstones", [{"collection": collection, "segment": ref.id, "version": ref.tombstones,
                                   "row": int(r)} for r in np.asarray(rows)])

    def drop_segments(self, collection: str, segments: list[str]) -> None:
        """Delete every row of `segments` (GC of segments no version lists any more)."""
        if not segments:
            return
        for table in ("chunks", "postings", "tombstones"):
            self._query(f"DELETE FROM `{self.dataset}.{table}` WHERE collection = @collection "
                        f"AND segment IN UNNEST(@segments)",
                        [self._scalar("collection", "STRING", collection),
                         self._bq.ArrayQueryParameter("segments", "STRING", list(segments))])

    # -- reads ----------------------------------------------------------------------------------------------
    def _scalar(self, name: str, kind: str, value: Any):
        return self._bq.ScalarQueryParameter(name, kind, value)

    def _vf(self, vf: VersionFilter):
        structs = [self._bq.StructQueryParameter(None, self._scalar("segment", "STRING", s),
                                                 self._scalar("tombstones", "STRING", t))
                   for s, t in zip(vf.segments, vf.tombstones)]
        return self._bq.ArrayQueryParameter("vf", "STRUCT", structs)

    def _query(self, sql: str, params: list) -> list:
        # every index query has a cost ceiling: BigQuery refuses (bytesBilledLimitExceeded) instead of billing more
        cfg = self._bq.QueryJobConfig(query_parameters=params, use_query_cache=True,
                                      maximum_bytes_billed=self.max_bytes_billed)
        return list(self._client.query(sql, job_config=cfg, timeout=self.timeout_s).result(timeout=self.timeout_s))

    def search(self, collection: str, vf: VersionFilter, *, k: int, tokens: list[str] | None = None,
               qvec: np.ndarray | None = None) -> list[tuple[str, float]]:
        """[(chunk_id, score)] best first: BM25 for `tokens` (already tokenized), cosine for `qvec`."""
        if not vf.segments:
            return []
        base = [self._scalar("collection", "STRING", collection), self._vf(vf), self._scalar("k", "INT64", int(k))]
        if tokens is not None:
            if not tokens:
                return []
            rows = self._query(bm25_sql(self.dataset),
                               base + [self._bq.ArrayQueryParameter("tokens", "STRING", list(tokens))])
        elif qvec is not None:
            rows = self._query(dense_sql(self.dataset), base + [self._bq.ArrayQueryParameter(
                "q", "FLOAT64", [float(x) for x in np.asarray(qvec, np.float32).reshape(-1)])])
        else:
            raise ValueError("search needs tokens (BM25) or qvec (dense)")
        return [(r["chunk_id"], float(r["score"])) for r in rows]

    def fetch(self, collection: str, vf: VersionFilter, chunk_ids: list[str]
              ) -> tuple[list[dict], np.ndarray, TermStats]:
        """The chunks `chunk_ids` of the version (in that order; ids it does not hold are left out), their
        float16 vectors and BM25 postings: what a run's stages need, never the whole collection."""
        if not chunk_ids or not vf.segments:
            return [], np.zeros((0, 0), np.float16), TermStats.from_texts([])
        cols = ", ".join(f"l.`{f}`" for f in CHUNK_FIELDS)
        rows = self._query(f"WITH live AS ({_live(self.dataset)}) SELECT {cols}, l.embedding, l.segment, l.row "
                           f"FROM live AS l WHERE l.chunk_id IN UNNEST(@ids)",
                           [self._scalar("collection", "STRING", collection), self._vf(vf),
                            self._bq.ArrayQueryParameter("ids", "STRING", list(chunk_ids))])
        by_id = {r["chunk_id"]: r for r in rows}  # one chunk id = one content: any live copy will do
        order = [cid for cid in dict.fromkeys(chunk_ids) if cid in by_id]
        chunks = [{f: by_id[cid][f] for f in CHUNK_FIELDS} for cid in order]
        vectors = (np.asarray([by_id[cid]["embedding"] for cid in order], dtype=np.float16) if order
                   else np.zeros((0, 0), np.float16))
        return chunks, vectors, TermStats.from_texts(index_text(c) for c in chunks)

    def collection_stats(self, collection: str, vf: VersionFilter, tokens: list[str]) -> CollectionStats:
        """N, avgdl and df of `tokens` over the version's live rows (one query)."""
        rows = self._query(f"WITH live AS ({_live(self.dataset)}), "
                           f"df AS (SELECT p.token, COUNT(*) AS df FROM `{self.dataset}.postings` AS p "
                           f"JOIN live AS l ON p.segment = l.segment AND p.row = l.row "
                           f"WHERE p.collection = @collection AND p.token IN UNNEST(@tokens) GROUP BY p.token) "
                           f"SELECT (SELECT COUNT(*) FROM live) AS n, (SELECT AVG(doc_len) FROM live) AS avgdl, "
                           f"ARRAY(SELECT AS STRUCT token, df FROM df) AS dfs",
                           [self._scalar("collection", "STRING", collection), self._vf(vf),
                            self._bq.ArrayQueryParameter("tokens", "STRING", sorted(set(tokens)))])
        r = rows[0]
        return CollectionStats(int(r["n"] or 0), float(r["avgdl"] or 0.0),
                               {d["token"]: int(d["df"]) for d in (r["dfs"] or [])})
