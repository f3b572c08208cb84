"""Jedi in a process of its own, at the lowest priority: the analysis never holds the server's
interpreter.

Jedi is pure Python. On a thread of the server's process it holds the interpreter's lock while it
infers, and a thread at the lowest scheduling priority that holds that lock is the last to run
when the cores are busy: everything else waits for it. On a 2-core machine with both cores busy,
a Python thread at nice 19 made the main thread of its process wake up to 1.2 s late (p99), against
51 ms at nice 0 and 9 ms with no such thread; in the server that is the editor's messages left
unread and the decode loop stalled between rounds while a file is analysed. In a process of its
own, the analysis has its own interpreter.

It runs at the lowest priority (`SPEC_LSP_ANALYSIS_NICE`, default 19), and so gets only what
llama.cpp's threads leave: held-out dereferences asked 5 s after opening their file found no
table in 15 of 28 (`bench names-read`, the file prefix evaluated while the person read),
against none of 30 at nice 0; but at nice 0 it takes a core from the model after every edit,
and a person writing completed 14.0% of 8 held-out bodies by Tab against 17.8% (`bench
writing`, one run each), with no right name gained by the tables it had in time (20 of 30 both
ways, the guide on and off).

`JediProcess.analyse` has `Analyser.analyse`'s signature: the analysis thread calls it as it
would the analyser, and it waits on the pipe (holding nothing) while the child works. Between
receivers the child reads whether the parent said stop (the hooks' `cancelled`); what is ready
is sent back as it goes (`publish`). It no longer waits while a request decodes (`paused`): that
wait kept the lock free for the decode loop, and the child holds none of the server's. The child
starts on first use and again after it dies (an analysis it was running is reported as failed).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import threading
import weakref
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from spec_lsp.engine.guide.table import NO_HOOKS, Hooks, Table

POLL_S = 0.02  # how often the parent looks at its hooks while the child works
CLOSE_WAIT_S = 0.5


class AnalysisFailed(RuntimeError):
    """The child's analysis raised (its traceback as the message) or the child died."""


class JediProcess:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # one analysis at a time
        self._sending = threading.Lock()  # one writer on the pipe (a close's forget, any thread)
        self._process: Any = None
        self._conn: Connection | None = None
        self.starts = 0
        self.max_receivers: int | None = None  # (the child's Analyser's, where a tool sets it)

    def analyse(
        self,
        text: str,
        *,
        version: int,
        path: str | None,
        root: str | None,
        near_line: int = 0,
        earlier: Table | None = None,
        hooks: Hooks = NO_HOOKS,
        buffers: Mapping[str, tuple[str, float]] | None = None,
    ) -> Table:
        job: dict[str, Any] = {
            "text": text,
            "version": version,
            "path": path,
            "root": root,
            "near_line": near_line,
            "earlier": earlier,
        }
        if buffers:  # (the other open documents' texts, by path)
            job["buffers"] = dict(buffers)
        if self.max_receivers is not None:
            job["max_receivers"] = self.max_receivers
        with self._lock:
            conn = self._started()
            self._send(("analyse", job))
            return self._follow(conn, hooks)

    def forget(self, path: str) -> None:
        """A document closed: the child's caches let it go (after the analysis it runs, if
        any: nothing waits for it)."""
        self._send(("forget", path))

    def close(self) -> None:
        """Stop the child (an analysis it runs ends as failed; the thread that waits on it is
        told so at once)."""
        with self._sending:
            process, conn, self._process, self._conn = self._process, self._conn, None, None
        if process is None:
            return
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send(("close", None))
        process.join(CLOSE_WAIT_S)  # (between receivers it reads the close and returns)
        if process.is_alive():
            process.kill()  # (mid-receiver: what it was finding is of no use now)
            process.join(CLOSE_WAIT_S)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def memory(self) -> dict[str, Any]:
        """The child's resident memory (MB; None before it starts) and how often it started."""
        return {
            "analysis_process_rss_mb": _rss_mb(self.pid),
            "analysis_process_starts": self.starts,
        }

    # -- the parent's side ----------------------------------------------------------------------
    def _started(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._conn is not None:
            return self._conn
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_serve, args=(theirs,), name="spec-lsp-analysis", daemon=True
        )
        process.start()
        theirs.close()
        weakref.finalize(self, _stop, process, ours)  # (an engine dropped without a close)
        self._process, self._conn = process, ours
        self.starts += 1
        return ours

    def _follow(self, conn: Connection, hooks: Hooks) -> Table:
        """Relay the child's partial tables to `hooks.publish`, and the hooks' stop to the
        child, until its answer."""
        stopped = False
        while True:
            try:
                ready = conn.poll(POLL_S)
                message = conn.recv() if ready else None
            except (EOFError, OSError) as dead:
                self._conn = None
                raise AnalysisFailed("the analysis process ended") from dead
            if message is not None:
                kind, payload = message
                if kind == "partial":
                    hooks.publish(payload)
                elif kind == "done":
                    return payload  # type: ignore[no-any-return]
                elif kind == "error":
                    raise AnalysisFailed(payload)
                continue
            if not stopped and hooks.cancelled():
                stopped = self._send(("cancel", None))

    def _send(self, message: tuple[str, Any]) -> bool:
        with self._sending:
            try:
                if self._conn is not None:
                    self._conn.send(message)
                    return True
            except OSError:
                self._conn = None
            return False


def _stop(process: Any, conn: Connection) -> None:
    with contextlib.suppress(OSError):
        conn.close()  # (the child reads the end of its pipe and returns)
    if process.is_alive():
        process.join(0.2)
    if process.is_alive():
        process.kill()


def _rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return round(int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return None


# -- the child's side ---------------------------------------------------------------------------
class _Inbox:
    """What the parent said, read between receivers."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.cancel = False
        self.later: list[tuple[str, Any]] = []  # (forget, close: for after the analysis)

    def cancelled(self) -> bool:
        while self.conn.poll(0):
            message: tuple[str, Any] = self.conn.recv()
            if message[0] == "cancel":
                self.cancel = True
            else:
                self.later.append(message)
        return self.cancel


def _serve(conn: Connection) -> None:
    """The child: analyses one job at a time until told to close or the parent goes."""
    os.dup2(2, 1)  # (the parent's stdout may be the editor's protocol: never write there)
    sys.stdout = sys.stderr
    try:
        os.nice(int(os.environ.get("SPEC_LSP_ANALYSIS_NICE", "19")))
    except (OSError, ValueError):
        pass
    from spec_lsp.engine.guide.python.analysis import Analyser

    analyser = Analyser()
    inbox = _Inbox(conn)
    while True:
        try:
            kind, payload = inbox.later.pop(0) if inbox.later else conn.recv()
        except (EOFError, OSError):
            return
        if kind == "close":
            return
        if kind == "forget":
            analyser.forget(payload)
        elif kind == "analyse":
            inbox.cancel = False
            analyser.max_receivers = payload.pop("max_receivers", analyser.max_receivers)
            hooks = Hooks(
                cancelled=inbox.cancelled, publish=lambda table: conn.send(("partial", table))
            )
            try:
                table = analyser.analyse(payload.pop("text"), hooks=hooks, **payload)
            except Exception as failed:  # noqa: BLE001 (odd input: the parent logs it)
                conn.send(("error", f"{type(failed).__name__}: {failed}"))
            else:
                conn.send(("done", table))
