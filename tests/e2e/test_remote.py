"""The remote engine through the LSP over stdio: the real server started with `engine: remote`
against `python -m llama_cpp.server` (SmolLM2) or a stub on loopback that misbehaves.

Inline completions from the server, typed-through answers without a server call, cancellation
and superseding closing the stream, every fault told once (with the URL) while the editor gets
empty answers, and recovery by itself when the server is back.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import (
    INVOKED,
    edit,
    gate_fitted,
    inline,
    open_doc,
    params,
    send_inline,
    server_config,
    start,
    stats,
    wait_ready,
)
from tests.e2e.remote_servers import LlamaServer, Stub, free_port

TEXT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    "
CURSOR = (9, 4)
# a long prompt (about 1,700 tokens) and a long answer: a request that runs for a while
LIST = "".join(f"def f{i}(x):\n    return x * {i} + {i * i}\n\n\n" for i in range(120)) + "def f"
LIST_URI = "file:///work/many.py"


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def stub():
    server = Stub()
    yield server
    server.close()


@pytest.fixture(scope="module")
def llama(smollm2_path):
    server = LlamaServer(smollm2_path).start()
    yield server
    server.kill()


async def connect(client: LanguageClient, url: str, **options: Any) -> None:
    await start(client, {"engine": "remote", "remoteUrl": url, **options})
    await wait_ready(client)


async def until(check: Any, timeout: float) -> Any:
    """Poll the coroutine function `check` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {timeout} s")


async def message_count(client: LanguageClient, n: int, timeout: float = 30.0) -> None:
    await until(lambda: _at_least(client, n), timeout)
    await asyncio.sleep(0.3)  # and no more after it
    assert len(client.messages) == n, [m.message for m in client.messages]


async def recovered(client: LanguageClient) -> bool:
    return (await stats(client)).remote.consecutive_failures == 0


async def _at_least(client: LanguageClient, n: int) -> bool:
    return len(client.messages) >= n


async def served(client: LanguageClient, line: int = CURSOR[0], character: int = CURSOR[1]):
    result = await inline(client, line, character)
    return result if result and result.items else None


FRESH = iter(range(1, 10_000))


async def fresh(client: LanguageClient):
    """A completion in a document never completed before (no cache can answer it)."""
    n = next(FRESH)
    uri = f"file:///work/fresh{n}.py"
    open_doc(client, TEXT.replace("mul", f"mul{n}"), uri=uri)
    result = await inline(client, *CURSOR, uri=uri)
    return result if result and result.items else None


# -- the real server (llama_cpp.server, SmolLM2) --------------------------------------------------
@pytest.mark.real
async def test_completions_and_typed_through_answers_from_the_server(client, llama):
    # the whole answer at once (answerBudgetMs 0): typing into it is then answered from cache
    await connect(client, llama.url, precompute=False, maxTokens=16, answerBudgetMs=0)
    open_doc(client, TEXT)
    first = (await served(client)).items[0]
    assert first.insert_text.strip() and first.range.start == lsp.Position(*CURSOR)
    data = await stats(client)
    assert data.engine == "remote" and data.remote.state == "ok"
    assert "SmolLM2" in data.remote.model and data.remote.url == llama.url
    assert data.cache_hits.remote == 1 and data.first_token_ms_p50 is not None
    # type the suggestion's first character: answered from the cache, no server call
    typed = first.insert_text[:1]
    edit(client, CURSOR, CURSOR, typed, version=2)
    again = (await served(client, CURSOR[0], CURSOR[1] + 1)).items[0]
    assert again.insert_text == first.insert_text
    assert again.range.start == lsp.Position(*CURSOR)  # re-covers the typed character
    data = await stats(client)
    assert data.cache_hits.remote == 1 and data.cache_hits.typed_through == 1
    assert client.messages == []


@pytest.mark.real
async def test_down_at_start_then_up_then_killed_mid_answer_then_back(client, smollm2_path):
    server = LlamaServer(smollm2_path, free_port())
    try:
        await connect(
            client,
            server.url,
            precompute=False,
            remoteConnectTimeoutMs=500,
            multiline="always",
            maxTokens=400,
            prefixTokens=1700,
        )
        await message_count(client, 1)
        assert server.url in client.messages[0].message
        assert "start the server" in client.messages[0].message
        assert await fresh(client) is None  # the editor keeps working: empty answers
        server.start()
        await until(lambda: fresh(client), 20)  # recovered by itself (bounded backoff)
        await until(lambda: recovered(client), 20)  # (once an answer has ended: a stream that
        assert len(client.messages) == 1  # breaks off before that is the same outage)
        # killed while answering a long multi-line request (a list that goes on), then back
        open_doc(client, LIST, uri=LIST_URI)
        task = send_inline(client, "long", LIST.count("\n"), 5, uri=LIST_URI)
        await asyncio.sleep(0.3)
        server.kill()
        assert not (await asyncio.wait_for(task, 10)).items  # broken off: empty, not partial
        assert await fresh(client) is None
        await message_count(client, 2)  # one message per outage
        assert server.url in client.messages[1].message
        server.start()
        await until(lambda: fresh(client), 20)
        assert len(client.messages) == 2
        assert (await stats(client)).remote.outages == 2
    finally:
        server.kill()


