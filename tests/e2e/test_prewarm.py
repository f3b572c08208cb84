"""Prewarm through the real server: when the person pauses after an edit, the prompt at the
edited place is evaluated ahead, and the request that follows finds it in the KV cache."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import edit, inline, open_doc, server_config, start, stats, wait_ready

URI = "file:///work/warm.py"
TEXT = "".join(f"def f_{i}(x):\n    return x + {i}\n\n" for i in range(40))


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_DELAY_MS="5"))
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"precompute": False})
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def evaluated(client: LanguageClient) -> int:
    return (await stats(client)).prompt_tokens_evaluated


def send_whole(client: LanguageClient, text: str, *, version: int) -> None:
    """A whole-document change, as clients that sync the full text send every edit."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=URI, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


@pytest.mark.parametrize("whole", [False, True], ids=["incremental", "whole_document"])
async def test_a_pause_after_an_edit_evaluates_the_prompt_there_ahead(client, whole):
    open_doc(client, TEXT + "def fo", uri=URI)
    if whole:
        send_whole(client, TEXT + "def foo(", version=2)
    else:
        edit(client, (120, 6), (120, 6), "o(", version=2, uri=URI)
    for _ in range(500):
        if (await stats(client)).prewarm.prompts == 1:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the edited place's prompt was not evaluated ahead")
    assert (await stats(client)).prewarm.tokens > 100
    before = await evaluated(client)
    assert (await inline(client, 120, 8, uri=URI)).items
    assert await evaluated(client) - before <= 2  # the prompt came from the KV cache


async def test_typing_on_without_a_pause_evaluates_nothing_ahead(client):
    open_doc(client, TEXT + "def fo", uri=URI)
    for i, ch in enumerate("o(x"):  # a request after each key, as editors send them
        edit(client, (120, 6 + i), (120, 6 + i), ch, version=2 + i, uri=URI)
        await inline(client, 120, 7 + i, uri=URI)
    await asyncio.sleep(0.6)  # the last answer came before the pause began: nothing to warm
    data = await stats(client)
    assert data.prewarm.prompts == 0


async def test_a_whole_document_change_that_changes_nothing_evaluates_nothing_ahead(client):
    open_doc(client, TEXT + "def fo", uri=URI)
    send_whole(client, TEXT + "def fo", version=2)
    await asyncio.sleep(0.6)
    assert (await stats(client)).prewarm.prompts == 0
