"""People's verdicts on answers: 👍 / 👎 on a run, why, and what the right answer was.

A verdict is stored next to its run in the docstore (`DocStore.put_feedback`: SQLite embedded, Firestore in
the cloud), one per (run, identity): giving a verdict again replaces the earlier one. It holds no more than
the run already holds plus what the person typed: the run's id, collection, route and arm (copied so the
Feedback page can count without reading every run), the identity that gave it, the verdict, the reason, an
optional correct answer and an optional correct document / page. The question itself stays in the run.

Who sees what: an identity reads only its own verdicts; an admin (the local CLI, a stdio MCP client, a token
in RELAYRAG_ADMIN_TOKENS) reads everyone's. A verdict can be given only on a run that exists and whose
collection the giver may see (`visible`: every collection the front end lists; none is hidden from an
authenticated identity today). Deleting a collection deletes its verdicts.

The bandit hears the verdict (`human_reward`): 👍 rewards the arm that served the run with 1; 👎 with
reason wrong or wrong_source (or no reason: the answer was wrong) with 0; "not_answered" on a run that
answered (the answer missed the question) with 0, but on a refusal or "not found" run with nothing — the
arm is not punished for an honest refusal the person did not like; outdated and other say nothing about
retrieval and give nothing. The reward goes to the arm's human posterior "<context>/<arm>/human"
(relayrag.retrieval.bandit.human_key), which Thompson sampling blends into the judge's win posterior with
weight HUMAN_WEIGHT (docs/DESIGN.md, "Feedback"). Only runs whose arm the bandit chose teach (a forced arm is
an experiment, as in grade).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from relayrag.enums import ChoiceEnum
from relayrag.errors import BadRequestError, NotFoundError, first_validation_error

MAX_ANSWER_CHARS = 2000    # a correct answer: a sentence or a short paragraph, not a document
MAX_DOC_CHARS = 512        # a document name as ingested (file name or gs:// key)
MAX_IDENTITY_CHARS = 200
MAX_PAGE = 100_000


class Verdict(ChoiceEnum):
    up = "up"
    down = "down"

    @classmethod
    def _label(cls) -> str:
        return "verdict"


class Reason(ChoiceEnum):
    wrong = "wrong"
    not_answered = "not_answered"
    wrong_source = "wrong_source"
    outdated = "outdated"
    other = "other"

    @classmethod
    def _label(cls) -> str:
        return "reason"


VERDICT_ALIASES = {"up": "up", "good": "up", "+1": "up", "👍": "up", "down": "down", "bad": "down", "-1": "down",
                   "👎": "down"}


class FeedbackIn(BaseModel):
    """What a person says about a run. `answer`, `doc` and `page` (1-based; needs `doc`) are the correct
    answer or source, only with 👎; `reason` only with 👎. Strings are stripped; empty strings count as
    absent. Errors: pydantic ValidationError (front ends turn it into BadRequestError)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    reason: Reason | None = None
    answer: str | None = Field(None, max_length=MAX_ANSWER_CHARS)
    doc: str | None = Field(None, max_length=MAX_DOC_CHARS)
    page: int | None = Field(None, ge=1, le=MAX_PAGE)

    @field_validator("verdict", mode="before")
    @classmethod
    def _alias(cls, v: Any) -> Any:
        return VERDICT_ALIASES.get(v.strip().lower(), v) if isinstance(v, str) else v

    @field_validator("reason", "answer", "doc", mode="before")
    @classmethod
    def _blank(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
            return v or None
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "FeedbackIn":
        if self.verdict == Verdict.up and (self.reason or self.answer or self.doc or self.page):
            raise ValueError("a reason, correct answer or correct document goes with a 👎 (down) verdict only")
        if self.page is not None and not self.doc:
            raise ValueError("a page needs the document it is in (doc)")
        return self


def parse_feedback(**fields: Any) -> FeedbackIn:
    """FeedbackIn from front-end fields; BadRequestError naming the field and the rule on bad input."""
    from pydantic import ValidationError
    try:
        return FeedbackIn.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        where, msg = first_validation_error(exc)
        first = exc.errors()[0]
        if first["type"] == "enum":
            allowed = ", ".join(m.value for m in (Verdict if where == "verdict" else Reason))
            msg = f"must be one of {allowed}"
        elif where == "page" and first["type"] == "greater_than_equal":
            msg = f"pages are numbered from 1; there is no page {fields.get('page')}"
        raise BadRequestError(f"feedback {where}: {msg}" if where else f"feedback: {msg}") from None


def check_identity(identity: str) -> str:
    if not isinstance(identity, str) or not identity.strip() or len(identity) > MAX_IDENTITY_CHARS:
        raise BadRequestError(f"feedback identity must be 1..{MAX_IDENTITY_CHARS} characters")
    return identity.strip()


def human_reward(run: dict, verdict: FeedbackIn) -> float | None:
    """The reward a verdict gives the arm that served `run`: 1.0, 0.0, or None (teaches nothing) — see the
    module docstring for the rules."""
    if verdict.verdict == Verdict.up:
        return 1.0
    if verdict.reason in (None, Reason.wrong, Reason.wrong_source):
        return 0.0
    if verdict.reason == Reason.not_answered:
        refused = bool(run.get("refused")) or run.get("found") is False or not (run.get("answer") or "").strip()
        return None if refused else 0.0
    return None  # outdated, other: not the arm's doing


def bandit_contribution(run: dict, verdict: FeedbackIn) -> dict[str, float]:
    """{human arm key: reward} the verdict adds to the collection's arms ({} when it teaches nothing)."""
    from relayrag.retrieval.bandit import human_key
    arm = run.get("arm")
    if not arm or not run.get("arm_draws"):
        return {}
    r = human_reward(run, verdict)
    if r is None:
        return {}
    return {human_key(run.get("bandit_context") or "latin", arm): r}


def submit(docstore, run_id: str, identity: str, verdict: FeedbackIn, *, visible: Collection[str]) -> dict:
    """Store `identity`'s verdict on `run_id` (replacing its earlier one) and update the bandit. Returns the
    stored entry plus `replaced` (whether an earlier verdict was replaced). Errors: NotFoundError when the
    run does not exist or its collection is not in `visible`; BadRequestError on a bad identity."""
    identity = check_identity(identity)
    run = docstore.get_run(run_id) if isinstance(run_id, str) and run_id else None
    collection = (run or {}).get("collection") or ""
    if run is None or collection not in visible:  # the same answer for both: do not reveal other runs
        raise NotFoundError(f"no run {run_id!r} in a collection you can see")
    now = time.time()
    entry = {"run_id": run_id, "identity": identity, "collection": collection,
             "route": run.get("route"), "arm": run.get("arm"), "bandit_context": run.get("bandit_context"),
             "refused": bool(run.get("refused")), "found": bool(run.get("found", True)),
             **verdict.model_dump(mode="json", exclude_none=True),
             "bandit": bandit_contribution(run, verdict), "updated_at": now}
    old = docstore.put_feedback(collection, run_id, identity, entry)
    return {**entry, "replaced": old is not None}


def withdraw(docstore, run_id: str, identity: str, *, visible: Collection[str]) -> bool:
    """Remove `identity`'s verdict on `run_id` and its bandit contribution. True if there was one."""
    identity = check_identity(identity)
    run = docstore.get_run(run_id) if isinstance(run_id, str) and run_id else None
    collection = (run or {}).get("collection") or ""
    if run is None or collection not in visible:
        raise NotFoundError(f"no run {run_id!r} in a collection you can see")
    return docstore.put_feedback(collection, run_id, identity, None) is not None


def list_verdicts(docstore, collections: Collection[str], *, identity: str, admin: bool = False,
                  run_id: str | None = None, verdict: str | None = None, reason: str | None = None,
                  arm: str | None = None, route: str | None = None, limit: int = 100) -> list[dict]:
    """Recent verdicts over `collections`, newest first: `identity`'s own, or everyone's for an admin;
    filtered by run, verdict, reason, arm and route when given."""
    out = []
    for c in collections:
        for e in docstore.list_feedback(c, identity=None if admin else identity, run_id=run_id, limit=10_000):
            if (verdict and e.get("verdict") != verdict) or (reason and e.get("reason") != reason) \
                    or (arm and e.get("arm") != arm) or (route and e.get("route") != route):
                continue
            out.append(e)
    out.sort(key=lambda e: e.get("updated_at") or 0.0, reverse=True)
    return out[:max(0, int(limit))]


SOURCES = {  # identity prefix -> where such verdicts are given (what the Feedback page says about hidden ones)
    "local": "the command line or a terminal chat (relayrag feedback, /good, /bad; MCP over stdio)",
    "chat": "relayrag chat-serve clients (POST /feedback with a /chat token)",
    "mcp": "MCP clients with a token",
    "dashboard": "other dashboard tokens",
}


def hidden_verdicts(docstore, collections: Collection[str], *, identity: str, verdict: str | None = None,
                    reason: str | None = None, arm: str | None = None, route: str | None = None) -> list[dict]:
    """What `identity` (not an admin) does not see: the other identities' verdicts over `collections` that pass the
    same filters, counted per source (the identity's prefix, SOURCES): [{source, label, n, down}], most first.
    Counts only: no other identity's verdict, question or identity is revealed."""
    counts: dict[str, list[int]] = {}
    for c in collections:
        for e in docstore.list_feedback(c, limit=1_000_000):
            if e.get("identity") == identity or (verdict and e.get("verdict") != verdict) \
                    or (reason and e.get("reason") != reason) or (arm and e.get("arm") != arm) \
                    or (route and e.get("route") != route):
                continue
            got = counts.setdefault(str(e.get("identity") or "").partition(":")[0] or "other", [0, 0])
            got[0] += 1
            got[1] += e.get("verdict") == "down"
    rows = [{"source": k, "label": SOURCES.get(k, f"{k} clients"), "n": n, "down": d} for k, (n, d) in counts.items()]
    return sorted(rows, key=lambda r: (-r["n"], r["source"]))


def down_share(entries: list[dict], by: str) -> list[dict]:
    """Share of 👎 per value of `by` (collection, route or arm): [{by, n, down, share}], most 👎 first."""
    counts: dict[str, list[int]] = {}
    for e in entries:
        key = str(e.get(by) or "—")
        c = counts.setdefault(key, [0, 0])
        c[0] += 1
        c[1] += e.get("verdict") == "down"
    rows = [{by: k, "n": n, "down": d, "share": round(d / n, 4)} for k, (n, d) in counts.items()]
    return sorted(rows, key=lambda r: (-r["share"], -r["n"], r[by]))


# -- what front ends call (CLI, MCP, dashboard, chat-serve) -----------------------------------------------------
def local_identity() -> str:
    """The identity of a local user (CLI, stdio MCP, chat in a terminal): 'local:<os user>'. Local users own
    the store's files and are admins."""
    import getpass
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment (containers)
        user = "user"
    return f"local:{user}"


def token_identity(kind: str, token: str) -> str:
    """The identity of a bearer token: '<kind>:' + the first 16 hex digits of its SHA-256 (the token itself is
    never stored)."""
    import hashlib
    return f"{kind}:{hashlib.sha256(token.encode('utf-8')).hexdigest()[:16]}"


def is_admin_token(settings, token: str | None) -> bool:
    """Whether `token` is one of RELAYRAG_ADMIN_TOKENS (constant-time comparison against each)."""
    import hmac
    given = (token or "").encode("utf-8")
    ok = False
    for t in [t.strip() for t in (getattr(settings, "admin_tokens", "") or "").split(",") if t.strip()]:
        ok |= hmac.compare_digest(given, t.encode("utf-8"))
    return ok and bool(given)


def give(service, run_id: str, verdict: str, identity: str, *, reason: str | None = None,
         answer: str | None = None, doc: str | None = None, page: int | None = None) -> dict:
    """Validate and store a verdict through a relayrag.service.Service (its docstore; visible = its
    collections): a correct `doc` must be a document of the run's collection and `page` one of its pages
    (`check_source`). Returns the stored entry with `replaced`."""
    run = service.ctx.docstore.get_run(run_id) or {}
    collection = run.get("collection") if run.get("collection") in set(service.collection_names()) else None
    doc_name = doc.strip() if isinstance(doc, str) else None
    if collection and doc_name and isinstance(page, int) and not 1 <= page <= MAX_PAGE:
        check_source(service, collection, doc_name, page)  # before parsing: say which pages the document has
    parsed = parse_feedback(verdict=verdict, reason=reason, answer=answer, doc=doc, page=page)
    if parsed.doc and collection:
        check_source(service, collection, parsed.doc, parsed.page)
    return submit(service.ctx.docstore, run_id, identity, parsed, visible=set(service.collection_names()))


def check_source(service, collection: str, doc: str, page: int | None) -> None:
    """A correct document must be one of the run's collection (it becomes an exported golden case's `doc`) and
    its page one the document has (1 to the page count its ingestion recorded; a text file has one page).
    BadRequestError naming the document and its page count otherwise; a record without a page count (ingested
    before counts were kept) is not checked for the page."""
    documents = service.list_documents(collection)
    if doc not in {d["name"] for d in documents}:
        names = sorted({d["name"] for d in documents})
        raise BadRequestError(f"doc {doc!r} is not a document of collection {collection!r} "
                              f"(its documents: {', '.join(names[:10]) or 'none'})")
    if page is None:
        return
    counts = [d["pages"] for d in documents if d["name"] == doc and isinstance(d.get("pages"), int) and d["pages"] > 0]
    if counts and not 1 <= page <= max(counts):
        n = max(counts)
        has = "1 page (page 1)" if n == 1 else f"{n} pages (1 to {n})"
        raise BadRequestError(f"feedback page: {doc!r} has {has}; there is no page {page}")


def recent(service, identity: str, *, admin: bool = False, collection: str | None = None, **filters: Any) -> list[dict]:
    """Recent verdicts through a Service: one collection or all it lists (see `list_verdicts`)."""
    names = service.collection_names()
    if collection:
        if collection not in names:
            from relayrag.naming import unknown_collection_message
            raise NotFoundError(unknown_collection_message(collection, names))
        names = [collection]
    return list_verdicts(service.ctx.docstore, names, identity=identity, admin=admin, **filters)


def hidden(service, identity: str, *, collection: str | None = None, **filters: Any) -> list[dict]:
    """`hidden_verdicts` through a Service: one collection or all it lists."""
    names = service.collection_names()
    if collection:
        names = [collection] if collection in names else []
    return hidden_verdicts(service.ctx.docstore, names, identity=identity, **filters)


# -- verdicts become test cases ------------------------------------------------------------------------------------
def golden_cases(docstore, collection: str, *, identity: str | None = None) -> list[dict]:
    """Golden-set items (relayrag.evaluation_answers' format: id, question, answers, doc, page, category,
    unanswerable) from the collection's 👎 verdicts that carry a correct answer or document; everyone's
    verdicts, or one identity's. Verdicts on the same question (case, width and spacing folded) are merged
    into one case: every distinct answer is an accepted one, the document most verdicts name is the expected
    one, with the pages they gave for it. Ids are `fb-` + the first 12 hex digits of the question's SHA-256,
    so exporting again gives the same ids. Questions come from the runs (a run that is gone is skipped)."""
    import hashlib
    import unicodedata
    from collections import Counter
    groups: dict[str, dict] = {}
    for e in reversed(docstore.list_feedback(collection, identity=identity, limit=1_000_000)):  # oldest first
        if e.get("verdict") != "down" or not (e.get("answer") or e.get("doc")):
            continue
        run = docstore.get_run(e["run_id"]) or {}
        question = (run.get("question") or "").strip()
        if not question:
            continue
        key = " ".join(unicodedata.normalize("NFKC", question).casefold().split())
        g = groups.setdefault(key, {"question": question, "answers": [], "docs": Counter(), "pages": {}})
        if e.get("answer") and e["answer"] not in g["answers"]:
            g["answers"].append(e["answer"])
        if e.get("doc"):
            g["docs"][e["doc"]] += 1
            if e.get("page"):
                g["pages"].setdefault(e["doc"], [])
                if e["page"] not in g["pages"][e["doc"]]:
                    g["pages"][e["doc"]].append(e["page"])
    out = []
    for key, g in groups.items():
        doc = g["docs"].most_common(1)[0][0] if g["docs"] else None
        pages = sorted(g["pages"].get(doc, [])) if doc else []
        out.append({"id": "fb-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], "question": g["question"],
                    "answers": g["answers"], "doc": doc, "page": pages[0] if len(pages) == 1 else (pages or None),
                    "category": "feedback", "unanswerable": False})
    return out
