"""build_server(settings, engine) -> the language server with its features; serve() runs it
over stdio or TCP."""

from __future__ import annotations

import ipaddress
import logging
import logging.handlers
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp

from spec_lsp import __version__
from spec_lsp.config import Settings
from spec_lsp.engine import Engine, build_engine
from spec_lsp.server import convert, handlers
from spec_lsp.server.language_server import SpecLanguageServer
from spec_lsp.server.logs import setup_logging

log = logging.getLogger(__name__)
# (`spec-lsp serve --help` states both figures: change them there too.)


def build_server(settings: Settings, engine: Engine) -> SpecLanguageServer:
    server = SpecLanguageServer(settings, engine)
    features: list[tuple[str, Any, Callable[..., Any]]] = [
        (lsp.INITIALIZE, None, handlers.initialize),
        (lsp.INITIALIZED, None, handlers.initialized),
        (
            lsp.TEXT_DOCUMENT_INLINE_COMPLETION,
            lsp.InlineCompletionOptions(),
            handlers.inline_completion,
        ),
        (lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(), handlers.completion),
        (lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, None, handlers.did_change_configuration),
        (lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, None, handlers.workspace_folders_changed),
        (lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, None, handlers.watched_files_changed),
        (lsp.TEXT_DOCUMENT_DID_OPEN, None, handlers.document_changed),
        (lsp.TEXT_DOCUMENT_DID_CHANGE, None, handlers.document_changed),
        (lsp.TEXT_DOCUMENT_DID_CLOSE, None, handlers.document_closed),
        (handlers.STATS_METHOD, None, handlers.stats),
        (handlers.FOCUS_METHOD, None, handlers.document_focused),
        (handlers.DOCUMENT_METHOD, None, handlers.document_digest),
        (lsp.SHUTDOWN, None, handlers.shutdown),
    ]
    for method, options, handler in features:
        server.feature(method, options)(handler)
    server.command(convert.ACCEPTED_COMMAND)(handlers.accepted)
    return server


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
    logs = setup_logging(log_file, log_level)
    server = build_server(settings, build_engine(settings, backend=backend))
    where = f"TCP {host}:{port}" if tcp else "stdio"
    log.info("spec-lsp %s serving over %s (backend %s)", __version__, where, backend)
    try:
        if tcp:
            if not is_loopback(host):
                log.warning(
                    "listening on %s:%d: anyone who can reach it can use the server", host, port
                )
            server.start_tcp(host, port)
        else:
            server.start_io()
    finally:
        server.scheduler.join()  # the engine closes on its own thread, after the current round
        logs.close()  # what is still queued is written
    return 0


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
