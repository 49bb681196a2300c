"""Collection names: they become blob-store prefixes, lock-file names and Firestore ids, so one rule
applies everywhere (CLI, stages, MCP tools)."""

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
