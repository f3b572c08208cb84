"""The file prefix through the real server: after an answer, while the person reads, the file
above and below the place is evaluated; asking at another place then evaluates only what follows
the shared text, and a request in the middle of that work is answered at once."""

from __future__ import annotations

import asyncio
import time

import pytest_lsp
from pytest_lsp import LanguageClient

from spec_lsp.engine.local.file_prefix import OPENED_TOKENS
from tests.e2e.conftest import edit, inline, open_doc, server_config, start, stats, wait_ready
from tests.e2e.test_robustness import poll

URI = "file:///work/places.py"
LINES = [f"def function_{i}(x):\n    return x * {i} + len('{'ab' * (i % 7)}')\n" for i in range(90)]
TEXT = "".join(LINES)
# windows as long as the defaults' in a real tokenizer's tokens (the fake model: a byte a token)
SETTINGS = {"precompute": False, "prefixTokens": 1200, "suffixTokens": 300, "multiline": "never"}
SETTINGS["contextTokens"] = 640  # (the context block on: 0 by default)


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_DELAY_MS="10"))
async def client(lsp_client: LanguageClient):
    await start(lsp_client, SETTINGS)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def grown(client: LanguageClient, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        memory = (await stats(client)).memory.file_prefix
        if memory.tokens and not memory.pending:
            return memory
        assert time.monotonic() < deadline, f"the file prefix did not grow: {memory}"
        await asyncio.sleep(0.05)


async def test_another_place_evaluates_only_what_follows_the_file_prefix(client):
    open_doc(client, TEXT, uri=URI)
    assert (await inline(client, 101, 4, uri=URI)).items
    first = await stats(client)
    memory = await grown(client)
    assert memory.tokens > 2_000 and memory.bytes > 0
    assert (await stats(client)).file_prefix.evaluated >= memory.tokens - 1_500
    before = (await stats(client)).prompt_tokens_evaluated
    assert (await inline(client, 131, 4, uri=URI)).items
    after = await stats(client)
    assert after.file_prefix.prompts == 1
    assert after.prompt_tokens_evaluated - before < first.prompt_tokens_evaluated / 3


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_DELAY_MS="300"))
async def slow_client(lsp_client: LanguageClient):
    await start(lsp_client, SETTINGS)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_a_request_while_it_grows_does_not_wait_for_it(slow_client):
    """The growth is stopped inside the model call it is in (a 128-token chunk, here 300 ms),
    so a request does not wait for the rest of the chunk, let alone of the growth."""
    client = slow_client
    open_doc(client, TEXT, uri=URI)
    assert (await inline(client, 101, 4, uri=URI)).items
    await poll(client, lambda s: s.idle_work_running)  # idle: the growth has begun
    await asyncio.sleep(0.1)  # (inside a model call of 300 ms, most likely)
    assert (await stats(client)).memory.file_prefix.pending  # (~24 model calls)
    assert (await inline(client, 20, 4, uri=URI)).items
    after = await stats(client)
    # from queued to the worker: not behind the chunk (300 ms, 150 on average)
    assert after.queue_ms.p95 < 150
    assert after.memory.file_prefix.pending  # what was grown is kept; the rest grows later


async def test_an_opened_file_grows_its_prefix_before_the_first_request(client):
    """Opened and read, not asked yet: the file from its first line is evaluated while idle,
    so the first ask evaluates only what follows the shared text."""
    open_doc(client, TEXT, uri=URI)
    memory = await grown(client)  # no request yet
    # (the file's first OPENED_TOKENS while no place is known)
    assert memory.anchor_line == 0 and OPENED_TOKENS <= memory.tokens < 2_000
    assert (await stats(client)).requests == 0
    assert (await inline(client, 21, 4, uri=URI)).items
    first = await stats(client)
    assert first.file_prefix.prompts == 1  # laid out from the file prefix
    assert first.prompt_tokens_evaluated < min(600, first.prompt_tokens / 2)  # its tail
    # a place known: the rest grows while idle
    await poll(client, lambda s: s.memory.file_prefix.tokens > 2_000, timeout=30.0)


async def test_a_file_opened_while_another_holds_the_prefix_takes_it(client):
    """The file opened last is the one the person reads: it takes the file prefix (its text
    from the first line grows while idle), before any request there."""
    open_doc(client, TEXT, uri=URI)
    assert (await inline(client, 101, 4, uri=URI)).items
    await grown(client)
    before = (await stats(client)).file_prefix
    open_doc(client, TEXT.replace("function_", "other_"), uri="file:///work/other.py")
    held = await poll(
        client,
        lambda s: (
            s.file_prefix.focused == before.focused + 1
            and s.memory.file_prefix.anchor_line == 0
            and s.memory.file_prefix.tokens >= OPENED_TOKENS
            and not s.memory.file_prefix.pending
        ),
        timeout=30.0,
    )
    assert held.requests == 1  # (no request there)


