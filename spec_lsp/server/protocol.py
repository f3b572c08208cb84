"""pygls' protocol with four fixes, pinned by end-to-end, fuzz and unit tests.

1. A request whose params do not deserialize gets an answer. pygls logs the error and shows
   "Error in server" but never answers the request, so the client would wait forever.
2. Documents split lines where LSP does: at \\n, \\r\\n and \\r only. pygls uses
   `str.splitlines`, which also breaks at form feeds, \\x0b, \\x1c-\\x1e, \\x85, U+2028 and
   U+2029, so in a file holding one of them (a ^L page break, say) every later position lands
   on the wrong line and incremental edits corrupt the document.
3. Incremental edits read positions as LSP says (see LspTextDocument._apply_incremental_change).
   A whole-document change says where it was made (after_whole_change), so that its place is
   evaluated ahead as an incremental change's is.
4. A handled message leaves nothing behind. pygls 2.1 keeps the Future of every notification
   (and of every step of its generator handlers, didChange's among them) in `_request_futures`
   under a fresh uuid and never removes it: one per keystroke, about 2 KB each with its params,
   RSS rising in a straight line all day. Here a Future leaves the table once it is done
   (a cancelled one stays: pygls' shutdown cancels them while it iterates over the table).
5. A `$/cancelRequest` for a request already answered is normal (the answer and the cancel
   cross on the wire, once per keystroke while typing fast): pygls warns each time; here it is
   a debug line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument, Workspace

from spec_lsp.server.convert import edit_end, offset_at, position_at

log = logging.getLogger(__name__)

# Characters str.splitlines breaks at that LSP does not treat as line ends.
_NOT_LSP_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LSP_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lsp_lines(text: str) -> tuple[str, ...]:
    """The lines of `text` as LSP counts them, each with its line ending."""
    if _NOT_LSP_BREAKS.search(text) is None:
        return tuple(text.splitlines(True))  # the same split, at C speed
    return tuple(_LSP_LINE.findall(text))


class LspTextDocument(TextDocument):
    _split: tuple[str, tuple[str, ...]] | None = None  # (source, its lines): split once per edit
    # Where the cursor is after the last whole-document change (None: it changed nothing). The
    # text before it is compared here, the one moment both are at hand: none is kept.
    after_whole_change: lsp.Position | None = None

    @property
    def lines(self) -> Sequence[str]:
        source = self.source
        if self._split is None or self._split[0] is not source:
            self._split = (source, lsp_lines(source))
        return self._split[1]

    def _apply_incremental_change(self, change: lsp.TextDocumentContentChangePartial) -> None:
        """Replace the range with the text, positions read as convert.offset_at reads them.
        pygls split a CRLF for a character past the end of a line, put text past the end of
        the last line one character early, and duplicated or dropped reversed ranges."""
        start = offset_at(self, change.range.start)
        end = offset_at(self, change.range.end)
        start, end = min(start, end), max(start, end)  # a reversed range, forwards
        self._source = self.source[:start] + change.text + self.source[end:]

    def _apply_full_change(self, change: lsp.TextDocumentContentChangeEvent) -> None:
        end = edit_end(self.source, change.text)
        super()._apply_full_change(change)
        self.after_whole_change = None if end is None else position_at(self, end)


class LspWorkspace(Workspace):
    """pygls' workspace whose documents are LspTextDocuments (it adds no state of its own)."""

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self.position_codec,
        )


class SpecProtocol(LanguageServerProtocol):
    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Callable[[Future[Any]], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        def forget_then(future: Future[Any]) -> None:
            # done: no cancel can reach it. A cancelled one was either popped by the cancel
            # handler, or is being cancelled by pygls' shutdown, which iterates over the table
            # (cancel() runs this callback at once: deleting here would break its loop and
            # answer `shutdown` with an error).
            if not future.cancelled() and self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, forget_then, args, kwargs)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if msg_id not in self._request_futures:
            log.debug("$/cancelRequest for %r, already answered", msg_id)
            return
        super()._handle_cancel_notification(msg_id)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" in data and "method" in data:
                log.warning(
                    "request %r (%s) has invalid params: answered with an error",
                    data["id"],
                    data["method"],
                )
                self._send_response(data["id"], error=error.to_response_error())
            raise

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Generator[Any, Any, Any]:
        """pygls' initialize, with the workspace it creates (still empty) made an LspWorkspace
        before anything can open a document in it."""
        steps = super().lsp_initialize(params)
        sent: Any = None
        while True:
            try:
                step = steps.send(sent)
            except StopIteration as done:
                self._adopt_workspace()
                return done.value
            self._adopt_workspace()
            sent = yield step

    def _adopt_workspace(self) -> None:
        workspace = self._workspace
        if workspace is not None and not isinstance(workspace, LspWorkspace):
            workspace.__class__ = LspWorkspace
