"""Document sync over stdio: random incremental edits (UTF-16 ranges, CRLF, emoji/CJK, ranges
past the ends, reversed, stale versions), then specLsp/document must report the client's text.

The client's model is the one the unit fuzz test checks the server's document code against
(tests/unit/test_docsync_fuzz.py); here the whole path is exercised: JSON, pygls, the workspace.
"""

from __future__ import annotations

import hashlib
import random

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import capabilities, open_doc, server_config, start
from tests.unit.test_docsync_fuzz import PIECES, client_edit

SEQUENCES = 6
EDITS = 60


def random_text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, most)))


def random_change(rng: random.Random, text: str) -> tuple[int, int, int, int, str]:
    lines = text.count("\n") + text.count("\r") + 1

    def coordinate() -> tuple[int, int]:
        return rng.randint(0, lines + 1), rng.randint(0, 14)

    return (*coordinate(), *coordinate(), random_text(rng, 4))


async def server_view(client: LanguageClient, uri: str):
    return await client.protocol.send_request_async("specLsp/document", {"uri": uri})


async def check_sequences(client: LanguageClient, encoding: str, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(SEQUENCES):
        uri = f"file:///work/sync-{encoding}-{n}.py"
        text = random_text(rng, 30)
        open_doc(client, text, uri=uri)
        for _ in range(EDITS):
            change = random_change(rng, text)
            sl, sc, el, ec, new = change
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(uri=uri, version=rng.randint(0, 9)),
                    [
                        lsp.TextDocumentContentChangePartial(
                            range=lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec)), text=new
                        )
                    ],
                )
            )
            text = client_edit(text, change, encoding)
        view = await server_view(client, uri)
        assert view.length == len(text), (seed, n)
        assert view.sha256 == hashlib.sha256(text.encode("utf-8")).hexdigest(), (seed, n)


@pytest_lsp.fixture(config=server_config())
async def utf16_client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config())
async def utf8_client(lsp_client: LanguageClient):
    result = await start(lsp_client, caps=capabilities(encodings=["utf-8"]))
    assert result.capabilities.position_encoding == "utf-8"
    yield
    await lsp_client.shutdown_session()


async def test_random_edits_keep_the_server_text_equal_to_the_client_text(utf16_client):
    await check_sequences(utf16_client, "utf-16", seed=8)


async def test_the_same_with_utf8_positions(utf8_client):
    await check_sequences(utf8_client, "utf-8", seed=88)


async def test_edits_to_a_document_never_opened_are_ignored(utf16_client):
    client = utf16_client
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri="file:///never/opened.py", version=3),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), text="x"
                )
            ],
        )
    )
    assert await server_view(client, "file:///never/opened.py") is None
    open_doc(client, "ok\r\n", uri="file:///work/after.py")
    view = await server_view(client, "file:///work/after.py")
    assert view.sha256 == hashlib.sha256(b"ok\r\n").hexdigest()
