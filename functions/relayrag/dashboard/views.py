"""The dashboard's routes: pages, htmx fragments, SSE streams, SVG plots and a small JSON API.

Every handler runs behind `AuthMiddleware`; every POST goes through `mutation_form` (CSRF). Blocking work
(relayrag's engine, docstore, ingestion, plots) runs in worker threads (`asyncio.to_thread`) or in a job.
"""

from __future__ import annotations

import asyncio
from typing import Any
import logging
import secrets
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from relayrag.dashboard import backend, feedback_views, metrics, plots
from relayrag.dashboard import auth as authmod
from relayrag.dashboard.core import (RUN_ID, Dashboard, _cookie_header, _field, describe_exception, mutation_form,
                                     same_origin, sse_events)
from relayrag.dashboard.jobs import Job
from relayrag.errors import RelayragError
from relayrag.naming import check_question
from relayrag.text import terminal_safe

log = logging.getLogger("relayrag.dashboard")
METRIC_RUNS = 200  # runs the overview's metrics are computed from (the most recent)
SVG = "image/svg+xml"


def _svg(svg: str) -> Response:
    # an SVG is served as an image; no script in it may run even if opened directly
    return Response(svg, media_type=SVG, headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
                                                  "Cache-Control": "no-store"})


def _job_error(dash: Dashboard, event: str):
    def on_error(job: Job, exc: Exception) -> None:
        message = describe_exception(exc) or (f"internal error ({type(exc).__name__}); the details are in the "
                                              "server log")
        job.emit(event, dash.fragment(None, "_error.html", message=message))
    return on_error


