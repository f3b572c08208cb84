"""The guide's prepared analyses: Jedi's answers for each open Python document (tree-sitter's for
JS/TS, Go, Rust and Java: braced/structural.py), made on a thread of its own after each
edit (the newest text of the document edited last first), never on a request's way.

A table is made for one version of a document's text. A request reads it for the text in front
of it (`table_for`): each edit since is read where it arrives (edits.py), and an entry it may
have changed (a class whose body was edited, a name bound anew, a set read from another open
document edited since) is left out until the next table has it again: the guide never forbids a
name on an older text's word. The next analysis asks those receivers again, the nearest the
cursor first, and keeps the others. Jedi reads the other open documents as the editor holds
them (python/buffers.py); an edit of one that another's sets were read from has that one
analysed again, behind the documents edited.

Jedi runs in a process of its own at the lowest priority (python/process.py): on a thread of
the server's it held the interpreter, and at the lowest priority it held it longest when the
cores were busy (the editor's messages unread and the decode loop stalled for a second and
more). The thread itself only waits on the child, and reads the brace languages (tree-sitter:
milliseconds a file); it stops between receivers while a request decodes (`serving`).
`SPEC_LSP_ANALYSIS_PROCESS=0` keeps Jedi on the thread (the unit tests: stand-ins patched in). Once the engine is loaded it pays
Jedi's cold start (the builtins' stubs) on a few lines of its own, behind any document
(`warm_up`). A request whose document has no table yet may wait for the first one, when this
machine's recent first tables took under WAIT_S (`wait_for_table`): the analysis goes on
meanwhile, that document's first, the receivers nearest the request's cursor first. So does a
request whose table is partial and began far from it: a file opened is analysed from its end
(no cursor yet), and a request far from where the running analysis began has it start again
from the request's line (`asked_at`), what it found kept. The engine's idle work (the file
prefix, whose evaluation takes both cores) waits for a Python document's first table, at most
YIELD_S a document (`yield_to_first`). Closing a document is instant: the thread lets Jedi's
caches of it go.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec_lsp.engine.guide import edits
from spec_lsp.engine.guide.braced.outline import LANGUAGES
from spec_lsp.engine.guide.braced.structural import StructuralAnalyser
from spec_lsp.engine.guide.edits import Change
from spec_lsp.engine.guide.python import buffers
from spec_lsp.engine.guide.python.analysis import NEAR, Analyser
from spec_lsp.engine.guide.python.process import JediProcess
from spec_lsp.engine.guide.table import Hooks, Table
from spec_lsp.paths import document_path
from spec_lsp.textdiff import common_prefix

log = logging.getLogger(__name__)
PYTHON = (".py", ".pyi")
BRACED = tuple(LANGUAGES)  # the brace languages' extensions (tree-sitter's analysis)
SETTLE_S = 0.15  # an edit waits this long for the next before its analysis starts
WAIT_S = 1.0  # a request whose document has no table yet waits at most this long for it
YIELD_S = 3.0  # the idle work waits at most this long in all for a Python document's first table
FLOOR_LINES = 300  # (the first tables' estimate: a smaller file takes as long as this many lines)
MAX_EDITS = 200  # edits kept since a document's table; more are taken as one
# what the warm-up analyses: Jedi's builtins (str, list, dict) and a module of the library
WARM_TEXT = 's = ""\ns.\nl = []\nl.\nd = {}\nd.\nimport os\nos.\nos.path.\n'
WARM = "(warm-up)"  # the warm-up's place in the queue


@dataclass
class _Document:
    """An open document: its newest text, and the newest table made for one of its texts."""

    version: int  # (the analyses' clock when this text came)
    text: str
    python: bool
    stamp: float  # when its text last changed (time.time(): what Jedi reads for its file's)
    edited: bool = False  # changed since it was opened
    near: int | None = None  # the line last edited or asked at
    table: Table | None = None
    seen: int = 0  # the clock when the table's analysis read the other open documents
    table_near: int | None = None  # the line that analysis began nearest to
    imported: frozenset[str] = frozenset()  # the names the table's text binds by imports alone
    edits: list[tuple[int, Change]] = field(default_factory=list)  # since the table's text
    yielded: float = 0.0  # the seconds the engine's idle work waited for its first table
    # (the last request's table for the newest text, and what it was made from)
    view: tuple[Table, tuple[int, frozenset[str]], tuple[Table | None]] | None = None


class Analyses:
    def __init__(self) -> None:
        self.enabled = False  # (the `guide` setting; the texts are kept either way)
        self.folders: list[str] = []
        in_process = os.environ.get("SPEC_LSP_ANALYSIS_PROCESS", "1") == "0"
        self.analyser: Analyser | JediProcess = Analyser() if in_process else JediProcess()
        self.structural = StructuralAnalyser()
        self._lock = threading.Condition()
        self._documents: dict[str, _Document] = {}
        self._clock = 0  # counts the texts that came (a text's version)
        # a Python file -> the clock when what others read of it last changed (an edit, or its
        # document closed after edits: the file is read again)
        self._exported: dict[str, int] = {}
        self._checked = 0  # the newest of those that the tables were checked against
        self._pending: list[str] = []  # documents to analyse, the last edited last
        self._forget: list[tuple[str, bool]] = []  # (path, braced) closed: caches let go
        self._thread: threading.Thread | None = None
        self._closed = False
        self._serving = 0  # requests decoding now: the analysis waits between receivers
        self._waiting = 0  # of those, requests waiting for a table (the analysis goes on)
        self._asked: tuple[str, int] | None = None  # (document, line) a request waits for
        self._running: tuple[str, int] | None = None  # (document, line it began nearest to)
        self._preempted = False  # the running analysis stops for another (and is queued again)
        self._redirected = False  # a request came far from where the running analysis began
        self._fresh: set[str] = set()  # documents opened or edited since it started
        self._paused_s = 0.0  # the running analysis's time waiting for requests
        self._warming = "cold"  # cold | queued | running | warm (Jedi's builtins loaded)
        self._may_warm = False  # the engine is loaded: the warm-up may start
        # (python or not) -> the seconds per line of the recent first tables (a file of
        # fewer than FLOOR_LINES counted as that many), and the warm-up's until one is timed
        self._firsts: dict[bool, deque[float]] = {True: deque(maxlen=8), False: deque(maxlen=8)}
        self._prior: float | None = None
        self.delay_s = float(os.environ.get("SPEC_LSP_ANALYSIS_DELAY_MS", "0")) / 1000
        # (tests: "0", no warm-up: a Jedi run beside tests that never open a Python file)
        self.warms = os.environ.get("SPEC_LSP_JEDI_WARM_UP", "1") != "0"
        self.runs = 0
        self.seconds = 0.0
        self.last_seconds = 0.0
        self.warm_seconds: float | None = None

    # -- what the editor says (instant) -------------------------------------------------------
    def set_enabled(self, on: bool) -> None:
        """The `guide` setting: turned on, the open documents not analysed yet are; turned
        off, the tables are dropped (edits are not followed meanwhile)."""
        with self._lock:
            self.enabled = on
            if on:  # (those analysed or on their way are not again: any setting calls this)
                for document in self._documents:
                    if not self._current_locked(document) and not self._coming(document):
                        self._queue(document)
            if not on:
                for held in self._documents.values():
                    held.table, held.edits = None, []
            if on and self._may_warm and self._warming == "cold":
                self._warming = "queued"
                self._start()
            self._lock.notify_all()

    def warm_up(self) -> None:
        """The engine is loaded: Jedi's cold start (its builtins' stubs, seconds) is paid now on
        the analysis thread, behind any document and between requests, not at the first file."""
        with self._lock:
            self._may_warm = self.warms
            if self._may_warm and self.enabled and self._warming == "cold":
                self._warming = "queued"
                self._start()
                self._lock.notify_all()

    def document_changed(self, document_id: str, text: str) -> None:
        path = document_path(document_id)
        if not path.lower().endswith(PYTHON + BRACED):
            return
        python = not path.lower().endswith(BRACED)
        with self._lock:
            held = self._documents.get(document_id)
            old = held.text if held is not None else ""
            follow = self.enabled
        change: Change | None = None
        at = common_prefix(old, text) if old else 0  # (where the edit starts: read once)
        if old and follow:  # (read here, once: the editor's thread, a few lines read)
            change = (edits.python_change if python else edits.braced_change)(old, text, at)
        with self._lock:
            self._clock += 1
            held = self._documents.get(document_id)
            if held is None:
                held = self._documents[document_id] = _Document(
                    self._clock, text, python, time.time()
                )
            else:
                held.version, held.text, held.stamp, held.edited = (
                    self._clock, text, time.time(), True,
                )  # fmt: skip
                if change is not None:  # (the table coming, or held, is for an older text)
                    self._record(held, change)
                if change is not None and change.exported and python:
                    self._exported[buffers.key(path)] = self._clock
            if old:  # (where it changed: analysed first)
                held.near = old.count("\n", 0, at) + 1
            if self.enabled:
                self._queue(document_id)

    def _record(self, held: _Document, change: Change) -> None:
        if change:
            held.edits.append((held.version, change))
        if len(held.edits) > MAX_EDITS:
            every = edits.NOTHING
            for _version, one in held.edits:
                every = every | one
            held.edits = [(held.edits[-1][0], every)]  # (kept while any of them is newer)

    def _queue(self, document_id: str, *, last: bool = True) -> None:
        if document_id in self._pending:
            self._pending.remove(document_id)
        if last:
            self._pending.append(document_id)
            self._fresh.add(document_id)
        else:  # (behind every document edited)
            self._pending.insert(0, document_id)
        self._start()
        self._lock.notify_all()

    def document_closed(self, document_id: str) -> None:
        """Instant: an analysis of it running stops at its next receiver, and the thread lets
        Jedi's caches of it go."""
        with self._lock:
            held = self._documents.pop(document_id, None)
            if document_id in self._pending:
                self._pending.remove(document_id)
            if held is None:
                return
            path = document_path(document_id)
            if held.python and held.edited:  # (the others read its file again)
                self._clock += 1
                self._exported[buffers.key(path)] = self._clock
            if self._thread is not None and self._thread.is_alive():
                self._forget.append((path, not held.python))
            self._lock.notify_all()

    def watches(self, document_id: str) -> bool:
        """A document this store keeps the text of (Python, or a brace language)."""
        with self._lock:
            return document_id in self._documents

    def asked_at(self, document_id: str, line: int) -> None:
        """Where the person works: the next analysis of the document starts nearest to it, and
        one of it running that began far from it (a file opened: from its end) stops at its
        next receiver and starts again from there, what it found kept."""
        with self._lock:
            held = self._documents.get(document_id)
            if held is not None:
                held.near = line
                running = self._running
                if running is not None and running[0] == document_id:
                    self._redirected = abs(running[1] - line) > NEAR

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
        """(The analysis thread, between receivers:) wait while a request decodes (not one
        that waits for a table); the seconds waited."""
        started = time.perf_counter()
        with self._lock:
            while self._serving > self._waiting and not self._closed:
                self._lock.wait()
        waited = time.perf_counter() - started
        self._paused_s += waited
        return waited

    # -- what a request reads ---------------------------------------------------------------
    def table(self, document_id: str) -> Table | None:
        """The newest table made for one of the document's texts, whichever."""
        with self._lock:
            held = self._documents.get(document_id)
            return held.table if held is not None else None

    def table_for(
        self, document_id: str, prefix: str | None = None, suffix: str = ""
    ) -> Table | None:
        """The table a request with the text `prefix` before its cursor and `suffix` after it
        may use (None: at the newest text the editor sent; the newest text starting with
        `prefix`: at that text): the newest table, without the entries the edits since its
        text may have changed (a brace language's: none, unless no edit since changed
        anything). The request's work, once: the decode loop's lookups stay dict reads."""
        with self._lock:
            held = self._documents.get(document_id)
            if held is None or held.table is None:
                return None
            table, newest, python = held.table, held.text, held.python
            change = self._since(held, table.version)
            others = self._changed_others(held, document_id)
            imported = held.imported
            made = (held.version, others)
            cached = held.view
            newest_view = cached[2] if cached and cached[0] is table and cached[1] == made else None
        if prefix is not None and not newest.startswith(prefix):  # (not the newest text)
            changed = edits.python_change if python else edits.braced_change
            change = change | changed(newest, prefix + suffix)
            return _without(table, change, others, imported, python)
        if newest_view is None:
            newest_view = (_without(table, change, others, imported, python),)
            with self._lock:
                if held is self._documents.get(document_id) and held.table is table:
                    held.view = (table, made, newest_view)
        return newest_view[0]

    def wait_for_table(self, document_id: str, line: int, budget: float | None = None) -> float:
        """(A request whose document has no table for its text:) wait for one, when its
        analysis is running or queued and this machine's recent first tables took under
        `budget` (WAIT_S); that document is analysed first meanwhile, nearest to `line` first
        (an analysis of another stops at its next receiver, and resumes after). The seconds
        waited (0: it did not wait)."""
        budget = WAIT_S if budget is None else budget
        with self._lock:
            held = self._documents.get(document_id)
            if held is None or not self.enabled or not self._coming(document_id):
                return 0.0
            if self._ready_for(document_id, line):
                return 0.0
            expected = self._expected(held, near=held.table is not None)
            if expected is None or expected > budget:
                return 0.0
            started = time.monotonic()
            deadline = started + budget
            self._asked = (document_id, line)
            self._waiting += 1
            self._lock.notify_all()
            try:
                while not self._closed and not self._ready_for(document_id, line):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._lock.wait(left)
            finally:
                self._waiting -= 1
                if self._asked == (document_id, line):
                    self._asked = None
                self._lock.notify_all()
            return time.monotonic() - started

    def yield_to_first(
        self,
        cancelled: Callable[[], bool],
        budget: float = YIELD_S,
        place: tuple[str, int] | None = None,
    ) -> float:
        """(The engine's idle work, before its step:) wait while an open Python document has no
        whole table yet (none, or the receivers nearest one place so far: where the person will
        ask is not known before they do) and its analysis is queued or running, at most
        `budget` seconds a document in all, or until `cancelled` (a request, an edit). Jedi's
        process runs at the lowest priority, and llama.cpp's threads evaluating the file prefix
        while the person read left it nothing: two asks in five after 5 s of reading found no
        table. With a `place` (document, line) known (a prewarm there), only that document's
        receivers near the line are waited for. The seconds waited."""
        started = time.monotonic()
        with self._lock:
            while self.enabled and not self._closed and not cancelled():
                first = [
                    held
                    for document, held in self._documents.items()
                    if held.python
                    and (
                        (held.table is None or held.table.partial)
                        if place is None
                        else document == place[0] and not self._ready_for(*place)
                    )
                    and held.yielded < budget
                    and self._coming(document)
                ]
                if not first:
                    break
                began = time.monotonic()
                self._lock.wait(0.05)
                for held in first:
                    held.yielded += time.monotonic() - began
        return time.monotonic() - started

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

    def warmed(self, timeout: float) -> bool:
        """(Tests and benchmarks: until the warm-up has run.)"""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._warming != "warm":
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def _current_locked(self, document_id: str) -> bool:
        held = self._documents.get(document_id)
        table = held.table if held is not None else None
        return (
            held is not None
            and table is not None
            and table.version == held.version
            and not table.partial
        )

    def _since(self, held: _Document, version: int) -> Change:
        change = edits.NOTHING
        for at, one in held.edits:
            if at > version:
                change = change | one
        return change

    def _changed_others(self, held: _Document, document_id: str) -> frozenset[str]:
        """The other Python files edited (or closed after edits) since the table read them."""
        if not held.python or not self._exported:
            return frozenset()
        own = buffers.key(document_path(document_id))
        return frozenset(p for p, at in self._exported.items() if at > held.seen and p != own)

    def _coming(self, document_id: str) -> bool:
        """Its analysis is running or queued."""
        running = self._running is not None and self._running[0] == document_id
        return running or document_id in self._pending

    def _expected(self, held: _Document, *, near: bool = False) -> float | None:
        """The seconds a first table of it takes on this machine lately, for its length, or
        (`near`) for the receivers near a place, as a small file's (None: Jedi cold, or
        nothing timed yet)."""
        rates = list(self._firsts[held.python])
        if held.python and not rates and self._prior is not None:
            rates = [self._prior]
        if not rates:
            return 0.0 if not held.python else None  # (tree-sitter: milliseconds)
        lines = FLOOR_LINES if near else max(held.text.count("\n") + 1, FLOOR_LINES)
        return statistics.median(rates) * lines

    def _timed(self, python: bool, seconds: float, text: str) -> None:
        """A first table's time (any thread: a deque's append)."""
        self._firsts[python].append(seconds / max(text.count("\n") + 1, FLOOR_LINES))

    def _ready_for(self, document_id: str, line: int) -> bool:
        """A table for the document's text with the receivers near `line` (or closed)."""
        held = self._documents.get(document_id)
        if held is None:
            return True
        table = held.table
        if table is None or (not held.python and self._since(held, table.version)):
            return False
        near = held.table_near
        return not table.partial or near is None or abs(near - line) <= NEAR

    # -- the thread ---------------------------------------------------------------------------
    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._closed = False
            self._thread = threading.Thread(target=self._run, name="spec-lsp-analysis", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        # (at the server's priority: a thread at the lowest that holds the interpreter when the
        # cores are busy keeps every other thread waiting; Jedi's own work is the child's)
        while True:
            job: str | None = None
            with self._lock:
                while not self._closed and not self._forget and (job := self._next()) is None:
                    self._lock.wait()
                if self._closed:
                    return
                forget, self._forget = self._forget, []
            if forget or job is None:
                for path, braced in forget:
                    (self.structural if braced else self.analyser).forget(path)
                continue
            if job == WARM:
                self._warm()
                continue
            if not self._settled(job):
                continue
            with self._lock:
                held = self._documents.get(job)
                if held is None or job not in self._pending:
                    continue
                self._pending.remove(job)
                near = held.near if held.near is not None else held.text.count("\n")
                if self._asked is not None and self._asked[0] == job:
                    near = self._asked[1]
                earlier = held.table
                if earlier is not None:  # (what the edits since may have changed: asked again)
                    earlier = _without(
                        earlier,
                        self._since(held, earlier.version),
                        self._changed_others(held, job),
                        held.imported,
                        held.python,
                    )
                others = {
                    document_path(d): (h.text, h.stamp)
                    for d, h in self._documents.items()
                    if h.python and d != job
                }
                self._running, self._preempted, self._paused_s = (job, near), False, 0.0
                self._redirected = False
                self._fresh = set()
                first = held.table is None
                work = (held.version, held.text, self._clock)
            imported = edits.imported_names(work[1]) if held.python else frozenset()
            self._analyse(job, *work, earlier, near, others, first, imported)

    def _next(self) -> str | None:
        """(Locked.) What the thread does next: the document a request waits for, else the one
        edited last, else one another's edits may have changed, else the warm-up."""
        if not self.enabled:
            return None
        if self._asked is not None and self._asked[0] in self._pending:
            return self._asked[0]
        if not self._pending:
            self._others_edited()
        if self._pending:
            return self._pending[-1]
        if self._warming == "queued" and self._may_warm:
            return WARM
        return None

    def _others_edited(self) -> None:
        """(Locked.) Documents with sets read from another open document edited since:
        analysed again, behind the documents edited."""
        newest = max(self._exported.values(), default=0)
        if newest <= self._checked:
            return
        self._checked = newest
        oldest = min((h.seen for h in self._documents.values() if h.table), default=newest)
        for path, at in list(self._exported.items()):  # (no table read it before: forgotten)
            if at <= oldest:
                del self._exported[path]
        for document, held in self._documents.items():
            if held.table is None or document in self._pending:
                continue
            others = self._changed_others(held, document)
            if others and any(m.files & others for m in held.table.members.values()):
                self._queue(document, last=False)

    def _settled(self, document: str) -> bool:
        """Wait SETTLE_S for the next edit (not when a request waits for it); False: the
        document changed, closed, or the analyses stopped meanwhile."""
        deadline = time.monotonic() + SETTLE_S
        with self._lock:
            held = self._documents.get(document)
            version = held.version if held is not None else -1
            while not self._closed:
                held = self._documents.get(document)
                if held is None or held.version != version:
                    return False
                if self._asked is not None and self._asked[0] == document:
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                self._lock.wait(left)
        return False

    def _stop(self, document: str, version: int) -> bool:
        """(Between receivers:) the analysis stops: the analyses closed, the document closed,
        a request waits for another document (or far from where this one began), another
        document was opened or edited meanwhile (the person is there now: this one resumes
        after it, what it found kept), or an edit since changed what this one is finding."""
        if self._closed:
            return True
        held = self._documents.get(document)
        if held is None:
            return True
        asked, running = self._asked, self._running
        far = asked is not None and running is not None and abs(asked[1] - running[1]) > NEAR
        if (
            (asked is not None and (asked[0] != document or far))
            or self._fresh - {document}
            or self._redirected
        ):
            self._preempted = True
            return True
        if held.version != version and (change := self._since(held, version)):
            return change.everything or change.members
        return False

    def _analyse(
        self,
        document: str,
        version: int,
        text: str,
        seen: int,
        earlier: Table | None,
        near: int,
        others: dict[str, tuple[str, float]],
        first: bool,
        imported: frozenset[str],
    ) -> None:
        path = document_path(document)
        braced = path.lower().endswith(BRACED)
        root = self._root(path)
        started = time.perf_counter()
        published = False

        def publish(partial: Table) -> None:
            nonlocal published
            if first and not published:
                self._timed(not braced, time.perf_counter() - started - self._paused_s, text)
            published = True
            self._publish(document, partial, seen, near, imported)

        hooks = Hooks(
            cancelled=lambda: self._stop(document, version),
            paused=self._wait_for_idle,
            publish=publish,
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
                    earlier=earlier, hooks=hooks, buffers=others,
                )  # fmt: skip
        except Exception:  # noqa: BLE001 (odd input: unguided, and said in the log)
            if not self._closed:  # (closed: the server is stopping, jedi's subprocess with it)
                log.exception("the analysis of %s failed: its completions are not guided", path)
            with self._lock:
                self._running = None
                self._lock.notify_all()
            return
        if first and not published and table.done:
            self._timed(not braced, time.perf_counter() - started - self._paused_s, text)
        time.sleep(self.delay_s)  # (tests: a late analysis)
        with self._lock:
            self._running = None
            if not braced:
                self._warming = "warm"
            held = self._documents.get(document)
            if held is not None:
                # (stopped for another document: it resumes after that one; for a request far
                # from where it began: at once, from the request's line; what it found kept)
                if self._preempted:
                    table.partial = True
                    if document not in self._pending:
                        self._queue(document, last=self._redirected)
                self._store(held, table, seen, near, imported)
            self.runs += 1
            self.seconds += table.seconds
            self.last_seconds = table.seconds
            self._lock.notify_all()

    def _publish(
        self, document: str, partial: Table, seen: int, near: int, imported: frozenset[str]
    ) -> None:
        """What an analysis running has ready (the receivers nearest the cursor first): a
        request reads it meanwhile, unless a table as new or newer is there."""
        with self._lock:
            held = self._documents.get(document)
            if held is not None:
                self._store(held, partial, seen, near, imported)
                self._lock.notify_all()

    def _store(
        self, held: _Document, table: Table, seen: int, near: int, imported: frozenset[str]
    ) -> None:
        """(Locked.) The document's table, if as new as the one it holds or newer."""
        now = held.table
        if now is not None and (now.version, not now.partial) > (table.version, not table.partial):
            return
        held.table, held.seen, held.table_near, held.imported = table, seen, near, imported
        held.edits = [(at, change) for at, change in held.edits if at > table.version]

    def _warm(self) -> None:
        """Jedi's cold start on a few lines (stopped by a document to analyse: that analysis
        pays the rest), then the same lines again, warm: how long a small file's first table
        takes on this machine, until one is timed."""
        with self._lock:
            self._warming = "running"
        hooks = Hooks(
            cancelled=lambda: self._closed or bool(self._pending), paused=self._wait_for_idle
        )
        timed: list[float] = []  # (each pass done)
        try:
            for _pass in range(2):
                self._paused_s = 0.0
                started = time.perf_counter()
                table = self.analyser.analyse(
                    WARM_TEXT, version=0, path=None, root=None, near_line=1, hooks=hooks
                )
                if not table.done:
                    break
                timed.append(time.perf_counter() - started - self._paused_s)
        except Exception:  # noqa: BLE001 (the first analysis pays it then)
            log.debug("the warm-up of Jedi failed", exc_info=True)
        with self._lock:
            self._warming = "warm"
            self.warm_seconds = timed[0] if timed else None  # (None: a document came first)
            if len(timed) == 2:  # (a small file's first table, warm)
                self._prior = timed[1] / FLOOR_LINES
            self._lock.notify_all()

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
        if isinstance(self.analyser, JediProcess):
            self.analyser.close()

    # -- what it reports ----------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        with self._lock:
            tables = [h.table for h in self._documents.values() if h.table is not None]
            return {
                "analyses": self.runs,
                "analysis_seconds": round(self.seconds, 3),
                "last_analysis_seconds": round(self.last_seconds, 3),
                "receivers": sum(len(t.members) for t in tables),
                "warm_up_seconds": None
                if self.warm_seconds is None
                else round(self.warm_seconds, 3),
                # (Jedi's process: its resident size, a rough figure that grows with its
                # caches; how often it started)
                **(self.analyser.memory() if isinstance(self.analyser, JediProcess) else {}),
            }

    def memory(self) -> dict[str, Any]:
        with self._lock:
            tables = [h.table for h in self._documents.values() if h.table is not None]
            return {
                "documents": len(tables),
                "bytes": sum(t.nbytes() for t in tables),
                "outlines": self.structural.outlines.held(),  # (other files read: JS/TS, Go...)
            }


def _without(
    table: Table, change: Change, others: frozenset[str], imported: frozenset[str], python: bool
) -> Table | None:
    """The table less the entries `change` (edits of its own text) or an edit of one of
    `others` (files its sets were read from) may have changed; a brace language's table is
    whole or nothing."""
    if not change and not others:
        return table
    if not python:
        return None if change else table
    kept = {
        key: members
        for key, members in table.members.items()
        if not (change and change.stale(key, imported)) and not (members.files & others)
    }
    if len(kept) == len(table.members):
        return table
    view = copy.copy(table)
    view.members = kept
    return view
