"""Errors that carry a message meant for the user (what failed and why)."""

from __future__ import annotations

import errno
import sqlite3


class RelayragError(Exception):
    """Base class: the message is shown to the user as is."""


class IngestError(RelayragError):
    """A file could not be ingested (empty, corrupt, encrypted, undecodable...)."""


class ConfigError(RelayragError):
    """Settings name a backend that is unknown or whose extra is not installed."""


class StageError(RelayragError):
    """A stage could not run on its input (unknown run_id, empty collection...)."""


class WorkflowError(RelayragError):
    """The workflow YAML uses a construct the embedded engine does not support, or failed."""


class ConflictError(RelayragError):
    """An optimistic-concurrency check failed: another writer committed first (retry from a fresh read)."""


class NotFoundError(RelayragError):
    """An unknown collection, run, warehouse or document (the message names what exists)."""


class BadRequestError(RelayragError):
    """A request argument that cannot be honoured (e.g. a metadata filter on an unknown field): HTTP 400."""


def is_disk_full(exc: BaseException | None) -> bool:
    """Does `exc` (or an exception it was raised from) say that the disk, a quota or the database is full?"""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(exc, sqlite3.Error) and ("database or disk is full" in str(exc)
                                               or getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL"):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False



def validation_errors(exc) -> list[tuple[str, str]]:
    """[(where, message)] of a pydantic ValidationError, for one-line messages: `where` is the dotted field path
    ("page", "fields.owner.type"), or "" for an error of the whole object (a model validator's), which has no
    field to name; `message` is pydantic's text without its "Value error, " prefix. Callers write
    `f"{what} {where}: {message}"` only when `where` is not empty, never a placeholder in its place (a
    placeholder equal to `what` printed "feedback feedback: ...")."""
    return [(".".join(str(p) for p in e.get("loc") or ()),
             str(e.get("msg", "invalid value")).removeprefix("Value error, ")) for e in exc.errors()]


def first_validation_error(exc) -> tuple[str, str]:
    """(where, message) of a ValidationError's first error (see `validation_errors`)."""
    return validation_errors(exc)[0]
