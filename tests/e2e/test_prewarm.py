"""Prewarm through the real server: when the person pauses after an edit, the prompt at the
edited place is evaluated ahead, and the request that follows finds it in the KV cache."""

from __future__ import annotations

import asyncio

import pytest_lsp
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


async def test_a_pause_after_an_edit_evaluates_the_prompt_there_ahead(client):
    open_doc(client, TEXT + "def fo", uri=URI)
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
