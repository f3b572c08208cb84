"""Thin handlers: translate in, call the engine through the scheduler, translate out."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from spec_lsp.server import convert

if TYPE_CHECKING:
    from spec_lsp.server.app import SpecLanguageServer

log = logging.getLogger(__name__)
STATS_METHOD = "specLsp/stats"


async def inline_completion(
    ls: SpecLanguageServer, params: lsp.InlineCompletionParams
) -> lsp.InlineCompletionList:
    document = ls.document_for(params.text_document.uri)
    if document is None or not ls.settings.enable:
        return lsp.InlineCompletionList(items=[])
    selected = params.context.selected_completion_info if params.context else None
    request = convert.to_request(document, params.position, ls.settings, selected)
    completion = await ls.scheduler.complete(request)
    if completion is not None and completion.stats.cache != "typed_through":
        ls.scheduler.precompute(request, completion)
    return convert.to_inline_list(document, params.position, completion, selected)


async def completion(ls: SpecLanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    document = ls.document_for(params.text_document.uri)
    if document is None or not ls.settings.enable:
        return lsp.CompletionList(is_incomplete=True, items=[])
    request = convert.to_request(document, params.position, ls.settings)
    result = await ls.scheduler.complete(request)
    return convert.to_completion_list(document, params.position, result)


async def initialized(ls: SpecLanguageServer, params: lsp.InitializedParams) -> None:
    await ls.load_models()


async def did_change_configuration(
    ls: SpecLanguageServer, params: lsp.DidChangeConfigurationParams
) -> None:
    changes = params.settings
    if isinstance(changes, dict) and isinstance(changes.get("specLsp"), dict):
        changes = changes["specLsp"]
    if isinstance(changes, dict):
        await ls.apply_settings(changes)


def stats(ls: SpecLanguageServer, params: Any) -> dict[str, Any]:
    return {**ls.scheduler.engine.stats(), **ls.scheduler.stats()}


def shutdown(ls: SpecLanguageServer, params: Any) -> None:
    ls.scheduler.close()
