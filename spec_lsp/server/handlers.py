"""Thin handlers, each the same three steps: translate in, call, translate out.

They receive the server as a parameter; app.build_server registers them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types as lsp

from spec_lsp.server import convert

if TYPE_CHECKING:
    from spec_lsp.server.app import SpecLanguageServer

log = logging.getLogger(__name__)
STATS_METHOD = "specLsp/stats"
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
    completion = await ls.scheduler.complete(request)
    if completion is not None and completion.stats.cache != "typed_through":
        ls.scheduler.precompute(request, completion)
    return convert.to_inline_list(document, position, completion, selected)


async def completion(ls: SpecLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    document = ls.document_for(params.text_document.uri)
    if document is None:
        return lsp.CompletionList(is_incomplete=True, items=[])
    position = convert.clamp(document, params.position)
    request = convert.to_request(document, position, ls.settings)
    result = await ls.scheduler.complete(request)
    return convert.to_completion_list(document, position, result)


def initialize(ls: SpecLanguageServer, params: lsp.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, Mapping):
        ls.configure(settings_section(options), origin="initializationOptions")


async def initialized(ls: SpecLanguageServer, params: lsp.InitializedParams) -> None:
    await ls.update_engine()


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
    """After pygls has applied the change: the engine's workspace index follows the text."""
    uri = params.text_document.uri
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is not None:
        ls.scheduler.engine.document_changed(document.uri, document.source)


def document_closed(ls: SpecLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    for key in {uri, unquote(uri)}:  # whichever spelling the requests used
        ls.scheduler.engine.document_closed(key)


def stats(ls: SpecLanguageServer, params: Any) -> dict[str, Any]:
    engine = ls.scheduler.engine
    server = {"ready": engine.ready, "load_error": ls.load_error}
    return {**engine.stats(), **ls.scheduler.stats(), **server}


def shutdown(ls: SpecLanguageServer, params: Any) -> None:
    ls.scheduler.close()


def settings_section(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """Our settings from what an editor sent: under `specLsp`, or at the top level."""
    nested = options.get(SECTION)
    return nested if isinstance(nested, Mapping) else options
