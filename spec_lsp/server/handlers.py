"""Thin handlers, each the same three steps: translate in, call, translate out.

They receive the server (language_server.SpecLanguageServer) as a parameter;
app.build_server registers them.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp

from spec_lsp.server import convert, heap
from spec_lsp.server.acceptance import typed_keys
from spec_lsp.server.language_server import SpecLanguageServer
from spec_lsp.server.protocol import LspTextDocument

log = logging.getLogger(__name__)
STATS_METHOD = "specLsp/stats"
# a client's notification that the person brought an open document into view (a tab chosen, a
# window entered): its file prefix and context block grow while they read, as at didOpen
FOCUS_METHOD = "specLsp/didFocus"
DOCUMENT_METHOD = "specLsp/document"
SECTION = "specLsp"


async def inline_completion(
    ls: SpecLanguageServer, params: lsp.InlineCompletionParams
) -> lsp.InlineCompletionList:
    document = ls.document_for(params.text_document.uri)
    if document is None:
        return lsp.InlineCompletionList(items=[])
    position = convert.clamp(document, params.position)
    info = params.context.selected_completion_info if params.context else None
    selected = convert.usable_selection(position, info)
    request = convert.to_request(document, position, ls.settings, selected)
    invoked = params.context is not None and (
        params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Invoked
    )
    ls.acceptance.asked(request.document_id, request.prefix, request.suffix)
    completion = await ls.scheduler.complete(request, invoked=invoked)
    shown = ls.show(request, completion, invoked=invoked)  # (showing.py: what, and why)
    if shown.precompute and shown.completion is not None:
        ls.scheduler.precompute(request, shown.completion)
    elif shown.stop_rest:
        ls.scheduler.stop_rest(request.document_id)
    return convert.to_inline_list(document, position, shown.completion, selected, shown.number)


async def completion(ls: SpecLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    document = ls.document_for(params.text_document.uri)
    if document is None:
        return lsp.CompletionList(is_incomplete=True, items=[])
    position = convert.clamp(document, params.position)
    request = convert.to_request(document, position, ls.settings)
    invoked = params.context is None or (
        params.context.trigger_kind == lsp.CompletionTriggerKind.Invoked
    )
    result = await ls.scheduler.complete(request, invoked=invoked)
    return convert.to_completion_list(document, position, result)


def initialize(ls: SpecLanguageServer, params: lsp.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, Mapping):
        ls.configure(settings_section(options), origin="initializationOptions")
    ls.folders = convert.workspace_folders(params)


async def initialized(ls: SpecLanguageServer, params: lsp.InitializedParams) -> None:
    await ls.update_engine()  # (the engine takes the settings: the workspace's bounds too)
    ls.scheduler.engine.set_workspace_folders(ls.folders)
    await ls.watch_workspace_files()  # (after the load: a client slow to answer delays nothing)


def workspace_folders_changed(
    ls: SpecLanguageServer, params: lsp.DidChangeWorkspaceFoldersParams
) -> None:
    """(After pygls has updated its folders.)"""
    uris = [folder.uri for folder in ls.workspace.folders.values()]
    ls.scheduler.engine.set_workspace_folders(convert.local_paths(uris))


def accepted(ls: SpecLanguageServer, *args: Any) -> None:
    """The client ran an item's command: the person accepted it (convert.ACCEPTED_COMMAND)."""
    if len(args) == 1 and isinstance(args[0], int):
        ls.acceptance.command(args[0])


