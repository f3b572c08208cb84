"""What an editor sees, over stdio with the fake backend: completions, ranges, positions.

One server serves this whole module (each test uses its own documents), which keeps it fast.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import (
    AUTOMATIC,
    INVOKED,
    edit,
    inline,
    open_doc,
    ready_inline,
    server_config,
    start,
    stats,
    wait_ready,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest_lsp.fixture(config=server_config(), scope="module")
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_the_server_advertises_inline_completion(client: LanguageClient):
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    assert caps.text_document_sync.change == lsp.TextDocumentSyncKind.Incremental
    assert caps.position_encoding in (None, lsp.PositionEncodingKind.Utf16)


@pytest.mark.parametrize("kind", [AUTOMATIC, INVOKED])
async def test_both_trigger_kinds_get_an_item_with_an_explicit_range(client, kind):
    uri = f"file:///work/trigger{kind.value}.py"
    open_doc(client, "import os\n\ndef fo\n", uri=uri)
    item = (await inline(client, 2, 6, uri=uri, kind=kind)).items[0]
    assert item.insert_text.startswith("o(x):")
    assert item.range == lsp.Range(lsp.Position(2, 6), lsp.Position(2, 6))


async def test_utf16_positions_after_emoji_and_cjk(client: LanguageClient):
    uri = "file:///work/utf16.py"
    line = "s = '😀漢字🎉'; def f"
    open_doc(client, f"# 🐍🐍 header\n{line}\n", uri=uri)
    end = utf16(line)  # 2 units per emoji, 1 per CJK character
    edit(client, (1, end), (1, end), "o", version=2, uri=uri)
    first = (await inline(client, 1, end + 1, uri=uri)).items[0]
    assert first.insert_text.startswith("o(x):")
    assert first.range.start == lsp.Position(1, end + 1)
    edit(client, (1, end + 1), (1, end + 1), "o(", version=3, uri=uri)
    second = (await inline(client, 1, end + 3, uri=uri)).items[0]
    assert second.range == lsp.Range(lsp.Position(1, end + 1), lsp.Position(1, end + 3))
    assert second.insert_text == first.insert_text  # typed through: the same suggestion


async def test_crlf_document_and_an_incremental_edit_in_it(client: LanguageClient):
    uri = "file:///work/crlf.py"
    open_doc(client, "import os\r\n\r\ndef fo\r\n", uri=uri)
    item = (await inline(client, 2, 6, uri=uri)).items[0]
    assert item.insert_text.startswith("o(x):") and "\r" not in item.insert_text
    edit(client, (0, 9), (0, 9), "\r\nimport sys", version=2, uri=uri)  # line 2 moves to 3
    item = (await inline(client, 3, 6, uri=uri)).items[0]
    assert item.insert_text.startswith("o(x):")
    assert item.range.start == lsp.Position(3, 6)


async def test_typing_a_newline_into_a_suggestion_keeps_the_rest_on_one_line(client):
    """Accept `o(x):`, press Enter: the next line's suggestion (computed ahead while idle) is
    typed through by the newline and indentation, and its range stays on the cursor's line."""
    uri = "file:///work/enter.py"
    open_doc(client, "def fo\n", uri=uri)
    before = getattr((await stats(client)).cache_hits, "precompute", 0)
    assert (await inline(client, 0, 6, uri=uri)).items[0].insert_text == "o(x):"
    for _ in range(1500):  # the suggestion after the shown one is computed in the background
        if getattr((await stats(client)).cache_hits, "precompute", 0) > before:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the next line's suggestion was not computed ahead within 30 s")
    edit(client, (0, 6), (0, 6), "o(x):", version=2, uri=uri)
    edit(client, (0, 11), (0, 11), "\n    ", version=3, uri=uri)
    item = (await inline(client, 1, 4, uri=uri)).items[0]
    assert item.range == lsp.Range(lsp.Position(1, 0), lsp.Position(1, 4))
    assert item.insert_text == "    return x * 2"


