"""Ingestion: load files (PDF, Markdown, HTML, text, BEIR corpora) into pages of text, chunk and index them."""
