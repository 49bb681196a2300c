"""Retrieval: BM25 (bm25s), dense (exact cosine), RRF fusion, Thompson-sampling arm choice."""