def watched_files_changed(ls: SpecLanguageServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    changed, deleted = convert.file_events(params.changes)
    ls.scheduler.engine.files_changed(changed, deleted)


async def did_change_configuration(
    ls: SpecLanguageServer, params: lsp.DidChangeConfigurationParams
) -> None:
    changes = params.settings
    if not changes:  # a pull-model client (settings: null): ask for our section
        changes = await ls.pull_settings(SECTION)
    if isinstance(changes, Mapping):
        await ls.apply_settings(settings_section(changes))


def document_changed(
    ls: SpecLanguageServer, params: lsp.DidOpenTextDocumentParams | lsp.DidChangeTextDocumentParams
) -> None:
    """After pygls has applied the change: the engine's workspace index follows the text, and
    once the person pauses the prompt at the edited place is evaluated ahead (prewarm); an
    opened document's file prefix may start growing (scheduler.opened)."""
    uri = params.text_document.uri
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is None:
        return
    ls.scheduler.engine.document_changed(document.uri, document.source)
    changes = getattr(params, "content_changes", None)
    keys = typed_keys(convert.inserted_texts(changes))  # (a client's batch of keys)
    ls.acceptance.changed(document.uri, document.source, keys)
    units = document.position_codec.client_num_units  # (the negotiated encoding's)
    where = convert.after_edit(changes[-1], units) if changes else None
    if where is None and changes and isinstance(document, LspTextDocument):
        where = document.after_whole_change  # the whole text sent: where it differed
    small = len(document.source) <= ls.settings.max_document_chars
    if not (ls.settings.enable and small):
        return
    if where is not None:
        position = convert.clamp(document, where)
        ls.scheduler.prewarm(convert.to_request(document, position, ls.settings))
    elif isinstance(params, lsp.DidOpenTextDocumentParams):
        ls.focus(document.uri)


def document_focused(ls: SpecLanguageServer, params: Any) -> None:
    """specLsp/didFocus `{textDocument: {uri}, position?}`: an open document brought into view
    (VS Code's active editor, Neovim's BufEnter), or the cursor put somewhere in it (a click,
    a jump; not typing, which didChange tells). The file prefix becomes its own, as at didOpen
    (one not open yet: at its didOpen); with the cursor, the prompt there is evaluated once the
    person pauses (a prewarm, as after an edit), so the ask after their first key finds it
    begun. Too large, or completions off: nothing; a malformed position is ignored."""
    text_document = getattr(params, "text_document", None) or getattr(params, "textDocument", None)
    uri = getattr(text_document, "uri", None)
    if not isinstance(uri, str):
        return
    position = convert.told_position(getattr(params, "position", None))
    if position is None or ls.focused != uri or ls.told != uri:  # (not a move within it)
        ls.focus(uri, told=True)
    document = ls.document_for(uri) if position is not None and ls.focused == uri else None
    if position is not None and document is not None:
        at = convert.clamp(document, position)
        ls.scheduler.prewarm(convert.to_request(document, at, ls.settings))


async def document_closed(ls: SpecLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    """The engine releases what it held for the document, on its worker thread (after the
    generation running there, which may be the document's own), and the freed pages go back to
    the system."""
    uri = params.text_document.uri
    engine = ls.scheduler.engine
    keys = {uri, unquote(uri)}  # whichever spelling the requests used
    for key in keys:
        ls.acceptance.closed(key)

    def close() -> None:
        for key in keys:
            engine.document_closed(key)
        heap.return_freed_memory()  # what the document held, back to the system
        heap.settle_soon()  # (and once the closes stop, what the interpreter still keeps)

    if ls.scheduler.closed:
        return
    try:
        await ls.scheduler.run(close)
    except RuntimeError:  # the worker shut down meanwhile (exit): nothing to release
        return
    reopened = ls.workspace.text_documents.get(unquote(uri))
    if reopened is not None:  # opened again while the close waited for the worker
        engine.document_changed(reopened.uri, reopened.source)


def stats(ls: SpecLanguageServer, params: Any) -> dict[str, Any]:
    engine = ls.scheduler.engine
    server = {"ready": engine.ready, "load_error": ls.load_error, "file_events": ls.file_events}
    data = {**engine.stats(), **ls.scheduler.stats(), **server}
    data["acceptance"] = ls.acceptance.report()
    data["shown_why"] = ls.showing.report()  # each verdict's count (showing.py)
    documents = list(ls.workspace.text_documents.values())
    data["memory"]["open_documents"] = {
        "count": len(documents),
        "chars": sum(len(document.source) for document in documents),
    }
    data["memory"]["heap"] = heap.in_use()  # allocated: what a leak grows (rss_mb: resident)
    data["memory"]["rss_mb"] = None  # the server's resident memory (Linux: /proc)
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):  # in kB
                    data["memory"]["rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return data


def document_digest(ls: SpecLanguageServer, params: Any) -> dict[str, Any] | None:
    """specLsp/document {uri}: the server's view of an open document (version, length in code
    points, sha256 of its UTF-8 text), to check it against the editor's; None if not open."""
    uri = params.get("uri") if isinstance(params, Mapping) else getattr(params, "uri", None)
    document = ls.workspace.text_documents.get(unquote(uri)) if isinstance(uri, str) else None
    if document is None:
        return None
    text = document.source
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return {"uri": uri, "version": document.version, "length": len(text), "sha256": digest}


def shutdown(ls: SpecLanguageServer, params: Any) -> None:
    ls.scheduler.close()


def settings_section(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """Our settings from what an editor sent: under `specLsp`, or at the top level."""
    nested = options.get(SECTION)
    return nested if isinstance(nested, Mapping) else options
