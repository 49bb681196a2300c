"""The relayrag dashboard: a server-rendered web application (Starlette + Jinja2 + htmx + SSE).

`relayrag dashboard [--port N]` serves it on 127.0.0.1 (`relayrag.dashboard.app.serve`); infra/ deploys
the same app as a Cloud Run service. Pages: Overview (metrics from run records), Ask (stages streamed live,
cited answer), Runs (waterfall of stage timings), Collections (documents, upload with per-file progress,
delete, dead letters), Bandit (Beta posteriors per arm), Evaluation (BEIR / SQL runs with live progress and
history), Warehouse (schema, SQL config, a guarded query and the guard's verdict, "save as verified").

Everything the pages do goes through `relayrag.dashboard.backend` (one module: switching to the service
layer changes that file only). Needs the `dashboard` extra: `pip install 'relayrag[dashboard]'`.
"""
