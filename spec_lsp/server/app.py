"""build_server(settings, engine) -> the language server; serve() runs it over stdio or TCP."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import sys
import uuid
from collections.abc import Mapping
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from spec_lsp import __version__, config
from spec_lsp.config import Settings
from spec_lsp.engine import Engine, EngineError, build_engine
from spec_lsp.server import handlers
from spec_lsp.server.protocol import SpecProtocol
from spec_lsp.server.scheduler import Scheduler

log = logging.getLogger(__name__)


class SpecLanguageServer(LanguageServer):
    def __init__(self, settings: Settings, engine: Engine) -> None:
        super().__init__("spec-lsp", __version__, protocol_cls=SpecProtocol)
        self.settings = settings
        self.scheduler = Scheduler(engine)
        self.scheduler.debounce_s = settings.debounce_ms / 1000
        self.load_error: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Protocol errors (bad JSON, bad params) are logged, not shown: the client sent them."""
        log.error("protocol error from %s: %s", getattr(source, "__name__", source), error)

    def document_for(self, uri: str) -> TextDocument | None:
        """The open document, or None (unknown documents get empty answers, not errors)."""
        document = self.workspace.text_documents.get(uri)
        if document is None:
            log.info("request for a document that is not open: %s", uri)
            return None
        if len(document.source) > self.settings.max_document_chars:
            log.info(
                "%s is larger than maxDocumentChars (%d): no completions",
                uri,
                self.settings.max_document_chars,
            )
            return None
        return document

    def tell(self, message: str, kind: lsp.MessageType = lsp.MessageType.Warning) -> None:
        log.warning("%s", message)
        self.window_show_message(lsp.ShowMessageParams(type=kind, message=f"spec-lsp: {message}"))

    async def apply_settings(self, changes: Mapping[str, Any]) -> None:
        new, errors, unknown = config.merge(self.settings, changes)
        for key in unknown:
            log.warning("unknown setting %r ignored", key)
        if errors:
            self.tell("; ".join(errors) + ". The previous settings stay in force.")
            return
        old, self.settings = self.settings, new
        self.scheduler.debounce_s = new.debounce_ms / 1000
        if new != old:
            await self._engine_call(lambda: self.scheduler.engine.update_settings(new), "loading")

    async def load_models(self) -> None:
        await self._engine_call(self._load_with_progress, "loading")

    async def _engine_call(self, job: Any, _label: str) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await self.scheduler.run(job)
            self.load_error = None
        except EngineError as exc:
            self.load_error = str(exc)
            self.tell(str(exc), lsp.MessageType.Error)

    def _on_loop(self, function: Any, *args: Any) -> None:
        """pygls is not thread-safe: the engine thread hands protocol writes to the event loop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(function, *args)

    def _load_with_progress(self) -> None:
        """Runs on the engine thread."""
        engine = self.scheduler.engine
        engine.settings = self.settings
        token = str(uuid.uuid4())
        progress = self._progress_supported()
        if progress:
            self._on_loop(self.work_done_progress.create, token)
            self._on_loop(
                self.work_done_progress.begin,
                token,
                lsp.WorkDoneProgressBegin(title="spec-lsp", message="loading models"),
            )

        def report(message: str) -> None:
            if progress:
                self._on_loop(
                    self.work_done_progress.report,
                    token,
                    lsp.WorkDoneProgressReport(message=message),
                )

        try:
            engine.load(progress=report)
            if (
                self.settings.draft_policy == "adaptive"
                and self.settings.drafter != "none"
                and engine.profile is None
            ):
                report("measuring this machine's costs")
                engine.ensure_profile()
        finally:
            if progress:
                self._on_loop(
                    self.work_done_progress.end,
                    token,
                    lsp.WorkDoneProgressEnd(message="ready" if engine.ready else "failed"),
                )

    def _progress_supported(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)


def build_server(settings: Settings, engine: Engine) -> SpecLanguageServer:
    server = SpecLanguageServer(settings, engine)
    server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())(
        handlers.inline_completion
    )
    server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[]))(
        handlers.completion
    )
    server.feature(lsp.INITIALIZED)(handlers.initialized)
    server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(handlers.did_change_configuration)
    server.feature(handlers.STATS_METHOD)(handlers.stats)
    server.feature(lsp.SHUTDOWN)(handlers.shutdown)

    @server.feature(lsp.INITIALIZE)
    def _initialize(ls: SpecLanguageServer, params: lsp.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict):
            nested = options.get("specLsp")
            new, errors, unknown = config.merge(
                ls.settings, nested if isinstance(nested, dict) else options
            )
            for key in unknown:
                log.warning("unknown initialization option %r ignored", key)
            if errors:
                ls.tell("; ".join(errors) + ". Using the defaults for those settings.")
            else:
                ls.settings = new
                ls.scheduler.debounce_s = new.debounce_ms / 1000

    return server


def setup_logging(log_file: str | None, level: str) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def serve(
    settings: Settings,
    *,
    backend: str = "llama",
    tcp: bool = False,
    host: str = "127.0.0.1",
    port: int = 2087,
    log_file: str | None = None,
    log_level: str = "INFO",
) -> int:
    setup_logging(log_file, log_level)
    server = build_server(settings, build_engine(settings, backend=backend))
    try:
        if tcp:
            if not _is_loopback(host):
                log.warning(
                    "listening on %s: anyone who can reach this address can use the server", host
                )
            server.start_tcp(host, port)
        else:
            server.start_io()
    finally:
        server.scheduler.close()
        server.scheduler.engine.close()
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