# -- cancellation closes the stream (a slow stub shows when the client goes) ---------------------
async def test_superseded_and_cancelled_requests_close_their_streams(client, stub):
    stub.pieces, stub.delay_s = ["x"] * 1200, 0.05  # 60 s if nobody stops it (512 tokens: 25 s)
    await connect(client, stub.url, precompute=False, multiline="always", maxTokens=512)
    open_doc(client, "def f():\n    ")
    first = send_inline(client, "first", 1, 4)
    await until(lambda: _started(stub, 1), 20)
    edit(client, (1, 4), (1, 4), "y", version=2)  # typed what the first is not writing
    second = send_inline(client, "second", 1, 5)  # so it supersedes the first
    assert not (await asyncio.wait_for(first, 20)).items
    await until(lambda: _closed(stub, 1), 10)
    await until(lambda: _started(stub, 2), 20)
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="second"))
    with pytest.raises(Exception, match="(?i)cancel"):
        await asyncio.wait_for(second, 20)
    await until(lambda: _closed(stub, 2), 10)
    assert all(sent < 160 for sent in stub.closed_early)  # closed within ~8 s of 25
    data = await stats(client)
    assert data.pending.generations == 0 and data.cancelled >= 1


async def _started(stub: Stub, n: int) -> bool:
    return len(stub.completions) >= n


async def _closed(stub: Stub, n: int) -> bool:
    return len(stub.closed_early) >= n


# -- faults from a stub, each told once, then recovery ----------------------------------------------
@pytest.mark.parametrize(
    ("mode", "options", "words"),
    [
        ("status", {}, ["HTTP 500"]),
        ("garbage", {}, ["not OpenAI-compatible"]),
        ("slow", {"remoteTimeoutMs": 300}, ["sent nothing", "remoteTimeoutMs"]),
        ("die", {}, ["broke off"]),
        ("model", {"remoteModel": "team-coder"}, ["team-coder", "stub-coder", "remoteModel"]),
    ],
)
async def test_each_fault_is_one_message_with_the_url_then_recovery(
    client, stub, mode, options, words
):
    stub.mode, stub.first_byte_s = mode, 1.0
    stub.pieces = ["a", "b", "c", "d"]
    await connect(client, stub.url, precompute=False, **options)
    open_doc(client, "def f():\n    ")
    for _ in range(3):
        assert await served(client, 1, 4) is None
        await asyncio.sleep(0.3)
    await message_count(client, 1)
    message = client.messages[0]
    assert message.type == lsp.MessageType.Warning and stub.url in message.message
    assert all(w in message.message for w in words), message.message
    stub.mode, stub.pieces = "ok", ["return 1", "\n"]
    stub.models.append("team-coder")
    result = await until(lambda: served(client, 1, 4), 15)
    assert result.items[0].insert_text == "return 1"
    assert len(client.messages) == 1 and (await stats(client)).remote.state == "ok"


# -- the confidence gate on a server's answers (its token log probabilities) ----------------------
@pytest.mark.parametrize("native", [False, True])
async def test_the_gate_hides_an_unsure_automatic_answer_from_the_server(client, stub, native):
    """With the gate on, the server is asked for its tokens' log probabilities (`logprobs`, or
    llama-server's `n_probs` at /infill): an Automatic answer it was unsure of is hidden, a sure
    one shown, an Invoked one always answered."""
    stub.llama_server = native
    stub.pieces = ["total", " = a + b", "\n"]
    api = {"remoteApi": "infill"} if native else {}
    gate_fitted(url=stub.url)
    await connect(client, stub.url, precompute=False, gateThreshold=0.4, **api)
    open_doc(client, "def f(a, b):\n    ")
    asked = stub.infills if native else stub.completions
    stub.logprob = -6.0  # (unsure of every token)
    assert not (await inline(client, 1, 4)).items
    assert asked[-1].get("n_probs" if native else "logprobs") == 1
    assert (await stats(client)).acceptance.hidden == 1
    other = "file:///work/other.py"
    open_doc(client, "def g(a, b):\n    ", uri=other)
    invoked = await client.text_document_inline_completion_async(
        params(1, 4, uri=other, kind=INVOKED)
    )
    assert invoked.items
    stub.logprob = -0.01  # (sure)
    sure = "file:///work/sure.py"
    open_doc(client, "def h(a, b):\n    ", uri=sure)
    assert (await inline(client, 1, 4, uri=sure)).items
    assert (await stats(client)).acceptance.hidden == 1  # (no more hidden)


async def test_without_the_gate_the_server_is_not_asked_for_log_probabilities(client, stub):
    await connect(client, stub.url, precompute=False, gateThreshold=0)
    open_doc(client, "def f(a, b):\n    ")
    assert (await inline(client, 1, 4)).items
    assert "logprobs" not in stub.completions[-1] and "n_probs" not in stub.completions[-1]


async def test_the_gate_is_off_for_a_server_it_was_not_fitted_on(client, stub):
    """No weights fitted on this server's model: every answer shown, no log probabilities
    asked, whatever gateThreshold says; the stats say why."""
    await connect(client, stub.url, precompute=False, gateThreshold=0.9)
    stub.logprob = -6.0  # (unsure of every token: the shipped weights would hide it)
    open_doc(client, "def f(a, b):\n    ")
    assert (await inline(client, 1, 4)).items
    assert "logprobs" not in stub.completions[-1]
    data = await stats(client)
    assert data.acceptance.hidden == 0 and not data.gate.on and data.gate.threshold == 0
    assert "bench gate --fit" in data.gate.why
