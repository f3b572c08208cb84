"""End-to-end over stdio with the fake backend: what an editor sees."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

URI = "file:///work/demo.py"


def open_doc(client: LanguageClient, text: str, uri: str = URI, version: int = 1) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )


def inline(
    client: LanguageClient,
    line: int,
    character: int,
    uri: str = URI,
    kind=lsp.InlineCompletionTriggerKind.Automatic,
    selected=None,
):
    return client.text_document_inline_completion_async(
        lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=character),
            context=lsp.InlineCompletionContext(
                trigger_kind=kind, selected_completion_info=selected
            ),
        )
    )


async def ready_inline(client: LanguageClient, line: int, character: int, **kw):
    """The model loads in the background: ask until it answers (like an editor would)."""
    for _ in range(100):
        result = await inline(client, line, character, **kw)
        if result and result.items:
            return result
        await asyncio.sleep(0.05)
    raise AssertionError("no completion")


@pytest.mark.parametrize(
    "kind", [lsp.InlineCompletionTriggerKind.Automatic, lsp.InlineCompletionTriggerKind.Invoked]
)
async def test_inline_completion_has_text_and_range(client: LanguageClient, kind):
    open_doc(client, "import os\n\ndef fo\n")
    result = await ready_inline(client, 2, 6, kind=kind)
    item = result.items[0]
    assert item.insert_text.startswith("o(x):")
    assert item.range == lsp.Range(lsp.Position(2, 6), lsp.Position(2, 6))


async def test_server_advertises_inline_completion(client: LanguageClient):
    caps = client.init_result.capabilities
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    assert caps.text_document_sync.change == lsp.TextDocumentSyncKind.Incremental


async def test_utf16_positions_with_emoji_and_cjk(client: LanguageClient):
    text = "s = '😀漢字'; def fo\n"
    open_doc(client, text)
    character = len(text.rstrip("\n").encode("utf-16-le")) // 2  # UTF-16 units
    result = await ready_inline(client, 0, character)
    assert result.items[0].insert_text.startswith("o(x):")
    assert result.items[0].range.start == lsp.Position(0, character)


async def test_crlf_document(client: LanguageClient):
    open_doc(client, "import os\r\n\r\ndef fo\r\n")
    result = await ready_inline(client, 2, 6)
    assert result.items[0].insert_text.startswith("o(x):")
    assert "\r" not in result.items[0].insert_text.split("\n")[0]


async def test_incremental_edits_then_typed_through(client: LanguageClient):
    open_doc(client, "import os\n\ndef f\n")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=URI, version=2),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(2, 5), lsp.Position(2, 5)), text="o"
                )
            ],
        )
    )
    first = (await ready_inline(client, 2, 6)).items[0]
    assert first.insert_text.startswith("o(x):")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=URI, version=3),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(2, 6), lsp.Position(2, 6)), text="o("
                )
            ],
        )
    )
    second = (await inline(client, 2, 8)).items[0]
    # typed through the suggestion: the item re-covers what was typed, answered from the cache
    assert second.range == lsp.Range(lsp.Position(2, 6), lsp.Position(2, 8))
    assert second.insert_text == first.insert_text


async def test_empty_result_is_an_empty_list(client: LanguageClient):
    open_doc(client, "def fo\n", uri="file:///work/warm.py")
    await ready_inline(client, 0, 6, uri="file:///work/warm.py")  # the model is ready
    open_doc(client, "zzzz qqqq")
    result = await inline(client, 0, 9)
    assert result is not None and len(result.items) == 0


async def test_unknown_document_and_positions_past_the_end(client: LanguageClient):
    result = await inline(client, 0, 0, uri="file:///never/opened.py")
    assert len(result.items) == 0
    open_doc(client, "def fo\n")
    result = await ready_inline(client, 0, 500)  # clamps to the end of the line
    assert result.items[0].insert_text.startswith("o(x):")
    result = await inline(client, 99, 0)
    assert result is not None


async def test_completion_fallback(client: LanguageClient):
    open_doc(client, "def fo\n")
    await ready_inline(client, 0, 6)
    result = await client.text_document_completion_async(
        lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=URI), position=lsp.Position(0, 6)
        )
    )
    item = result.items[0]
    assert item.text_edit.new_text.startswith("o(x):")
    assert item.text_edit.range.end == lsp.Position(0, 6)


async def test_selected_completion_info(client: LanguageClient):
    open_doc(client, "x = gre\n")
    await ready_inline(client, 0, 7)
    selected = lsp.SelectedCompletionInfo(
        range=lsp.Range(lsp.Position(0, 4), lsp.Position(0, 7)), text="greet"
    )
    # "def greet(" is in the corpus; completing after "x = greet" uses the selected item's text
    open_doc(client, "def gre\n", uri="file:///work/b.py")
    result = await ready_inline(
        client,
        0,
        7,
        uri="file:///work/b.py",
        selected=lsp.SelectedCompletionInfo(
            range=lsp.Range(lsp.Position(0, 4), lsp.Position(0, 7)), text="greet"
        ),
    )
    item = result.items[0]
    assert item.range.start == lsp.Position(0, 4) and item.insert_text.startswith("greet(name):")
    del selected


async def test_stats_request(client: LanguageClient):
    open_doc(client, "def fo\n")
    await ready_inline(client, 0, 6)
    stats = await client.protocol.send_request_async("specLsp/stats", None)
    for key in (
        "acceptance_rate",
        "drafted",
        "accepted",
        "draft_length_histogram",
        "target_passes",
        "tokens_per_second",
        "prompt_tokens_evaluated",
        "cache_hits",
        "latency_ms_p50",
        "latency_ms_p95",
        "models",
    ):
        assert hasattr(stats, key), key
    assert list(stats.models) == ["fake-corpus"]
    assert stats.server_requests.served >= 1
