"""The remote engine against llama.cpp's own llama-server (built by `make llama-server`) with the
pulled Qwen2.5-Coder, through the LSP over stdio: what a llama.vim user's server does for us.

Not in `make test` (the build takes 10-15 minutes): `make llama-server-e2e` runs these, with
SPEC_LSP_LLAMA_SERVER naming the binary; without it they are skipped.

/infill detected and used (its timings in the stats), typed-through answers without a server
call (its metrics say no token was generated), cancellation ending the server's generation,
the context block reaching the server as input_extra, the fault cases (down at start, killed
mid-answer, back: one message per outage), the server's n-gram speculation reported, and the
confidence gate reading the server's token probabilities.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import (
    edit,
    inline,
    open_doc,
    send_inline,
    server_config,
    settled,
    stats,
)
from tests.e2e.remote_servers import LlamaCppServer, free_port, llama_server_binary
from tests.e2e.test_context import MAIN, MAIN_URI, SHAPES, SHAPES_URI, block
from tests.e2e.test_remote import (
    CURSOR,
    LIST,
    LIST_URI,
    TEXT,
    fresh,
    message_count,
    recovered,
    served,
    until,
)
from tests.e2e.test_remote import connect as remote_connect

BINARY = llama_server_binary()
# a multi-line answer that goes on (a list of functions), from a prompt Qwen on 2 cores
# evaluates in about 10 s (the server sends nothing meanwhile: remoteTimeoutMs covers it)
LONG = {
    "precompute": False,
    "multiline": "always",
    "maxTokens": 400,
    "prefixTokens": 300,
    "remoteTimeoutMs": 60_000,
}
pytestmark = [
    pytest.mark.real,
    pytest.mark.timeout(600),
    pytest.mark.skipif(BINARY is None, reason="llama-server not built: make llama-server-e2e"),
]


async def connect(client: LanguageClient, url: str, **options: object) -> None:
    """The remote engine on llama-server, the confidence gate off unless a test turns it on
    (a real model's Automatic answer may be unsure: these tests are about what it answers)."""
    await remote_connect(client, url, **{"gateThreshold": 0, **options})


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def llama(qwen_path) -> Iterator[LlamaCppServer]:
    assert BINARY is not None
    server = LlamaCppServer(BINARY, qwen_path).start(timeout_s=120)
    yield server
    server.kill()


@pytest.mark.parametrize("api", ["infill", "completions"])
async def test_answers_and_typed_through_answers_without_a_server_call(client, llama, api):
    await connect(
        client, llama.url, precompute=False, maxTokens=16, answerBudgetMs=0, remoteApi=api
    )
    open_doc(client, TEXT)
    first = (await served(client)).items[0]
    assert first.insert_text.strip() and first.range.start == lsp.Position(*CURSOR)
    data = await stats(client)
    assert data.remote.server == "llama-server" and data.remote.endpoint == api
    assert data.remote.state == "ok" and data.cache_hits.remote == 1
    timings = data.server_timings
    assert timings.prompt_n > 0 and timings.predicted_n > 0
    assert data.prompt_tokens_evaluated == timings.prompt_n
    assert data.prompt_tokens == timings.prompt_n + timings.cache_n
    await until(lambda: _idle(llama), 20)  # (it decodes a token more before it sees us go)
    decodes = llama.metric("n_decode_total")
    typed = first.insert_text[:1]
    edit(client, CURSOR, CURSOR, typed, version=2)
    again = (await served(client, CURSOR[0], CURSOR[1] + 1)).items[0]
    assert again.insert_text == first.insert_text
    data = await stats(client)
    assert data.cache_hits.typed_through == 1 and data.cache_hits.remote == 1
    assert llama.metric("n_decode_total") == decodes  # the server was not asked
    assert client.messages == []


async def test_a_cancelled_request_ends_the_servers_generation(client, llama):
    """Cancelled while the server generates: it stops within a second or two. (Cancelled while
    it evaluates the prompt, it stops only after the batch it is evaluating: up to
    `--batch-size` tokens.)"""
    await connect(client, llama.url, **LONG)
    open_doc(client, LIST, uri=LIST_URI)
    task = send_inline(client, "long", LIST.count("\n"), 5, uri=LIST_URI)
    await until(lambda: _generating(llama), 120)  # (once the prompt is evaluated)
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="long"))
    with pytest.raises(Exception, match="(?i)cancel"):
        await asyncio.wait_for(task, 30)
    await until(lambda: _idle(llama), 8)  # the server stopped: it saw the client go
    decodes = llama.metric("n_decode_total")
    await asyncio.sleep(1.0)
    assert llama.metric("n_decode_total") == decodes  # nothing more generated
    assert (await stats(client)).cancelled >= 1


async def test_an_edited_place_is_prewarmed_while_the_person_reads(client, llama):
    """After an edit, while the person reads, the server evaluates the place's prompt into its
    cache: the request there evaluates a few tokens, not the whole prompt."""
    await connect(client, llama.url, **{**LONG, "maxTokens": 16})
    uri = "file:///work/prewarmed.py"
    open_doc(client, LIST, uri=uri)
    line = LIST.count("\n")
    edit(client, (line, 5), (line, 5), "1", version=2, uri=uri)  # typed: "def f1"

    async def prewarmed():
        return (await stats(client)).prewarm.prompts >= 1

    await until(prewarmed, 120)
    await until(lambda: _idle(llama), 30)
    await inline(client, line, 6, uri=uri)
    timings = (await until(lambda: finished(client), 60)).server_timings
    assert timings.cache_n > 250 and timings.prompt_n <= 8, timings


