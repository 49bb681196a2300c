"""DuckDB queries in a child process, so the wall-clock and memory limits hold for every query.

Why a process: DuckDB checks for `interrupt()` between vectors, not inside one function call, so
`SELECT repeat('x', 1500000000)` ran 28-37 s past a 10 s timeout, and string results are allocated outside
DuckDB's buffer manager, so the same query peaked at 3-3.7 GB under `memory_limit=2GB` (issue 10 item 12).
The child runs one query at a time on its own read-only connection and interrupts it itself at the timeout;
the parent waits `timeout + GRACE_S`, watches the child's resident memory (Linux /proc) and kills it when
either limit is passed. A killed worker is started again on the next query (about 0.3 s). Results are
capped by rows (max_rows) and by the size of their JSON (max_bytes), checked while fetching.

Protocol (pickled frames over the child's stdin/stdout, each prefixed by its 8-byte length): the parent sends
{"sql", "max_rows", "timeout_s", "max_bytes"}; the child answers {"ok": True, "columns", "rows", "truncated"}
or {"ok": False, "kind": "timeout"|"result_bytes"|"error", "error"}.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

GRACE_S = 1.0           # past the timeout, the parent kills a child that has not answered
POLL_S = 0.02           # memory watch interval
FETCH_BATCH = 64


class WorkerKilled(Exception):
    """The child was stopped by the parent: `kind` is "timeout" or "memory"."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _send(fh, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(struct.pack("<Q", len(data)) + data)
    fh.flush()


def _recv(fh):
    head = fh.read(8)
    if len(head) < 8:
        raise EOFError("worker closed its pipe")
    (n,) = struct.unpack("<Q", head)
    data = fh.read(n)
    if len(data) < n:
        raise EOFError("worker closed its pipe")
    return pickle.loads(data)


def _rss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class DuckWorker:
    """One child process holding a read-only DuckDB connection to `path`. Not thread-safe: the caller
    serialises queries (DuckDBWarehouse holds a lock)."""

    def __init__(self, path: Path, memory_limit_bytes: int, config: dict):
        self.path = Path(path)
        self.memory_limit_bytes = memory_limit_bytes
        self.config = config
        self._proc: subprocess.Popen | None = None
        self.restarts = 0

    def _start(self) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", "relayrag.sql.duck_worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        _send(proc.stdin, {"path": str(self.path), "config": self.config})
        hello = _recv(proc.stdout)
        if not hello.get("ok"):
            proc.kill()
            proc.wait()
            raise RuntimeError(hello.get("error", "worker failed to start"))
        return proc

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def query(self, sql: str, *, max_rows: int, timeout_s: float, max_bytes: int) -> dict:
        """Run one SELECT. Returns the child's answer (see the module docstring); raises WorkerKilled when
        the child had to be stopped."""
        if self._proc is None or self._proc.poll() is not None:
            if self._proc is not None:
                self.restarts += 1
            self._proc = self._start()
        proc = self._proc
        _send(proc.stdin, {"sql": sql, "max_rows": max_rows, "timeout_s": timeout_s, "max_bytes": max_bytes})
        box: dict = {}
        reader = threading.Thread(target=lambda: box.update(answer=_safe_recv(proc.stdout)), daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout_s + GRACE_S
        peak = 0
        while reader.is_alive():
            reader.join(POLL_S)
            rss = _rss_bytes(proc.pid) or 0
            peak = max(peak, rss)
            if rss > self.memory_limit_bytes:
                self._kill(proc)
                raise WorkerKilled("memory", f"query stopped: it used more than "
                                             f"{self.memory_limit_bytes / 2**30:.1f} GiB of memory")
            if time.monotonic() > deadline:
                self._kill(proc)
                raise WorkerKilled("timeout", f"query timed out after {timeout_s:g} s (stopped)")
        answer = box.get("answer")
        if isinstance(answer, BaseException) or answer is None:
            self._kill(proc)
            raise WorkerKilled("memory" if proc.returncode in (-signal.SIGKILL, -signal.SIGSEGV) else "error",
                               f"query stopped: the worker died ({answer})")
        answer["peak_rss"] = peak
        return answer

    def _kill(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
        proc.wait()
        if self._proc is proc:
            self._proc = None
            self.restarts += 1


def _safe_recv(fh):
    try:
        return _recv(fh)
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
        return exc


# ------------------------------------------------------------------------------------------------ child

def _run_one(con, duckdb, req: dict) -> dict:
    import json

    from relayrag.sql.values import json_value
    timer = threading.Timer(req["timeout_s"], con.interrupt)
    timer.start()
    try:
        cur = con.execute(req["sql"])
        columns = [d[0] for d in cur.description or []]
        rows: list[list] = []
        size = 2
        while len(rows) <= req["max_rows"]:
            batch = cur.fetchmany(min(FETCH_BATCH, req["max_rows"] + 1 - len(rows)))
            if not batch:
                break
            for r in batch:
                row = [json_value(v) for v in r]
                size += len(json.dumps(row, ensure_ascii=False, default=str).encode("utf-8")) + 1
                if size > req["max_bytes"]:
                    return {"ok": False, "kind": "result_bytes",
                            "error": f"result too large: over {req['max_bytes']:,} bytes of JSON after "
                                     f"{len(rows)} rows; select fewer or shorter columns, or aggregate"}
                rows.append(row)
        return {"ok": True, "columns": columns, "rows": rows[: req["max_rows"]],
                "truncated": len(rows) > req["max_rows"]}
    except Exception as exc:  # noqa: BLE001 - reported to the parent as the query's error
        if isinstance(exc, duckdb.InterruptException) or "interrupt" in str(exc).lower():
            return {"ok": False, "kind": "timeout", "error": f"query timed out after {req['timeout_s']:g} s"}
        return {"ok": False, "kind": "error", "error": f"{type(exc).__name__}: {exc}"[:1000]}
    finally:
        timer.cancel()


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the pipe
    hello = _recv(stdin)
    try:
        import duckdb
        con = duckdb.connect(hello["path"], read_only=True, config=hello["config"])
    except Exception as exc:  # noqa: BLE001
        _send(stdout, {"ok": False, "error": f"could not open {hello['path']} read-only: {exc}"})
        return
    _send(stdout, {"ok": True})
    while True:
        try:
            req = _recv(stdin)
        except EOFError:
            return
        _send(stdout, _run_one(con, duckdb, req))


if __name__ == "__main__":
    main()
