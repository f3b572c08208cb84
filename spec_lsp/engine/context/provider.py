"""The context provider: the open documents, the workspace's files and their definitions, and the
block chosen for the document in focus.

Everything here runs off the request path: documents arrive as text (instantly: they are only
kept), their definitions are parsed while idle (`parse`), the workspace is read on a thread of
its own, and a block is chosen while idle from what is parsed (engine.idle_step), and
chosen again once more is. `generation` counts changes to what a block is chosen from (other
documents, the workspace): a block is chosen again when it moved, or when the file prefix
anchors anew (the focus moved). Edits to the document in focus do not change its block:
typing must not move the KV under it.

This class is the context's one door. A completing stage names what it chooses a block for
(its `focus`: the file prefix's document and anchor in process, the last place's stretch of
lines on a server), asks whether that block is `stale`, and has it chosen (`choose_at`); the
generation and the last choice stay in here.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spec_lsp.engine.context.block import Block
from spec_lsp.engine.context.selection import select
from spec_lsp.engine.context.similar_windows import SimilarWindows
from spec_lsp.engine.context.source import Place
from spec_lsp.engine.context.symbols import SymbolIndex
from spec_lsp.engine.context.workspace import Workspace
from spec_lsp.engine.types import CompletionRequest
from spec_lsp.paths import document_path
from spec_lsp.textdiff import common_prefix, common_suffix

log = logging.getLogger(__name__)
RECENT_EDITS = 16  # edited places of other documents remembered (newest last)
WORKSPACE_HELD = ("folders", "files", "bytes", "skipped", "limited", "max_files", "max_bytes")


class ContextProvider:
    def __init__(
        self,
        *,
        notify: Callable[[str], None] | None = None,
        changed: Callable[[], None] | None = None,
    ) -> None:
        """`notify`: a message for the person (a workspace over its bounds); `changed`: called
        from the workspace's thread when a scan has ended (idle work: a block to choose)."""
        self.workspace = Workspace(
            files_setting="workspaceMaxFiles", bytes_setting="workspaceMaxMb"
        )
        self.index = SymbolIndex()
        self.windows = SimilarWindows()  # the open documents' identifier windows
        self.notify = notify or (lambda message: log.warning("%s", message))
        self.changed = changed or (lambda: None)
        self._lock = threading.Lock()
        self._documents: dict[str, str] = {}  # path -> text (open documents)
        self._dirty: set[str] = set()  # files whose definitions are not parsed yet
        self._moves: set[str] = set()  # those of them whose parse moves the block (not the focus)
        self._moved = False  # one of those was parsed: the block moves once all are
        # the focus document, edited since it was parsed: parsed once the focus moves on (its
        # definitions serve other documents' blocks, not its own: not at every pause in typing)
        self._stale: set[str] = set()
        self._recent: deque[tuple[str, int, int]] = deque(maxlen=RECENT_EDITS)
        self._scan: threading.Thread | None = None
        self.generation = 0  # what blocks are chosen from changed (not the focus document)
        self.chosen = 0  # blocks chosen
        self.used = 0  # requests whose prompt opened with a block
        self.tokens_shown = 0
        self.tokens_cached = 0
        self.last: list[dict[str, Any]] = []  # the parts of the block chosen last
        self._chosen_for: tuple[Any, ...] = ()  # the focus and generation of the last choice
        self.block: Block | None = None  # the block chosen last (for the document in focus)

    # -- what the editor says ------------------------------------------------------------------
    def set_folders(self, folders: Sequence[str], *, max_files: int, max_mb: int) -> None:
        """Read the folders' files, within the bounds, on a thread of its own (a request never
        waits for it)."""
        self.workspace.max_files, self.workspace.max_bytes = max_files, max_mb * 1024 * 1024

        def scan() -> None:
            self.workspace.set_folders(list(folders))
            message = self.workspace.limit_message()
            if message:
                self.notify(message)
            with self._lock:
                documents = set(self._documents)
            files = self.workspace.files()
            for path in self.index.paths():  # the folders' files no longer there
                if path not in files and path not in documents:
                    self.index.remove(path)
            for path, text in files.items():  # (here, not on the engine's thread)
                if path not in documents:
                    self.index.update(path, text)
            with self._lock:
                self.generation += 1
            self.changed()  # (the person may be reading: the block is chosen meanwhile)

        self._scan = threading.Thread(target=scan, name="spec-lsp-workspace", daemon=True)
        self._scan.start()

    def wait_for_workspace(self, timeout: float | None = None) -> None:
        """(Tests and benchmarks: until the folders have been read.)"""
        if self._scan is not None:
            self._scan.join(timeout)

    def document_changed(self, document_id: str, text: str, focus: str) -> None:
        """An open document's text (instant). `focus`: the document the file prefix follows;
        an edit elsewhere is a recent edit there and may change the focus document's block."""
        path = document_path(document_id)
        with self._lock:
            old = self._documents.get(path)
            if old == text:
                return
            self._documents.pop(path, None)
            self._documents[path] = text  # (newest last: the tabs like the cursor's are its last)
            if document_id == focus and old is not None:
                self._stale.add(path)
                return
            self._dirty.add(path)
            if document_id != focus:
                self.generation += 1
                self._moves.add(path)
                if old is not None:
                    self._recent.append((path, *_changed_lines(old, text)))

    def document_closed(self, document_id: str) -> None:
        path = document_path(document_id)
        if self.block is not None and self.block.document == document_id:
            self.block = None  # (chosen again for it, once reopened: the generation moves)
        with self._lock:
            if self._documents.pop(path, None) is not None:
                self._dirty.discard(path)
                self._stale.discard(path)
                self.generation += 1
            self.windows.keep_only(self._documents)
        if not self.workspace.contains(path):
            self.index.remove(path)
        else:  # back to its text on disk
            self.workspace.file_changed(path)
            with self._lock:
                self._moves.add(path)
                self._dirty.add(path)

    def files_changed(self, changed: Sequence[str], deleted: Sequence[str]) -> None:
        """workspace/didChangeWatchedFiles: files created, changed or deleted on disk."""
        for path in changed:
            self.workspace.file_changed(path)
        for path in deleted:
            self.workspace.file_deleted(path)
            with self._lock:
                if path not in self._documents:
                    self.index.remove(path)
        with self._lock:
            disk = {p for p in changed if p not in self._documents}
            self._moves.update(disk)
            self._dirty.update(disk)
            self.generation += 1

    # -- parsing, while idle ---------------------------------------------------------------------
    @property
    def parsing(self) -> bool:
        """Files wait to be parsed."""
        return bool(self._dirty)

    def parse(self, cancelled: Callable[[], bool] = lambda: False) -> None:
        """Parse what changed, a file at a time (the newest text of each), until done or
        `cancelled()` (checked between files: a request waits for one file at most); once all
        is parsed, the block is chosen again if files other than the focus document were among
        them. Idle time, on the engine's thread: a thread of its own took its own allocator
        arena, and resident memory crept up with every batch of documents opened and closed."""
        while not cancelled():
            with self._lock:
                if not self._dirty:
                    break
                path = self._dirty.pop()
                text = self._documents.get(path)
            if text is None:
                text = self.workspace.files().get(path)
            if text is None:
                self.index.remove(path)
            else:
                self.index.update(path, text)
            with self._lock:
                if path in self._moves and path not in self._dirty:
                    self._moves.discard(path)
                    self._moved = True
        with self._lock:
            if not self._dirty and self._moved:
                self.generation += 1
                self._moved = False

    # -- a block, while idle -------------------------------------------------------------------
    def stale(self, focus: tuple[Any, ...]) -> bool:
        """Whether the block is to be chosen again for `focus` (what the completing stage
        chooses it for: the document, the anchor or stretch of lines, the budget): the focus
        moved, or what blocks are chosen from changed since the last choice."""
        return (*focus, self.generation) != self._chosen_for

    def choose_at(
        self,
        place: CompletionRequest | None,
        focus: tuple[Any, ...],
        *,
        first_line: int,
        budget: int,
        count_tokens: Callable[[str], int],
    ) -> Block | None:
        """The block for a place whose window starts at `first_line` (None without a place),
        chosen for `focus` until that is stale."""
        self._chosen_for = (*focus, self.generation)
        if place is None:
            self.block = None
            return None
        self.block = self.choose(
            place.document_id,
            place.prefix + place.suffix,
            len(place.prefix),
            (first_line, place.prefix.count("\n") + 1),
            budget=budget,
            count_tokens=count_tokens,
        )
        return self.block

    def adopt(self, document_id: str, focus: tuple[Any, ...], block: Block | None) -> None:
        """The block a document's text was evaluated after, kept with it while the focus was
        elsewhere (file_prefix: the state pool), is the choice for `focus` again: chosen anew
        only once what blocks are chosen from changes from now on (an edit elsewhere, the
        workspace), not for what changed while the document was away (the tabs opened then)."""
        with self._lock:
            self._moved_on(document_path(document_id))
        self._chosen_for = (*focus, self.generation)
        self.block = block
        self.last = block.describe() if block else []

    def _moved_on(self, path: str) -> None:
        """Former focus documents, edited while in focus: parsed now, while idle (the lock
        held)."""
        moved_on = self._stale - {path}
        self._stale -= moved_on
        self._dirty |= moved_on
        self._moves |= moved_on

    def block_for(self, document_id: str) -> Block | None:
        """The block chosen last, if it was chosen for this document."""
        block = self.block
        return block if block is not None and block.document == document_id else None

    def choose(
        self,
        document_id: str,
        text: str,
        cursor: int,
        window: tuple[int, int],
        *,
        budget: int,
        count_tokens: Callable[[str], int],
    ) -> Block | None:
        """The block for a place of a document (None when nothing fits or budget is 0)."""
        if budget <= 0:
            return None
        path = document_path(document_id)
        with self._lock:
            others = {p: t for p, t in self._documents.items() if p != path}
            recent = [edit for edit in self._recent if edit[0] != path]
            self._moved_on(path)
            self.windows.keep_only(self._documents)  # (a document closed since: forgotten)
        place = Place(
            path=path,
            text=text,
            cursor=cursor,
            window=window,
            open_documents=others,
            index=self.index,
            workspace=self.workspace,
            recent_edits=recent,
            windows=self.windows,
        )
        chunks = select(place, budget=budget, count_tokens=count_tokens)
        self.chosen += 1
        block = Block(document_id, tuple(chunks), repo=self._repo_name(path)) if chunks else None
        self.last = block.describe() if block else []
        return block

    def _repo_name(self, path: str) -> str:
        if self.workspace.contains(path):
            root = Path(path).parent
            for folder in self.workspace.folders:
                if path.startswith(folder.rstrip(os.sep) + os.sep):
                    root = Path(folder)
                    break
            return root.name
        return Path(path).parent.name

    # -- what a request used -------------------------------------------------------------------
    def record(self, tokens: int, cached: int) -> None:
        self.used += 1
        self.tokens_shown += tokens
        self.tokens_cached += cached

    def report(self) -> dict[str, Any]:
        symbols = self.index.memory()
        return {
            "blocks_chosen": self.chosen,
            "files_parsed": symbols["parsed"],
            "parse_ms": symbols["parse_ms"],
            "requests_with_context": self.used,
            "tokens": self.tokens_shown,
            "tokens_from_cache": self.tokens_cached,
            "last_block": self.last,
        }

    def memory(self) -> dict[str, Any]:
        with self._lock:
            documents = len(self._documents)
        symbols = self.index.memory()
        workspace = self.workspace.stats()
        return {  # (what is held: the work done is in report)
            "open_documents": documents,
            "similar_windows": len(self.windows),
            "workspace": {k: workspace[k] for k in WORKSPACE_HELD},
            "symbols": {k: symbols[k] for k in ("files", "definitions", "names", "text_chars")},
        }


def _changed_lines(old: str, new: str) -> tuple[int, int]:
    """The lines of `new` an edit changed (common prefix and suffix of the two texts)."""
    start = common_prefix(old, new)
    end = min(common_suffix(old, new), len(new) - start, len(old) - start)
    first = new.count("\n", 0, start)
    return first, max(first + 1, new.count("\n", 0, len(new) - end) + 1)
