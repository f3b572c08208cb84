"""The real server over stdio with the real SmolLM2 model: a completion arrives, with stats."""

from __future__ import annotations

import asyncio
import sys

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

pytestmark = pytest.mark.real

TEXT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    "


async def run(model: str) -> tuple[lsp.InlineCompletionList, dict]:
    client = LanguageClient("test", "1")
    await client.start_io(sys.executable, "-m", "spec_lsp.cli", "serve", "--model", model)
    try:
        await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                initialization_options={"maxTokens": 16, "drafter": "ngram"},
            )
        )
        client.initialized(lsp.InitializedParams())
        uri = "file:///ops.py"
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=TEXT)
            )
        )
        params = lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=9, character=4),
            context=lsp.InlineCompletionContext(
                trigger_kind=lsp.InlineCompletionTriggerKind.Invoked
            ),
        )
        for _ in range(300):  # the model loads and profiles in the background
            # every request is answered while the model loads (llama-cpp-python's quiet mode
            # used to redirect stdout during the load and swallow these answers)
            result = await asyncio.wait_for(
                client.text_document_inline_completion_async(params), 30
            )
            if result and result.items:
                break
            await asyncio.sleep(0.2)
        for _ in range(300):  # answered at its first line, the generation goes on: its end
            stats = await asyncio.wait_for(
                client.protocol.send_request_async("specLsp/stats", None), 30
            )
            if stats.pending.generations == 0:
                break
            await asyncio.sleep(0.1)
        await client.shutdown_async(None)
        client.exit(None)
        return result, stats
    finally:
        await client.stop()


def test_real_model_completion_over_lsp(smollm2_path):
    result, stats = asyncio.run(run(str(smollm2_path)))
    item = result.items[0]
    assert item.insert_text.strip() and item.range.start == lsp.Position(line=9, character=4)
    assert "SmolLM2" in " ".join(stats.models) or "Smollm2" in " ".join(stats.models)
    assert stats.prompt_tokens_evaluated > 0
