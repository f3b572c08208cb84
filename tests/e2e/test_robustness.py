"""Concurrency over stdio: newest request wins, `$/cancelRequest`, one answer per request, and
a generation in flight never blocks the other messages. Each model pass takes 150 ms here."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from tests.e2e.conftest import edit, inline, open_doc, send_inline, stats

OTHER = "file:///work/other.py"


async def poll(client: LanguageClient, ok, timeout: float = 30.0):
    """The stats once `ok(stats)` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not ok(numbers := await stats(client)):
        assert loop.time() < deadline, f"stats never satisfied the check: {numbers}"
        await asyncio.sleep(0.02)
    return numbers


async def test_a_newer_request_answers_the_older_one_empty_at_once(slow_client):
    client = slow_client
    open_doc(client, "def gre\n", uri=OTHER)
    older = send_inline(client, "older", 0, 7, uri=OTHER)
    await asyncio.sleep(0.2)  # generating now
    edit(client, (0, 7), (0, 7), "x", version=2, uri=OTHER)  # not what the older one writes
    newer = send_inline(client, "newer", 0, 8, uri=OTHER)
    done, _ = await asyncio.wait({older, newer}, return_when=asyncio.FIRST_COMPLETED, timeout=10)
    assert done == {older}  # superseded: answered before the newer one, without waiting
    assert len(older.result().items) == 0
    assert isinstance(await asyncio.wait_for(newer, 10), lsp.InlineCompletionList)
    numbers = await stats(client)
    assert numbers.server_requests.superseded == 1 and numbers.cancelled >= 1


async def test_cancel_request_answers_request_cancelled_and_stops_the_decode(slow_client):
    client = slow_client
    open_doc(client, "class Po\n", uri=OTHER)
    future = send_inline(client, "cancel-me", 0, 8, uri=OTHER)
    await asyncio.sleep(0.3)  # mid-generation
    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="cancel-me"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(future, timeout=5)
    await poll(client, lambda s: s.cancelled >= 1, timeout=2)  # the decode loop saw its token
    numbers = await stats(client)
    assert numbers.server_requests.cancelled == 1
    open_doc(client, "def fo\n")
    assert (await inline(client, 0, 6)).items  # and the server keeps serving


async def test_exactly_one_response_per_request_under_a_burst(slow_client):
    client = slow_client
    open_doc(client, "def fo\n")
    open_doc(client, "def ad\n", uri=OTHER)
    futures = [
        send_inline(client, f"burst-{i}", 0, 6, uri=OTHER if i % 2 else "file:///work/demo.py")
        for i in range(24)
    ]
    await asyncio.sleep(0.05)
    for i in range(0, 12, 3):
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=f"burst-{i}"))
    done = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), timeout=30)
    answers = [r for r in done if not isinstance(r, BaseException)]
    cancelled = [r for r in done if isinstance(r, JsonRpcRequestCancelled)]
    assert len(answers) + len(cancelled) == 24
    assert answers[-1].items and answers[-2].items  # the newest per document is served
    assert not client.protocol._request_futures  # nothing left unanswered
    counts = (await stats(client)).server_requests
    outcomes = ("served", "empty", "superseded", "typed_through", "cancelled", "not_ready")
    assert sum(getattr(counts, name, 0) for name in outcomes) == counts.requests


async def test_a_generation_in_flight_never_blocks_other_messages(slow_client):
    client = slow_client
    open_doc(client, "class Po\n", uri=OTHER)
    generating = send_inline(client, "long", 0, 8, uri=OTHER)
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    open_doc(client, "x = 1\n", uri="file:///work/third.py")
    edit(client, (0, 5), (0, 5), "\n", version=2, uri="file:///work/third.py")
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"specLsp": {"debounceMs": 0}})
    )
    await stats(client)
    assert loop.time() - started < 0.25  # far less than the generation still running
    assert not generating.done()
    assert (await asyncio.wait_for(generating, 10)).items