async def test_a_document_brought_into_view_takes_the_file_prefix(client):
    """specLsp/didFocus (a tab chosen in VS Code, a buffer entered in Neovim): an open
    document, neither opened nor edited again, takes the file prefix; unknown documents and
    malformed params are ignored."""
    open_doc(client, TEXT, uri=URI)
    open_doc(client, TEXT.replace("function_", "other_"), uri="file:///work/other.py")
    before = (
        await poll(
            client, lambda s: s.file_prefix.focused == 2 and not s.memory.file_prefix.pending
        )
    ).file_prefix
    client.protocol.notify("specLsp/didFocus", {"textDocument": {"uri": "file:///nowhere.py"}})
    client.protocol.notify("specLsp/didFocus", {"textDocument": 3})
    client.protocol.notify("specLsp/didFocus", {"textDocument": {"uri": URI}})
    after = await poll(client, lambda s: s.file_prefix.focused == before.focused + 1)
    assert after.memory.file_prefix.anchor_line == 0


async def test_a_cursor_told_with_the_focus_is_evaluated_before_the_first_ask(client):
    """specLsp/didFocus with the cursor (a click in VS Code, CursorHold in Neovim), far below
    what an opened file grows: the prompt there is evaluated while the person reads, so the
    first ask there evaluates only its tail. The focus is not taken again for a cursor moved
    within the document; malformed positions are ignored."""
    open_doc(client, TEXT, uri=URI)
    before = await poll(client, lambda s: s.file_prefix.focused == 1 and s.quiet)
    malformed = ("x", {"line": -1, "character": 0}, {"line": 131}, {"line": 1.5})
    for position in (*malformed, {"line": 2**40, "character": 0}, {"line": True, "character": 0}):
        client.protocol.notify(
            "specLsp/didFocus", {"textDocument": {"uri": URI}, "position": position}
        )
    await asyncio.sleep(0.5)
    assert (await stats(client)).prewarm.prompts == 0
    where = {"line": 131, "character": 4}
    client.protocol.notify("specLsp/didFocus", {"textDocument": {"uri": URI}, "position": where})
    warmed = await poll(client, lambda s: s.prewarm.prompts == 1 and s.quiet)
    assert warmed.prewarm.tokens > 1_000  # (the window's 1,500 bytes, a token each)
    assert warmed.file_prefix.focused == before.file_prefix.focused
    assert (await inline(client, 131, 4, uri=URI)).items
    asked = await stats(client)
    assert asked.prompt_tokens_evaluated - warmed.prompt_tokens_evaluated < asked.prompt_tokens / 4


async def test_going_back_to_a_file_evaluates_nothing(client):
    """A -> B -> A: the second visit to A finds its block and text kept (the state pool)."""
    other = "file:///work/other.py"
    open_doc(client, TEXT, uri=URI)
    # (quiet: B's parse, once done, may choose its block again and evaluate it while idle)
    await poll(client, lambda s: s.file_prefix.focused == 1 and s.quiet)
    open_doc(client, TEXT.replace("function_", "other_"), uri=other)
    before = await poll(client, lambda s: s.file_prefix.focused == 2 and s.quiet)
    client.protocol.notify("specLsp/didFocus", {"textDocument": {"uri": URI}})
    after = await poll(client, lambda s: s.file_prefix.restored == 1 and s.quiet)
    assert after.file_prefix.evaluated == before.file_prefix.evaluated
    assert after.memory.file_prefix.tokens >= OPENED_TOKENS
    assert after.memory.saved_states.file_prefixes == 1  # (B's, kept in turn)


async def test_a_document_only_shown_takes_no_focus(client):
    """A diff's side (a `git:` URI) and, from a client that tells the focus, a file opened
    without it (VS Code's peek: didOpen, no editor in view) keep the focus where it is: no
    block or text of theirs is evaluated. A focus told before its didOpen is taken there."""
    open_doc(client, TEXT, uri=URI)
    before = await poll(
        client, lambda s: s.file_prefix.focused == 1 and not s.memory.file_prefix.pending
    )
    open_doc(client, TEXT.replace("function_", "old_"), uri="git:/work/places.py?ref=HEAD")
    client.protocol.notify("specLsp/didFocus", {"textDocument": {"uri": URI}})  # (in view)
    open_doc(client, TEXT.replace("function_", "peeked_"), uri="file:///work/peeked.py")
    await asyncio.sleep(0.5)
    after = await stats(client)
    assert after.file_prefix.focused == 1
    assert after.file_prefix.evaluated == before.file_prefix.evaluated  # (nothing of theirs)
    client.protocol.notify("specLsp/didFocus", {"textDocument": {"uri": "file:///work/new.py"}})
    open_doc(client, TEXT.replace("function_", "new_"), uri="file:///work/new.py")
    await poll(client, lambda s: s.file_prefix.focused == 2)


async def test_the_block_gets_in_between_keys_while_the_person_types(slow_client):
    """Typing from the moment a file opens (an edit every 150 ms; the model takes 300 ms a
    batch) does not stop the idle work evaluating its context block: the block is in the KV
    while the person still types. (Each edit used to stop it: never in, until a pause.)"""
    client = slow_client
    tab, main = "file:///work/shapes.py", "file:///work/main.py"
    text = "from shapes import polygon_area\n\n\ndef report(points):\n    area = "
    open_doc(client, "def polygon_area(points):\n    return 0.0\n", uri=tab)
    open_doc(client, text, uri=main)
    ready = None
    for key in range(40):
        edit(client, (4, 11 + key), (4, 11 + key), "x", version=key + 2, uri=main)
        await asyncio.sleep(0.15)
        memory = (await stats(client)).memory.file_prefix
        if memory.block_ready:
            ready = key
            break
    assert ready is not None, "the block never got in while typing"
