"""Background jobs whose progress a page follows over Server-Sent Events.

A job (an ask, an upload's ingestion, an evaluation) runs in a worker thread and appends events
`(event_name, html)` to its log; `/jobs/{id}/events` replays the log from the start and then follows it,
so a reconnecting EventSource loses nothing. The last event of every job is `done`. Jobs live in the
process's memory (at most MAX_JOBS, oldest finished dropped first); on Cloud Run the service uses session
affinity so the stream reaches the instance that runs the job.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from relayrag.errors import RelayragError

log = logging.getLogger(__name__)
MAX_JOBS = 200


class Job:
    def __init__(self, kind: str):
        self.id = secrets.token_urlsafe(16)
        self.kind = kind
        self.created = time.time()
        self.events: list[tuple[str, str]] = []
        self.done = False
        self.result: object = None
        self._lock = threading.Lock()

    def emit(self, event: str, html: str) -> None:
        with self._lock:
            self.events.append((event, html))

    def finish(self) -> None:
        with self._lock:
            if not self.done:
                self.events.append(("done", "done"))  # an SSE event with empty data is never dispatched
                self.done = True


class Jobs:
    def __init__(self):
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, kind: str, work: Callable[[Job], None], on_error: Callable[[Job, Exception], None]) -> Job:
        """Run `work(job)` in a daemon thread; an exception it raises goes to `on_error(job, exc)` (which
        emits the message the page shows); the job is finished either way."""
        job = Job(kind)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > MAX_JOBS:
                oldest = next((k for k, j in self._jobs.items() if j.done), None)
                if oldest is None:
                    break
                self._jobs.pop(oldest)

        def run() -> None:
            try:
                work(job)
            except Exception as exc:  # noqa: BLE001 - reported on the page; a bug is logged with its traceback
                if isinstance(exc, RelayragError):
                    log.info("dashboard job %s (%s): %s", job.id, kind, exc)
                else:
                    log.exception("dashboard job %s (%s) failed", job.id, kind)
                try:
                    on_error(job, exc)
                except Exception:  # noqa: BLE001
                    log.exception("reporting the failure of job %s failed", job.id)
            finally:
                job.finish()

        threading.Thread(target=run, name=f"dashboard-{kind}-{job.id[:6]}", daemon=True).start()
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)
