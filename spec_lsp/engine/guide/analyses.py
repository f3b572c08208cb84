"""The guide's prepared analyses: Jedi's answers for each open Python document (tree-sitter's for
JS/TS, Go, Rust and Java: braced/structural.py), made on a thread of its own after each
edit (the newest text of the document edited last first), never on a request's way. A request
reads the newest table there is for its document (maybe one version behind: scopes and receivers
are keyed by text, not by line; or partial: what a running analysis has ready, the receivers
nearest the cursor first, published as it goes); without one it decodes unguided.

The thread runs at the lowest scheduling priority the system gives it (Linux: per thread), and
stops between receivers while a request decodes (`serving`): Jedi is Python, and a thread
holding the interpreter makes the decode loop wait for it at every token whatever its
priority (on the 42-line cross-file bench, the first answers after 5 s of reading took
1.2-1.7x as long with the analysis running beside them).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spec_lsp.engine.guide.braced.outline import LANGUAGES
from spec_lsp.engine.guide.braced.structural import StructuralAnalyser
from spec_lsp.engine.guide.python.analysis import Analyser
from spec_lsp.engine.guide.table import Hooks, Table
from spec_lsp.paths import document_path
from spec_lsp.textdiff import common_prefix

log = logging.getLogger(__name__)
PYTHON = (".py", ".pyi")
BRACED = tuple(LANGUAGES)  # the brace languages' extensions (tree-sitter's analysis)
SETTLE_S = 0.15  # an edit waits this long for the next before its analysis starts


class Analyses:
    def __init__(self) -> None:
        self.enabled = False  # (the `guide` setting; the texts are kept either way)
        self.folders: list[str] = []
        self.analyser = Analyser()
        self.structural = StructuralAnalyser()
        self._lock = threading.Condition()
        self._texts: dict[str, tuple[int, str]] = {}  # document -> (our version, its text)
        self._tables: dict[str, Table] = {}
        self._near: dict[str, int] = {}  # document -> the line last asked at
        self._pending: list[str] = []  # documents to analyse, the last edited last
        self._thread: threading.Thread | None = None
        self._closed = False
        self._serving = 0  # requests decoding now: the analysis waits between receivers
        self.delay_s = float(os.environ.get("SPEC_LSP_ANALYSIS_DELAY_MS", "0")) / 1000
        self.runs = 0
        self.seconds = 0.0
        self.last_seconds = 0.0

    # -- what the editor says (instant) -------------------------------------------------------
    def set_enabled(self, on: bool) -> None:
        """The `guide` setting: turned on, the open documents not analysed yet are."""
        with self._lock:
            self.enabled = on
            if on:  # (those analysed already are not again: any setting changed calls this)
                for document in self._texts:
                    if not self._current_locked(document):
                        self._queue(document)

    def document_changed(self, document_id: str, text: str) -> None:
        if not document_path(document_id).lower().endswith(PYTHON + BRACED):
            return
        with self._lock:
            version, old = self._texts.get(document_id, (0, ""))
            if old:  # (where it changed: analysed first)
                self._near[document_id] = old[: common_prefix(old, text)].count("\n") + 1
            self._texts[document_id] = (version + 1, text)
            if self.enabled:
                self._queue(document_id)

    def _queue(self, document_id: str) -> None:
        if document_id in self._pending:
            self._pending.remove(document_id)
        self._pending.append(document_id)
        self._start()
        self._lock.notify_all()

    def document_closed(self, document_id: str) -> None:
        with self._lock:
            watched = self._texts.pop(document_id, None) is not None
            self._tables.pop(document_id, None)
            self._near.pop(document_id, None)
            if document_id in self._pending:
                self._pending.remove(document_id)
        if watched and not document_id.lower().endswith(BRACED):  # (Jedi's parser cache; an
            self.analyser.forget(
                document_path(document_id)
            )  # analysis running forgets it at its end)

    def watches(self, document_id: str) -> bool:
        """A document this store keeps the text of (Python, or a brace language)."""
        with self._lock:
            return document_id in self._texts

    def asked_at(self, document_id: str, line: int) -> None:
        """Where the person works: the next analysis of the document starts nearest to it."""
        self._near[document_id] = line

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """A request decodes meanwhile: the analysis stops at its next receiver until it ends."""
        with self._lock:
            self._serving += 1
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1
                self._lock.notify_all()

    def _wait_for_idle(self) -> float:
        """(The analysis thread, between receivers:) wait while a request decodes; the
        seconds waited."""
        started = time.perf_counter()
        with self._lock:
            while self._serving and not self._closed:
                self._lock.wait()
        return time.perf_counter() - started

    # -- what a request reads ---------------------------------------------------------------
    def table(self, document_id: str) -> Table | None:
        with self._lock:
            return self._tables.get(document_id)

    def current(self, document_id: str) -> bool:
        """Whether the document's newest text has been analysed (to the end)."""
        with self._lock:
            return self._current_locked(document_id)

    def wait(self, document_id: str, timeout: float) -> bool:
        """(Tests and benchmarks: until the document's newest text is analysed.)"""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._current_locked(document_id):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def _current_locked(self, document_id: str) -> bool:
        table, held = self._tables.get(document_id), self._texts.get(document_id)
        return (
            table is not None
            and held is not None
            and table.version == held[0]
            and not table.partial
        )

    def _publish(self, document: str, partial: Table) -> None:
        """What an analysis running has ready (the receivers nearest the cursor first): a
        request reads it meanwhile, unless a table as new or newer is there."""
        with self._lock:
            held = self._tables.get(document)
            newer = held is None or (held.version, not held.partial) < (partial.version, False)
            if document in self._texts and newer:
                self._tables[document] = partial

    # -- the thread ---------------------------------------------------------------------------
    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._closed = False
            self._thread = threading.Thread(target=self._run, name="spec-lsp-analysis", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(AttributeError, OSError):  # (lowest priority, this thread)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        while True:
            with self._lock:
                while not self._pending and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                document = self._pending[-1]
                version = self._texts[document][0]
            time.sleep(SETTLE_S)
            with self._lock:
                if document not in self._texts or self._texts[document][0] != version:
                    continue  # (typed again: the newer text is analysed instead)
                self._pending.remove(document)
                text = self._texts[document][1]
                earlier = self._tables.get(document)
            self._analyse(document, version, text, earlier)

    def _analyse(self, document: str, version: int, text: str, earlier: Table | None) -> None:
        path = document_path(document)
        braced = path.lower().endswith(BRACED)
        root, near = self._root(path), self._near.get(document, text.count("\n"))
        hooks = Hooks(
            cancelled=lambda: self._closed,
            paused=self._wait_for_idle,
            publish=lambda partial: self._publish(document, partial),
        )
        try:
            if braced:  # (tree-sitter: milliseconds, nothing to publish or pause for)
                table: Table = self.structural.analyse(
                    text, version=version, path=path, root=root, near_line=near,
                    earlier=earlier, cancelled=hooks.cancelled,
                )  # fmt: skip
            else:
                table = self.analyser.analyse(
                    text, version=version, path=path, root=root, near_line=near,
                    earlier=earlier, hooks=hooks,
                )  # fmt: skip
        except Exception:  # noqa: BLE001 (odd input: unguided, and said in the log)
            if not self._closed:  # (closed: the server is stopping, jedi's subprocess with it)
                log.exception("the analysis of %s failed: its completions are not guided", path)
            return
        time.sleep(self.delay_s)  # (tests: a late analysis)
        with self._lock:
            closed = document not in self._texts
            if not closed:
                self._tables[document] = table
            self.runs += 1
            self.seconds += table.seconds
            self.last_seconds = table.seconds
            self._lock.notify_all()
        if closed:
            (self.structural if braced else self.analyser).forget(path)

    def _root(self, path: str) -> str | None:
        for folder in self.folders:
            with contextlib.suppress(ValueError):
                Path(path).relative_to(folder)
                return folder
        return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    # -- what it reports ----------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        with self._lock:
            return {
                "analyses": self.runs,
                "analysis_seconds": round(self.seconds, 3),
                "last_analysis_seconds": round(self.last_seconds, 3),
                "receivers": sum(len(t.members) for t in self._tables.values()),
            }

    def memory(self) -> dict[str, Any]:
        with self._lock:
            return {
                "documents": len(self._tables),
                "bytes": sum(t.nbytes() for t in self._tables.values()),
                "outlines": self.structural.outlines.held(),  # (other files read: JS/TS, Go...)
            }
