"""The language server object: settings, the scheduler that owns the engine, model loading
and reloading (with $/progress), and messages to the user. Handlers receive it as a parameter."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from spec_lsp import __version__, config
from spec_lsp.config import Settings
from spec_lsp.engine import Completion, CompletionRequest, Engine, EngineError
from spec_lsp.engine.startup import loading
from spec_lsp.server import convert
from spec_lsp.server.acceptance import RETENTION_S, Acceptance
from spec_lsp.server.protocol import SpecProtocol
from spec_lsp.server.scheduler import Scheduler
from spec_lsp.server.showing import Showing, Verdict

log = logging.getLogger(__name__)
CLIENT_TIMEOUT_S = 5.0  # how long to wait for the client's answer to our own requests
MODEL_WATCH_S = 1.0  # how often the model files are checked for changes on disk
FileIdentity = tuple[int, int, int] | None  # inode, size, mtime; None: no such file
# the URI schemes of documents a person edits (a file, an unsaved buffer, a notebook's cell);
# the others are views (a diff's git: side, fugitive://, a merge's): no focus, no context block
EDITED_SCHEMES = ("file", "untitled", "vscode-notebook-cell")


class SpecLanguageServer(LanguageServer):
    def __init__(self, settings: Settings, engine: Engine) -> None:
        super().__init__("spec-lsp", __version__, protocol_cls=SpecProtocol)
        self.settings = settings
        self.scheduler = Scheduler(engine, debounce_s=settings.debounce_ms / 1000)
        self.load_error: str | None = None
        self.folders: list[str] = []  # the workspace folders the editor named at initialize
        self.focused: str | None = None  # the document last opened or brought into view
        self.tells_focus = False  # the client sends specLsp/didFocus (it sent one)
        self.told: str | None = None  # the document its last specLsp/didFocus named
        self._model_files: dict[str, FileIdentity] = {}  # as they were at the last load
        self._watcher: asyncio.Task[None] | None = None
        # whether the client tells us of files changed on disk: "pending" until asked after the
        # load, then "registered", "unsupported" (no dynamic registration) or "refused"
        self.file_events = "pending"
        self.acceptance = Acceptance(retention_s=retention_s(), on_kept=self._wake_for_retention)
        self.showing = Showing(self.acceptance)
        self._retention_timer: asyncio.TimerHandle | None = None

    def focus(self, uri: str, *, told: bool = False) -> None:
        """A document opened, or brought into view (`told`: specLsp/didFocus), takes the file
        prefix (scheduler.opened): its block and text are evaluated while the person reads.
        Not a document opened only to be shown: one whose URI is not a file's or an unsaved
        buffer's (a diff's `git:` side, Neovim's `fugitive://`), nor, from a client that tells
        the focus (it sent specLsp/didFocus), one opened without it (VS Code opens the file of a
        peek or a hover's preview: didOpen, and no editor comes into view). A focus told before
        the document's didOpen is taken at the didOpen."""
        if told:
            self.tells_focus, self.told = True, uri
        elif self.tells_focus and uri != self.told:
            return
        if urlparse(uri).scheme not in EDITED_SCHEMES:
            return
        self._take_focus(uri)

    def _take_focus(self, uri: str) -> None:
        """Remembered: a document opened while the model loads (an editor started with a file
        open) takes it once the model is ready."""
        self.focused = uri
        document = self.document_for(uri)
        if document is not None:
            self.scheduler.opened(convert.to_request(document, lsp.Position(0, 0), self.settings))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Protocol errors (bad JSON, bad params) are logged, not shown: the client sent them."""
        log.error("protocol error from %s: %s", getattr(source, "__name__", source), error)

    def document_for(self, uri: str) -> TextDocument | None:
        """The open document to complete in, or None: unknown documents, documents over
        maxDocumentChars and `enable: false` get empty answers, not errors."""
        if not self.settings.enable:
            return None
        document = self.workspace.text_documents.get(unquote(uri))  # pygls keys them unquoted
        if document is None:
            log.debug("request for a document that is not open: %s", uri)
        elif len(document.source) > self.settings.max_document_chars:
            log.info("%s is longer than maxDocumentChars: no completions", uri)
            return None
        return document

    def tell(self, message: str, kind: lsp.MessageType = lsp.MessageType.Warning) -> None:
        log.warning("%s", message)
        self.window_show_message(lsp.ShowMessageParams(type=kind, message=f"spec-lsp: {message}"))

    # -- what is shown, and what becomes of it -------------------------------------------------
    def show(
        self, request: CompletionRequest, completion: Completion | None, *, invoked: bool
    ) -> Verdict:
        """What is shown of the answer to `request`, and the work that follows it (showing.py:
        the one place that decides)."""
        document = self.workspace.text_documents.get(unquote(request.document_id))
        engine = self.scheduler.engine  # (its weights are the model's: none, the gate off)
        return self.showing.decide(
            request,
            completion,
            invoked=invoked,
            threshold=engine.gate_threshold,
            gate=engine.gate,
            still_open=document is not None,
            stale=document is not None and (document.version or 0) != request.version,
        )

    def _wake_for_retention(self, due: float) -> None:
        """A text was kept for its retention checks, the first at `due`: wake then (a wake
        already set is earlier: the checks' times only grow)."""
        if self._retention_timer is None and not self.scheduler.closed:
            delay = max(0.0, due - self.acceptance.clock())
            self._retention_timer = asyncio.get_running_loop().call_later(delay, self._retention)

    def _retention(self) -> None:
        """The retention checks that are due, then a wake for the next one."""
        self._retention_timer = None
        self.acceptance.due(self._open_text)
        due = self.acceptance.next_due()
        if due is not None:
            self._wake_for_retention(due)

    def _open_text(self, uri: str) -> str | None:
        document = self.workspace.text_documents.get(unquote(uri))
        return document.source if document is not None else None

    # -- settings ----------------------------------------------------------------------------
    def configure(self, changes: Mapping[str, Any], *, origin: str) -> bool:
        """Take the valid settings in `changes`. Each invalid one is reported and keeps its
        previous value; unknown keys are logged. Returns whether the settings changed."""
        new, errors, unknown = merge_valid(self.settings, changes)
        for key in unknown:
            log.warning("unknown setting %r in %s ignored", key, origin)
        if errors:
            self.tell(f"{'; '.join(errors)}. Keeping the previous value of each.")
        changed = [
            name
            for name in type(new).model_fields
            if getattr(new, name) != getattr(self.settings, name)
        ]
        if changed:  # names only: the values may be paths
            log.info("settings from %s applied: %s", origin, ", ".join(changed))
        self.settings = new
        self.scheduler.debounce_s = new.debounce_ms / 1000
        return bool(changed)

    async def apply_settings(self, changes: Mapping[str, Any]) -> None:
        if self.configure(changes, origin="workspace/didChangeConfiguration"):
            await self.update_engine()

    async def pull_settings(self, section: str) -> Any:
        """Ask a client that supports workspace/configuration for our section (None if not)."""
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return None
        items = [lsp.ConfigurationItem(section=section)]
        try:
            answer = await asyncio.wait_for(
                self.workspace_configuration_async(lsp.ConfigurationParams(items=items)),
                CLIENT_TIMEOUT_S,
            )
        except Exception as exc:  # the client failed or did not answer: nothing to apply
            log.warning("workspace/configuration failed: %r", exc)
            return None
        return answer[0] if answer else None

    async def watch_workspace_files(self) -> None:
        """Ask the client to tell us of files changed on disk (workspace/didChangeWatchedFiles),
        where it can register that dynamically; otherwise the open documents keep the context
        current and the workspace is read again when its folders change."""
        caps = self.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps else None
        if not (watched and watched.dynamic_registration):
            self.file_events = "unsupported"
            return
        options = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern="**/*")]
        )
        registration = lsp.Registration(
            id=str(uuid.uuid4()),
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=options,
        )
        try:
            await asyncio.wait_for(
                self.client_register_capability_async(lsp.RegistrationParams([registration])),
                CLIENT_TIMEOUT_S,
            )
        except Exception as exc:  # the client refused or did not answer: no file events
            log.info("no file events: client/registerCapability failed: %r", exc)
            self.file_events = "refused"
            return
        self.file_events = "registered"

    # -- the engine: load and reload on the engine thread ------------------------------------
    async def update_engine(self, *, reload: bool = False) -> None:
        """Load the models (showing $/progress when the client supports it), or hand the engine
        new settings. A failure is shown once; the server keeps answering, empty."""
        settings, engine = self.settings, self.scheduler.engine
        engine.notify = self._teller(asyncio.get_running_loop())  # a remote server's faults
        loading = not engine.ready or reload
        token = await self._begin_progress("loading") if loading else None
        report = self._reporter(token)
        try:
            await self.scheduler.load(lambda: self._load_or_update(settings, report, reload))
            self.load_error = None
            if loading and engine.ready and self.focused is not None:
                self._take_focus(self.focused)  # (opened while the model loaded)
        except EngineError as exc:
            self.load_error = str(exc)
            self.tell(str(exc), lsp.MessageType.Error)
        finally:
            if token is not None:
                done = lsp.WorkDoneProgressEnd(message="ready" if engine.ready else "failed")
                self.work_done_progress.end(token, done)
            self._watch_models(settings)

    def _load_or_update(
        self, settings: Settings, report: Callable[[str], None], reload: bool = False
    ) -> None:
        """On the engine thread."""
        engine = self.scheduler.engine
        if engine.ready and not reload:
            engine.update_settings(settings)  # reloads only when the model settings changed
        else:
            engine.settings = settings
            engine.load(progress=report)
        # (this machine's cost profile, if not measured yet: idle work, after the load; plain
        # decoding needs none, so the first requests are answered meanwhile)

    # -- model files replaced on disk: reload ----------------------------------------------------
    def _watch_models(self, settings: Settings) -> None:
        """Remember the model files and llama.cpp's libraries as the last load found them
        (missing ones too: a file that appears, is replaced or is repaired is loaded; a rebuild
        may cure a crash the probe found), and watch them."""
        paths = loading.watched_files(settings, self.scheduler.engine.backend)
        self._model_files = {path: file_identity(path) for path in paths}
        if self._watcher is None and not self.scheduler.closed:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        """Reload when a model file has changed and then stayed the same for MODEL_WATCH_S (a
        copy in progress is waited for). The models are read into memory, so the old ones keep
        serving until then."""
        seen: dict[str, FileIdentity] = {}
        while not self.scheduler.closed:
            await asyncio.sleep(MODEL_WATCH_S)
            now = {path: file_identity(path) for path in self._model_files}
            changed = [p for p, was in self._model_files.items() if now[p] != was]
            if changed and all(seen.get(p) == now[p] for p in changed):
                self.tell(f"{changed[0]} changed on disk: reloading", lsp.MessageType.Info)
                await self.update_engine(reload=True)
            seen = now

    async def _begin_progress(self, message: str) -> str | None:
        caps = self.client_capabilities.window
        if not (caps and caps.work_done_progress):
            return None
        token = str(uuid.uuid4())
        try:  # progress may be reported only once the client has accepted the token
            await asyncio.wait_for(self.work_done_progress.create_async(token), CLIENT_TIMEOUT_S)
        except Exception as exc:
            log.info("no progress reports: window/workDoneProgress/create failed: %r", exc)
            return None
        begin = lsp.WorkDoneProgressBegin(title="spec-lsp", message=message)
        self.work_done_progress.begin(token, begin)
        return token

    def _teller(self, loop: asyncio.AbstractEventLoop) -> Callable[[str], None]:
        """`tell` for the engine's threads (pygls is not thread-safe: handed to the loop)."""

        def tell(message: str) -> None:
            loop.call_soon_threadsafe(self.tell, message)

        return tell

    def _reporter(self, token: str | None) -> Callable[[str], None]:
        """A progress callback for the engine thread (pygls is not thread-safe: the writes are
        handed to the event loop)."""
        loop = asyncio.get_running_loop()

        def report(message: str) -> None:
            log.info("%s", message)
            if token is not None:
                value = lsp.WorkDoneProgressReport(message=message)
                loop.call_soon_threadsafe(self.work_done_progress.report, token, value)

        return report


def retention_s() -> tuple[float, ...]:
    """When accepted text is looked for again: RETENTION_S, or SPEC_LSP_RETENTION_S (seconds,
    comma-separated: the tests' short clock)."""
    raw = os.environ.get("SPEC_LSP_RETENTION_S", "")
    try:
        return tuple(float(part) for part in raw.split(",")) if raw else RETENTION_S
    except ValueError:
        log.warning("SPEC_LSP_RETENTION_S=%r is not seconds: using %s", raw, RETENTION_S)
        return RETENTION_S


def file_identity(path: str) -> FileIdentity:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def merge_valid(
    base: Settings, changes: Mapping[str, Any]
) -> tuple[Settings, list[str], list[str]]:
    """config.merge, except that the valid changes apply even when others are invalid."""
    new, errors, unknown = config.merge(base, changes)
    if errors:
        valid = {k: v for k, v in changes.items() if not config.merge(base, {k: v})[1]}
        new = config.merge(base, valid)[0]
    return new, errors, unknown
