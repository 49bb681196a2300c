"""Collection names: they become blob-store prefixes, lock-file names and Firestore ids, so one rule
applies everywhere (CLI, stages, MCP tools); and the one limit on a question's length, for the same reason."""

from __future__ import annotations

import re

from relayrag.errors import RelayragError

COLLECTION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_COLLECTION = re.compile(COLLECTION_PATTERN)


def validate_collection(name: str) -> str:
    """Return `name` if it is a valid collection name, else raise RelayragError saying what is allowed."""
    if not isinstance(name, str) or not _COLLECTION.match(name) or ".." in name:
        raise RelayragError(f"invalid collection name {name!r}: use 1-64 letters, digits, '_', '-' or '.', "
                            "starting with a letter or digit")
    return name


MAX_QUESTION_CHARS = 4000  # a question (or search query): the stages' request models, MCP tools, the dashboard's box


def check_question(question: str, what: str = "question") -> str:
    """Return `question` if it is neither empty (blank) nor longer than MAX_QUESTION_CHARS, else raise
    RelayragError with a plain sentence: "The question is 4,312 characters; the limit is 4,000."."""
    if not question or not question.strip():
        raise RelayragError(f"the {what} is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise RelayragError(f"The {what} is {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,}.")
    return question


def unknown_collection_message(name: str, known: list[str]) -> str:
    """The one message for a collection that has neither documents nor tables, naming those there are (documents
    or tables: the same list from `ask`, `chat`, MCP and the dashboard) and how to make it."""
    return (f"unknown collection {name!r} (collections: {', '.join(known[:20]) or 'none yet'}); ingest documents "
            f"into it first (`relayrag ingest PATH --collection {name}`) or load tables with `relayrag warehouse "
            "load`")
