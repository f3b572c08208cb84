"""Many large documents opened, completed in and closed, round after round: the server keeps
nothing of them (its memory figures return to where they started after each round), and what
its allocators have handed out (interpreter blocks, malloc'd bytes) sets no new high once the
first rounds have warmed it up."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.e2e.conftest import SERVER, inline, open_doc, start, stats, wait_ready

DOCUMENTS = 200
LINES = 2000
# what is allocated after the last round against the most of the rounds before it (a document's
# text is ~60 kB, its definitions ~1,000 objects: 200 documents kept would add 12 MB of malloc
# and ~200 k interpreter blocks). Measured once the server has collected after the closes:
# malloc 29.2, 29.2, 29.2 MB; blocks 327 k, 329 k, 330 k (before that collection they varied
# 686-786 k from round to round, and a busy machine failed the 5% bound). Resident memory is printed, not asserted: it follows the
# heap's fragmentation, not what is held (301, 322, 354, 348, 383 MB in the same run; 269, 284,
# 351, 355, 343 in another), freed pages going back to the system on close (server/heap.py)
MALLOC_GROWTH_MB = 4.0
BLOCKS_GROWTH = 0.05
ROUNDS = tuple(range(1, int(os.environ.get("SPEC_LSP_MEMORY_ROUNDS", "3")) + 1))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env={**os.environ}))
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


def document(round_: int, i: int) -> str:
    body = "".join(
        f"def f_{round_}_{i}_{j}(x):\n    return x * {j} + {i}\n" for j in range(LINES // 2 - 1)
    )
    return body + "\ndef fo"  # 2000 lines; the fake model continues `def fo` -> `o(x):`


def figures(memory: dict[str, Any]) -> dict[str, Any]:
    """What the server holds for documents: not its resident memory, nor the accepted
    completions the workspace index keeps (workspace-wide, the latest 64)."""
    held = {key: value for key, value in memory.items() if key not in ("rss_mb", "heap")}
    held["workspace"] = {
        key: value for key, value in held["workspace"].items() if not key.startswith("accepted")
    }
    return held


async def settled(client: LanguageClient, expected: dict[str, Any], timeout: float = 60.0):
    """The memory once the closes queued behind the worker's jobs have run."""
    deadline = time.monotonic() + timeout
    while True:
        memory = _plain((await stats(client)).memory)
        if figures(memory) == expected or time.monotonic() > deadline:
            return memory
        await asyncio.sleep(0.05)


async def test_documents_closed_leave_nothing_behind(client: LanguageClient):
    start_memory = figures(_plain((await stats(client)).memory))
    assert start_memory["open_documents"] == {"count": 0, "chars": 0}
    rss: list[float] = []
    heaps: list[dict[str, Any]] = []
    for round_ in ROUNDS:
        uris = [f"file:///work/many/r{round_}_{i}.py" for i in range(DOCUMENTS)]
        for i, uri in enumerate(uris):
            open_doc(client, document(round_, i), uri=uri)
        peak = _plain((await stats(client)).memory)
        assert peak["open_documents"]["count"] == DOCUMENTS
        answered = 0
        for uri in uris:
            result = await inline(client, LINES - 1, len("def fo"), uri=uri)
            answered += bool(result and result.items and result.items[0].insert_text)
        assert answered == DOCUMENTS
        during = _plain((await stats(client)).memory)
        for key in ("saved_states", "suggestions", "continuations", "workspace"):
            assert during[key] != start_memory[key], key  # something was held meanwhile
        assert during["workspace"]["chars"] <= during["workspace"]["max_chars"]
        assert during["saved_states"]["bytes"] <= during["saved_states"]["max_bytes"]
        for uri in uris:
            client.text_document_did_close(
                lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri))
            )
        memory = await settled(client, start_memory)
        assert figures(memory) == start_memory, round_
        workspace = memory["workspace"]
        assert workspace["accepted"] <= workspace["max_accepted"]
        quiet = await quiet_readings(client)
        rss.append(quiet["rss_mb"])
        heaps.append(quiet["heap"])
        print(f"round {round_}: rss_mb {rss[-1]}, heap {heaps[-1]}")
    print(f"rss_mb after each round: {rss}; memory held at the start and after each: {memory}")
    malloc = [heap["malloc_mb"] for heap in heaps]
    if malloc[0] is not None:  # (glibc)
        assert malloc[-1] <= max(malloc[:-1]) + MALLOC_GROWTH_MB, malloc
    blocks = [heap["python_blocks"] for heap in heaps]
    assert blocks[-1] <= max(blocks[:-1]) * (1 + BLOCKS_GROWTH), blocks


async def quiet_readings(client: LanguageClient, seconds: float = 4.0) -> dict[str, Any]:
    """The resident memory and the heap once the server is idle: the lowest of the readings
    over `seconds`. A second after the last close the server collects garbage and gives the
    freed pages back (server/heap.py); until then the heap still counts what the closes freed
    only in part (a reading then varied by 10% from round to round on a busy machine)."""
    readings = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        readings.append(_plain((await stats(client)).memory))
        await asyncio.sleep(0.1)
    heaps = [r["heap"] for r in readings]
    malloc = [h["malloc_mb"] for h in heaps if h["malloc_mb"] is not None]
    return {
        "rss_mb": min(r["rss_mb"] for r in readings),
        "heap": {
            "python_blocks": min(h["python_blocks"] for h in heaps),
            "malloc_mb": min(malloc) if malloc else None,
        },
    }


def _plain(value: Any) -> Any:
    """The stats object (attribute access from pygls' converter) as plain dicts."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if hasattr(value, "_asdict"):  # a namedtuple
        return {key: _plain(item) for key, item in value._asdict().items()}
    return value