async def test_lines_break_only_where_lsp_says(client: LanguageClient):
    """A form feed, U+2028 and U+0085 are not line ends in LSP (Python's splitlines says so)."""
    uri = "file:///work/formfeed.py"
    open_doc(client, "import os\n\x0c\nx = 'a\u2028b\x85c'\ndef f\n", uri=uri)
    edit(client, (3, 5), (3, 5), "o", version=2, uri=uri)
    first = (await inline(client, 3, 6, uri=uri)).items[0]
    assert first.insert_text.startswith("o(x):")
    edit(client, (3, 6), (3, 6), "o(", version=3, uri=uri)
    second = (await inline(client, 3, 8, uri=uri)).items[0]
    assert second.range == lsp.Range(lsp.Position(3, 6), lsp.Position(3, 8))


async def test_percent_encoded_uris(client: LanguageClient):
    uri = "file:///work/my%20project/caf%C3%A9.py"
    open_doc(client, "def fo\n", uri=uri)
    assert (await inline(client, 0, 6, uri=uri)).items[0].insert_text.startswith("o(x):")


async def test_empty_result_is_an_empty_list(client: LanguageClient):
    open_doc(client, "zzzz qqqq", uri="file:///work/nothing.py")
    result = await inline(client, 0, 9, uri="file:///work/nothing.py")
    assert result is not None and len(result.items) == 0


async def test_unknown_documents_and_positions_past_the_end(client: LanguageClient):
    assert len((await inline(client, 0, 0, uri="file:///never/opened.py")).items) == 0
    uri = "file:///work/past.py"
    open_doc(client, "def fo", uri=uri)  # no final newline
    item = (await inline(client, 0, 500, uri=uri)).items[0]
    assert item.insert_text.startswith("o(x):")  # the end of the line, as LSP says
    assert item.range.start == lsp.Position(0, 6)
    item = (await inline(client, 99, 0, uri=uri)).items[0]  # the end of the text
    assert item.range.start == lsp.Position(0, 6)


async def test_completion_fallback_is_one_item_with_a_text_edit(client: LanguageClient):
    uri = "file:///work/fallback.py"
    open_doc(client, "def fo\n", uri=uri)
    result = await client.text_document_completion_async(
        lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(0, 6)
        )
    )
    assert result.is_incomplete and len(result.items) == 1
    item = result.items[0]
    assert item.text_edit.new_text.startswith("o(x):")
    assert item.text_edit.range == lsp.Range(lsp.Position(0, 6), lsp.Position(0, 6))
    assert item.label == item.text_edit.new_text.splitlines()[0]


async def test_selected_completion_info_completes_after_the_selected_item(client):
    uri = "file:///work/selected.py"
    open_doc(client, "def gr\n", uri=uri)
    chosen = lsp.Range(lsp.Position(0, 4), lsp.Position(0, 6))
    selected = lsp.SelectedCompletionInfo(range=chosen, text="greet")
    item = (await inline(client, 0, 6, uri=uri, selected=selected)).items[0]
    assert item.range == chosen  # covers what the selected item replaces
    assert item.insert_text.startswith("greet(name):")
    elsewhere = lsp.SelectedCompletionInfo(
        range=lsp.Range(lsp.Position(1, 0), lsp.Position(1, 2)), text="zz"
    )
    item = (await inline(client, 0, 6, uri=uri, selected=elsewhere)).items[0]
    assert item.range.start == lsp.Position(0, 6)  # a selection off the cursor is ignored


async def test_stats_request(client: LanguageClient):
    await ready_inline(client, 0, 6, uri="file:///work/trigger1.py")
    numbers = await stats(client)
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
        "server_requests",
        "ready",
        "load_error",
    ):
        assert hasattr(numbers, key), key
    assert list(numbers.models) == ["fake-corpus"]
    assert numbers.ready and numbers.load_error is None
    assert numbers.server_requests.served >= 1
    assert numbers.latency_ms_p50 <= numbers.latency_ms_p95
