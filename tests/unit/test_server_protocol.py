"""The protocol subclass keeps nothing per message once the message is handled.

pygls 2.1 stores a Future per handled notification (and per step of its generator handlers) in
`_request_futures` under a fresh uuid and never removes it: a server that runs all day kept one
per keystroke (about 2 KB each with its didChange params), a straight line of RSS growth.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types as lsp

from spec_lsp.config import Settings
from spec_lsp.engine import build_engine
from spec_lsp.server.app import build_server

URI = "file:///a.py"


def change(i: int) -> lsp.DidChangeTextDocumentParams:
    at = lsp.Position(line=0, character=i)
    return lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=i + 1),
        content_changes=[
            lsp.TextDocumentContentChangePartial(range=lsp.Range(start=at, end=at), text="x")
        ],
    )


async def test_handled_notifications_and_requests_leave_no_future_behind():
    server = build_server(Settings(), build_engine(Settings(), backend="fake"))
    protocol = server.protocol
    sent: list[object] = []
    protocol._send_data = sent.append  # type: ignore[method-assign]
    initialize = lsp.InitializeParams(capabilities=lsp.ClientCapabilities())
    protocol._handle_request(1, lsp.INITIALIZE, initialize)
    await asyncio.sleep(0.05)
    item = lsp.TextDocumentItem(uri=URI, language_id="python", version=0, text="")
    protocol._handle_notification(
        lsp.TEXT_DOCUMENT_DID_OPEN, lsp.DidOpenTextDocumentParams(text_document=item)
    )
    for i in range(300):
        protocol._handle_notification(lsp.TEXT_DOCUMENT_DID_CHANGE, change(i))
    protocol._handle_request(2, "specLsp/stats", None)  # an async handler: a task, then answered
    await asyncio.sleep(0.05)
    assert server.workspace.get_text_document(URI).source == "x" * 300  # the edits were applied
    assert len(sent) == 2  # initialize and stats answered
    assert protocol._request_futures == {}
    server.scheduler.join()


async def test_a_document_closed_and_opened_again_at_once_stays_indexed():
    """The close waits for the engine's worker; an open that arrives meanwhile must not be
    undone by it: the reopened text is in the workspace index once the close has run."""
    server = build_server(Settings(), build_engine(Settings(), backend="fake"))
    protocol = server.protocol
    protocol._send_data = lambda data: None  # type: ignore[method-assign]
    initialize = lsp.InitializeParams(capabilities=lsp.ClientCapabilities())
    protocol._handle_request(1, lsp.INITIALIZE, initialize)
    await asyncio.sleep(0.05)

    def opened(text: str) -> lsp.DidOpenTextDocumentParams:
        item = lsp.TextDocumentItem(uri=URI, language_id="python", version=0, text=text)
        return lsp.DidOpenTextDocumentParams(text_document=item)

    protocol._handle_notification(lsp.TEXT_DOCUMENT_DID_OPEN, opened("first = 1\n"))
    close = lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=URI))
    protocol._handle_notification(lsp.TEXT_DOCUMENT_DID_CLOSE, close)
    protocol._handle_notification(lsp.TEXT_DOCUMENT_DID_OPEN, opened("second = 2\n"))
    for _ in range(100):  # the close runs on the worker
        await asyncio.sleep(0.01)
        await server.scheduler.run(server.scheduler.engine.stores.drafting.catch_up)
    workspace = server.scheduler.engine.parts.open_documents
    assert workspace.documents() == [URI]
    assert workspace.text(URI) == "second = 2\n"
    assert protocol._request_futures == {}
    server.scheduler.join()


async def test_cancelling_a_request_already_answered_is_not_a_warning(caplog):
    """While typing fast the client's $/cancelRequest crosses the answer on the wire: once per
    keystroke, not worth a warning (pygls logs one each time: 10,890 lines in 2 minutes)."""
    server = build_server(Settings(), build_engine(Settings(), backend="fake"))
    protocol = server.protocol
    with caplog.at_level(logging.INFO):
        protocol._handle_notification("$/cancelRequest", lsp.CancelParams(id=99))
        await asyncio.sleep(0.01)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    server.scheduler.join()