def routes(dash: Dashboard) -> list[Route]:
    r = dash.render

    # -- login ------------------------------------------------------------------------------------------
    async def login_page(request: Request):
        if request.state.session or request.state.bearer:
            return RedirectResponse(_safe_next(request.query_params.get("next")), status_code=303)
        return r(request, "login.html", next=_safe_next(request.query_params.get("next")), error=None)

    async def login(request: Request):
        form = await request.form(max_files=0, max_fields=5)
        token, nxt = _field(form, "token"), _safe_next(_field(form, "next"))
        if not same_origin(request, dash.trusted_origins):
            raise HTTPException(403, "cross-origin login refused (Origin is neither this dashboard nor one of "
                                     "RELAYRAG_DASHBOARD_ORIGINS)")
        client = request.client.host if request.client else "unknown"
        wait = dash.auth.login_attempt(client)
        if wait:
            resp = r(request, "login.html", status=429, next=nxt,
                     error=f"too many login attempts from this address; try again in {wait:.0f} s")
            resp.headers["Retry-After"] = str(int(wait + 0.999))
            return resp
        if not dash.auth.check_token(token):
            await asyncio.sleep(0.5)  # slows token guessing down
            return r(request, "login.html", status=401, next=nxt, error="invalid token")
        dash.auth.login_succeeded(client)
        done: Response = RedirectResponse(nxt, status_code=303)
        done.headers.append("set-cookie", _cookie_header(dash.auth.new_session(token), request))
        return done

    async def logout(request: Request):
        await mutation_form(dash, request)
        if request.state.session is not None:
            dash.auth.revoke(request.state.session)  # the cookie stops working here, not only in this browser
        resp = RedirectResponse("/login", status_code=303)
        resp.headers.append("set-cookie", f"{authmod.COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        return resp

    async def healthz(request: Request):
        return PlainTextResponse("ok")

    # -- overview ---------------------------------------------------------------------------------------
    def _metrics() -> dict:
        runs, skipped = backend.production_runs(METRIC_RUNS)  # evaluation runs are not production traffic
        c = backend.ctx()
        traces = {x["run_id"]: c.docstore.get_trace(x["run_id"]) for x in runs}
        return {**metrics.summarize(runs, traces), "evaluation_runs_left_out": skipped}

    async def overview(request: Request):
        m, cols = await asyncio.gather(asyncio.to_thread(_metrics), asyncio.to_thread(backend.list_collections))
        return r(request, "overview.html", m=m, collections=cols, window=METRIC_RUNS)

    async def api_metrics(request: Request):
        return JSONResponse(await asyncio.to_thread(_metrics))

    # -- ask --------------------------------------------------------------------------------------------
    async def ask_page(request: Request):
        cols = await asyncio.to_thread(backend.list_collections)
        return r(request, "ask.html", collections=cols, selected=request.query_params.get("collection", ""))

    async def ask(request: Request):
        form = await mutation_form(dash, request)
        question, collection = _field(form, "question").strip(), _field(form, "collection").strip()
        arm = _field(form, "arm").strip() or None
        filters = _field(form, "filters").strip()
        check_question(question)  # empty, or over MAX_QUESTION_CHARS: said in a sentence, before anything runs
        backend.check_collection(collection)
        if filters:
            await asyncio.to_thread(backend.check_filters, collection, filters)  # a typo is an error at once

        def work(job: Job) -> None:
            from relayrag.dashboard.telemetry import RunSpans
            spans = RunSpans(collection, len(question))

            def on_event(e: dict) -> None:
                if e.get("event") != "step":
                    return
                spans.stage(e)
                res = e.get("result") if isinstance(e.get("result"), dict) else {}
                job.emit("stage", dash.fragment(None, "_stage.html", e=e, r=res))
            try:
                result = backend.ask(question, collection, arm=arm, on_event=on_event, filters=filters or None)
            except Exception as exc:
                spans.finish(None, error=str(exc))
                raise
            spans.finish(result)
            record = backend.get_run(result["run_id"])["record"]
            job.result = result
            job.emit("result", dash.fragment(None, "_answer.html", res=result, columns=record.get("columns") or []))

        job = dash.jobs.start("ask", work, _job_error(dash, "result"))
        return r(request, "_ask_stream.html", job=job, question=question, collection=collection)

    async def job_events(request: Request):
        job = dash.jobs.get(request.path_params["job_id"])
        if job is None:
            raise HTTPException(404, "unknown or expired job")
        from sse_starlette.sse import EventSourceResponse
        return EventSourceResponse(sse_events(job, request), ping=15)

    # -- runs -------------------------------------------------------------------------------------------
    def _run_id(request: Request) -> str:
        run_id = request.path_params["run_id"]
        if not RUN_ID.match(run_id):
            raise RelayragError(f"unknown run_id {run_id!r}")
        return run_id

    async def runs_page(request: Request):
        runs = await asyncio.to_thread(backend.list_runs, 100)
        return r(request, "runs.html", runs=runs)

    async def run_page(request: Request):
        run = await asyncio.to_thread(backend.get_run, _run_id(request))
        return r(request, "run.html", run=run, res=run["result"], rec=run["record"], trace=run["trace"])

    async def run_waterfall(request: Request):
        run = await asyncio.to_thread(backend.get_run, _run_id(request))
        return _svg(await asyncio.to_thread(plots.waterfall, run["trace"], f"run {run['result']['run_id']}"))

    async def run_citation(request: Request):
        run_id = _run_id(request)
        try:
            n = int(request.path_params["n"])
        except ValueError:
            raise RelayragError("a citation number is an integer") from None
        cit = await asyncio.to_thread(backend.citation, run_id, n)
        return r(request, "_citation.html", c=cit, run_id=run_id)

    async def run_citation_page(request: Request):
        run_id = _run_id(request)
        try:
            n = int(request.path_params["n"])
        except ValueError:
            raise RelayragError("a citation number is an integer") from None
        png = await asyncio.to_thread(backend.citation_page, run_id, n, request.path_params["size"])
        # page images are content-addressed (their key holds the file's sha256): a browser may keep them a while
        return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    async def api_run(request: Request):
        return JSONResponse(await asyncio.to_thread(backend.get_run, _run_id(request)))

    # -- collections ------------------------------------------------------------------------------------
    async def collections_page(request: Request):
        cols = await asyncio.to_thread(backend.list_collections)
        return r(request, "collections.html", collections=cols)

    async def collection_page(request: Request):
        d = await asyncio.to_thread(backend.collection_detail, request.path_params["name"])
        return r(request, "collection.html", d=d, name=request.path_params["name"],
                 max_mb=dash.max_upload_bytes // (1024 * 1024))

    async def create_collection(request: Request):
        form = await mutation_form(dash, request)
        name = backend.check_collection(_field(form, "name").strip())
        where = f"/collections/{name}"
        if "hx-request" in request.headers:
            # htmx: a 303 would be followed inside the XHR and the whole collection page (navigation bar
            # included) swapped into the form's target; HX-Redirect on a 200 makes the browser go there instead
            return Response(status_code=200, headers={"HX-Redirect": where})
        return RedirectResponse(where, status_code=303)

    async def upload(request: Request):
        name = backend.check_collection(request.path_params["name"])
        form = await mutation_form(dash, request)
        files = [f for f in form.getlist("files") if hasattr(f, "filename")]
        if not files:
            raise RelayragError("choose at least one file to upload")
        cloud = bool(backend.documents_bucket())
        staging = ""
        if cloud:  # the cloud's source area is the documents bucket; stage the bytes in a private temp dir
            staging = tempfile.mkdtemp(prefix="relayrag-upload-")
        saved: list[tuple[str, object]] = []  # (display name, Path or error message)
        planned: list[tuple[Any, Path]] = []  # (form file, target) of the names that can be stored
        for f in files:
            try:
                if cloud:
                    target = Path(staging) / backend.safe_upload_name(f.filename or "")
                else:
                    target = backend.upload_path(name, f.filename or "")
            except RelayragError as exc:
                saved.append((terminal_safe(f.filename or "(no name)"), str(exc)))  # no NUL or RLO in the page
                continue
            saved.append((target.name, target))
            planned.append((f, target))
        counts = Counter(t.name for _, t in planned)
        for i, (shown, item) in enumerate(saved):  # two files of one name: neither is taken, none is lost silently
            if isinstance(item, Path) and counts[item.name] > 1:
                saved[i] = (shown, f"{counts[item.name]} files named {item.name!r} in one upload; rename one")
        planned = [(f, t) for f, t in planned if counts[t.name] == 1]
        # all or nothing: every file is written under a temporary name first, and only when all were written are
        # they moved into place; a failure (disk full, ...) removes what this request wrote and changes nothing
        staged: list[tuple[Path, Path]] = []
        try:
            for f, target in planned:
                tmp = target.with_name(f".upload-{secrets.token_hex(6)}")
                staged.append((tmp, target))
                with tmp.open("wb") as out:
                    while chunk := await f.read(1 << 20):
                        out.write(chunk)
        except OSError as exc:
            for tmp, _ in staged:
                tmp.unlink(missing_ok=True)
            if staging:
                shutil.rmtree(staging, ignore_errors=True)
            raise RelayragError(f"upload not stored, nothing was kept ({exc.strerror or exc})") from None
        for tmp, target in staged:
            tmp.replace(target)  # each upload appears whole or not at all

        def one(item, progress) -> tuple[str, str]:
            if cloud:
                key, generation = backend.upload_to_bucket(name, item.name, item)
                item.unlink(missing_ok=True)
                progress(f"uploaded to {key}; waiting for GCS-triggered ingestion")
                w = backend.wait_for_ingestion(name, key, generation)
                return w["state"], w["detail"]
            try:
                s = backend.ingest_file(name, item, on_progress=lambda done, total, msg: progress(msg))
            except RelayragError as exc:
                item.unlink(missing_ok=True)
                return "failed", str(exc)
            if s["failed"]:
                return "failed", s["failed"][0]["error"]
            if s["files"]["ingested"]:
                note = f"; {s['embedder_note']}" if s.get("embedder_note") else ""  # a CJK collection's embedder
                return "ingested", f"{s['chunks_embedded']} chunks embedded, version {s['version']}{note}"
            return "unchanged", "same content as the stored copy; nothing to do"

        def work(job: Job) -> None:
            results = []
            for i, (shown, item) in enumerate(saved):
                fid = f"file-{job.id}-{i}"

                def line(state: str, detail: str, oob: bool = True) -> None:
                    # the first line is appended; later ones replace it in place (hx-swap-oob by id)
                    job.emit("file", dash.fragment(None, "_file_progress.html", name=shown, state=state,
                                                   detail=detail, fid=fid, oob=oob))
                line("loading", "", oob=False)
                last = [0.0]

                def progress(msg: str) -> None:
                    if time.monotonic() - last[0] >= 0.5:
                        last[0] = time.monotonic()
                        line("loading", msg)
                state, detail = ("failed", item) if isinstance(item, str) else one(item, progress)
                results.append({"name": shown, "state": state, "detail": detail})
                line(state, detail)
            job.result = results
            job.emit("summary", dash.fragment(None, "_upload_done.html", results=results, collection=name))
            if staging:
                shutil.rmtree(staging, ignore_errors=True)

        job = dash.jobs.start("ingest", work, _job_error(dash, "summary"))
        return r(request, "_upload_stream.html", job=job, collection=name)

    async def delete_document(request: Request):
        name = backend.check_collection(request.path_params["name"])
        form = await mutation_form(dash, request)
        key = _field(form, "path")
        s = await asyncio.to_thread(backend.delete_document, name, key)
        return r(request, "_deleted.html", doc_path=key, summary=s)

    # -- bandit -----------------------------------------------------------------------------------------
    def _bandit_rows() -> list[dict]:
        runs, _ = backend.production_runs(METRIC_RUNS)
        m = metrics.summarize(runs, {})
        out = []
        for c in backend.list_collections():
            if not c.get("current_version"):
                continue
            contexts = []
            quality = backend.arms(c["name"], quality=True)
            for context, arms in backend.arms(c["name"]).items():
                stats = {b["arm"]: b for b in m["bandit"] if b["collection"] == c["name"] and b["context"] == context}
                offered = metrics.offered_arms(runs, c["name"], context)
                q = quality.get(context, {})
                shown = [a for a in arms if offered is None or a in offered]
                contexts.append({"context": context, "arms": [
                    {"arm": a, "alpha": ab[0], "beta": ab[1], "mean": ab[0] / (ab[0] + ab[1]),
                     "q_alpha": q.get(a, (1.0, 1.0))[0], "q_beta": q.get(a, (1.0, 1.0))[1],
                     "q_mean": q.get(a, (1.0, 1.0))[0] / sum(q.get(a, (1.0, 1.0))),
                     "pulls": stats.get(a, {}).get("pulls", 0), "mean_reward": stats.get(a, {}).get("mean_reward")}
                    for a, ab in arms.items() if a in shown],
                    # one arm offered: nothing to win against, so its win posterior stays at the prior
                    "lone": shown[0] if offered is not None and len(shown) == 1 else None,
                    "not_offered": sorted(a for a in arms if offered is not None and a not in offered)})
            out.append({"name": c["name"], "contexts": contexts})
        return out

    async def bandit_page(request: Request):
        rows = await asyncio.to_thread(_bandit_rows)
        return r(request, "bandit.html", rows=rows, window=METRIC_RUNS)

    async def bandit_posterior(request: Request):
        name = backend.check_collection(request.path_params["name"])
        by_context = await asyncio.to_thread(backend.arms, name)
        context = request.query_params.get("context") or next(iter(by_context))
        if context not in by_context:
            raise RelayragError(f"collection {name!r} has no bandit evidence for query context {context!r} "
                                f"(contexts: {', '.join(by_context)})")
        runs, _ = await asyncio.to_thread(backend.production_runs, METRIC_RUNS)
        offered = metrics.offered_arms(runs, name, context)
        shown = {a: ab for a, ab in by_context[context].items() if offered is None or a in offered}
        return _svg(await asyncio.to_thread(plots.beta_posteriors, shown,
                                            f"{name}, {context} queries: posterior per arm"))

    async def bandit_rewards(request: Request):
        name = backend.check_collection(request.path_params["name"])
        runs, _ = await asyncio.to_thread(backend.production_runs, METRIC_RUNS)
        context = request.query_params.get("context")
        pulls = [p for p in metrics.bandit_pulls(runs) if p["collection"] == name
                 and (context is None or p["context"] == context)]
        title = f"{name}{', ' + context + ' queries' if context else ''}: reward over time"
        return _svg(await asyncio.to_thread(plots.reward_over_time, pulls, title))

    # -- evaluation -------------------------------------------------------------------------------------
    async def eval_page(request: Request):
        datasets, cols, hist = await asyncio.gather(asyncio.to_thread(backend.list_datasets),
                                                    asyncio.to_thread(backend.list_collections),
                                                    asyncio.to_thread(backend.eval_history, None, 30))
        q = request.query_params
        chosen, chosen_col = backend.eval_choice(datasets, cols, q.get("dataset"), q.get("collection"))
        kinds = {d["id"]: d["kind"] for d in datasets}
        fits = chosen is None or chosen_col is None or backend.dataset_fits(
            kinds[chosen], next(c for c in cols if c["name"] == chosen_col))
        return r(request, "eval.html", datasets=datasets, collections=cols, history=list(reversed(hist)),
                 roots=[str(p) for p in backend.dataset_roots()], chosen=chosen, chosen_col=chosen_col, fits=fits)

    async def eval_run(request: Request):
        form = await mutation_form(dash, request)
        ds_id, collection = _field(form, "dataset"), backend.check_collection(_field(form, "collection").strip())
        limit_raw = _field(form, "limit").strip() or "0"
        if not limit_raw.isdigit():
            raise RelayragError("limit must be a whole number (0 = all)")
        pipeline = _field(form, "pipeline") == "on"
        backend.dataset(ds_id)

        def work(job: Job) -> None:
            t0 = time.perf_counter()

            def progress(msg: str) -> None:
                job.emit("progress", dash.fragment(None, "_eval_progress.html", msg=msg,
                                                   s=time.perf_counter() - t0))

            def item(it: dict) -> None:
                from relayrag.records import miss_line
                if "expected" in it:  # an answer-quality row: a miss is shown with the answer's text
                    progress(miss_line(it) or f"{it.get('id')}: {'refused' if it.get('refused') else 'correct'}")
                    return
                mark = ("correct" if it.get("correct") else "wrong") if "correct" in it else (
                    "refused" if it.get("refused") else "RAN (not refused)")
                progress(f"{it.get('id')}: {mark}")
            entry = backend.run_eval(ds_id, collection, limit=int(limit_raw) or None, pipeline=pipeline,
                                     on_progress=progress, on_item=item)
            job.result = entry
            job.emit("result", dash.fragment(None, "_eval_result.html", e=entry))

        job = dash.jobs.start("eval", work, _job_error(dash, "result"))
        return r(request, "_eval_stream.html", job=job, dataset=ds_id, collection=collection)

    async def eval_history_svg(request: Request):
        ds_id = request.path_params["dataset"]
        hist = await asyncio.to_thread(backend.eval_history, ds_id, 100)
        points: dict[str, list[tuple[int, float]]] = {}
        ylabel = "nDCG@10"
        for i, e in enumerate(hist, start=1):
            rep = e.get("report") or {}
            if e.get("kind") == "beir":
                for arm, m in (rep.get("arms") or {}).items():
                    points.setdefault(arm, []).append((i, m["ndcg@10"]))
                if rep.get("pipeline"):
                    points.setdefault("pipeline", []).append((i, rep["pipeline"]["ndcg@10"]))
            elif e.get("kind") == "answers":
                ylabel = "answer accuracy / refusal recall"
                for method, m in (rep.get("methods") or {}).items():
                    o = m.get("overall") or {}
                    for key, label in (("answer_accuracy", "accuracy"), ("refusal_recall", "refusal recall")):
                        if o.get(key) is not None:
                            points.setdefault(f"{method} {label}", []).append((i, o[key]))
            else:
                ylabel = "execution accuracy / guard refusals"
                if rep.get("accuracy") is not None:
                    points.setdefault("accuracy", []).append((i, rep["accuracy"]))
                g = rep.get("guard") or {}
                if g.get("total"):
                    points.setdefault("guard refused", []).append((i, g["refused"] / g["total"]))
        return _svg(await asyncio.to_thread(plots.history, points, ylabel, f"{ds_id}: history"))

    # -- warehouse --------------------------------------------------------------------------------------
    async def warehouse_page(request: Request):
        cols = [c for c in await asyncio.to_thread(backend.list_collections) if c.get("warehouse")]
        name = request.query_params.get("collection") or (cols[0]["name"] if cols else "")
        wh = await asyncio.to_thread(backend.warehouse, name) if name else None
        return r(request, "warehouse.html", collections=cols, name=name, wh=wh)

    async def warehouse_query(request: Request):
        name = backend.check_collection(request.path_params["name"])
        form = await mutation_form(dash, request)
        sql = _field(form, "sql")
        out = await asyncio.to_thread(backend.guarded_query, name, sql)
        return r(request, "_query_result.html", g=out["guard"], q=out["result"], sql=sql, name=name)

    async def warehouse_verify(request: Request):
        """Save as verified: the question, its SQL (@name for slots) and the slots; stored after the guard accepts
        it and it runs (Service.sql_verify), else the reason. A fragment either way."""
        name = backend.check_collection(request.path_params["name"])
        form = await mutation_form(dash, request)
        try:
            rec = await asyncio.to_thread(backend.verify, name, _field(form, "question"), _field(form, "sql"),
                                          _field(form, "slots"))
        except RelayragError as exc:
            return r(request, "_verify_result.html", rec=None, error=str(exc))
        return r(request, "_verify_result.html", rec=rec, error=None)

    return [
        Route("/login", login_page, methods=["GET"]), Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]), Route("/healthz", healthz),
        Route("/", overview), Route("/api/metrics", api_metrics),
        Route("/ask", ask_page, methods=["GET"]), Route("/ask", ask, methods=["POST"]),
        Route("/jobs/{job_id}/events", job_events),
        Route("/runs", runs_page), Route("/runs/{run_id}", run_page),
        Route("/runs/{run_id}/waterfall.svg", run_waterfall),
        Route("/runs/{run_id}/citations/{n}", run_citation),
        Route("/runs/{run_id}/citations/{n}/{size}.png", run_citation_page), Route("/api/runs/{run_id}", api_run),
        Route("/collections", collections_page, methods=["GET"]),
        Route("/collections", create_collection, methods=["POST"]),
        Route("/collections/{name}", collection_page),
        Route("/collections/{name}/upload", upload, methods=["POST"]),
        Route("/collections/{name}/delete", delete_document, methods=["POST"]),
        Route("/bandit", bandit_page), Route("/bandit/{name}/posterior.svg", bandit_posterior),
        Route("/bandit/{name}/rewards.svg", bandit_rewards),
        Route("/eval", eval_page, methods=["GET"]), Route("/eval", eval_run, methods=["POST"]),
        Route("/eval/history/{dataset}.svg", eval_history_svg),
        Route("/warehouse", warehouse_page), Route("/warehouse/{name}/query", warehouse_query, methods=["POST"]),
        Route("/warehouse/{name}/verify", warehouse_verify, methods=["POST"]),
        *feedback_views.routes(dash),
    ]


def _safe_next(target: str | None) -> str:
    """A post-login redirect target on this site only (a path, not //host or a scheme)."""
    t = (target or "/").strip()
    if not t.startswith("/") or t.startswith("//") or "\\" in t or any(ord(ch) < 32 for ch in t):
        return "/"
    return t