async def test_a_tab_reaches_the_server_as_input_extra(client, llama):
    """The block of the other tab's definitions goes to /infill (chosen while idle after the
    first ask): the server's prompt grows by it."""
    await connect(
        client, llama.url, precompute=False, maxTokens=16, cache=False, remoteApi="infill"
    )
    open_doc(client, SHAPES, uri=SHAPES_URI)
    open_doc(client, MAIN, uri=MAIN_URI)
    await inline(client, 4, 11, uri=MAIN_URI)
    await settled(client)  # (an early answer's stream goes on: its figures come at its end)
    alone = (await stats(client)).prompt_tokens
    parts = await block(client, lambda parts: parts, timeout=60)
    assert any(p["reason"] == "definition:polygon_area" for p in parts), parts
    edit(client, (4, 11), (4, 11), "p", version=2, uri=MAIN_URI)
    await inline(client, 4, 12, uri=MAIN_URI)
    await settled(client, timeout=120)  # this request's own figures, not the first one's
    data = await stats(client)
    assert data.context.requests_with_context == 1
    timings = data.server_timings
    assert timings.prompt_n + timings.cache_n > alone + 15  # (the block: ~25 tokens)


async def test_down_at_start_then_up_then_killed_mid_answer_then_back(client, qwen_path):
    assert BINARY is not None
    server = LlamaCppServer(BINARY, qwen_path, free_port())
    try:
        await connect(client, server.url, remoteConnectTimeoutMs=500, **LONG)
        await message_count(client, 1)
        assert server.url in client.messages[0].message
        assert await fresh(client) is None  # the editor keeps working: empty answers
        server.start(timeout_s=120)
        await until(lambda: fresh(client), 60)
        await until(lambda: recovered(client), 60)
        assert len(client.messages) == 1
        open_doc(client, LIST, uri=LIST_URI)
        task = send_inline(client, "long", LIST.count("\n"), 5, uri=LIST_URI)
        await until(lambda: _generating(server), 120)
        server.kill()
        assert not (await asyncio.wait_for(task, 30)).items  # broken off: empty, not partial
        await message_count(client, 2)  # one message per outage
        server.start(timeout_s=120)
        await until(lambda: fresh(client), 60)
        assert len(client.messages) == 2 and (await stats(client)).remote.outages == 2
    finally:
        server.kill()


HANDLER = (
    "def handle(request):\n"
    "    user = request.user\n"
    "    session = request.session\n"
    "    session['last_path'] = request.path\n"
    "    session['last_user'] = user.username\n"
    "    session['last_agent'] = request.headers.get('User-Agent')\n"
    "    session['last_address'] = request.META.get('REMOTE_ADDR')\n"
    "    log.info('handled %s for %s', request.path, user.username)\n"
    "    return render(request, 'page.html', {'user': user})\n"
)
# code that repeats what is above it: a second handler, begun
REPEATS = HANDLER + "\n\nclass A:\n    pass\n\n\n" + "".join(HANDLER.splitlines(True)[:2]) + "    "


async def test_the_servers_ngram_speculation_is_reported(client, qwen_path):
    """llama-server drafting by n-gram lookup (--spec-type ngram-mod): code that repeats the
    text above it is drafted and accepted; its counts reach the stats as the engine's own."""
    assert BINARY is not None
    server = LlamaCppServer(BINARY, qwen_path, extra=("--spec-type", "ngram-mod"))
    server.start(timeout_s=120)
    try:
        await connect(client, server.url, **{**LONG, "maxTokens": 48})
        open_doc(client, REPEATS, uri="file:///work/views.py")
        line = REPEATS.count("\n")
        result = await send_inline(client, "views", line, 4, uri="file:///work/views.py")
        assert "session" in result.items[0].insert_text  # (its first line)

        data = await until(lambda: finished(client), 60)
        timings = data.server_timings
        assert timings.draft_n > 0 and data.drafted == timings.draft_n, (timings, data)
        assert data.accepted == timings.draft_n_accepted > 0
        assert 0 < data.acceptance_rate <= 1
    finally:
        server.kill()


async def finished(client: LanguageClient):
    """The stats once no generation goes on (an answer's rest goes on into the cache)."""
    data = await stats(client)
    return data if data.requests and not data.pending.generations else None


@pytest.mark.parametrize("api", ["infill", "completions"])
async def test_the_gate_reads_the_servers_token_probabilities(client, llama, api):
    """With the gate at 1 (no answer is that sure) an Automatic answer is hidden only if the
    server's token probabilities came back and were read (an answer without them is shown):
    llama-server's `n_probs` at /infill, `logprobs` at /v1/completions. (At 0, the other
    tests here, it is shown.)"""
    settings = {"precompute": False, "maxTokens": 16, "answerBudgetMs": 0, "remoteApi": api}
    await connect(client, llama.url, gateThreshold=1.0, **settings)
    open_doc(client, TEXT)
    assert not (await inline(client, *CURSOR)).items
    data = await stats(client)
    assert data.acceptance.hidden == 1 and data.remote.endpoint == api
    assert data.cache_hits.remote == 1  # (answered by the server, then hidden)


async def _busy(server: LlamaCppServer) -> bool:
    return await asyncio.to_thread(server.busy)


async def _generating(server: LlamaCppServer) -> bool:
    return await asyncio.to_thread(server.generating)


async def _idle(server: LlamaCppServer) -> bool:
    return not await asyncio.to_thread(server.busy)
