"""Over stdio: documents the editor opens and edits feed the workspace drafter (fake backend)."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import edit, open_doc, ready_inline, server_config, start, stats

OPTIONS = {"drafter": "workspace", "draftPolicy": "fixed", "draftMax": 8, "cache": False}
OTHER = "file:///work/other.py"
MINE = "file:///work/mine.py"


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    await start(lsp_client, OPTIONS)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_drafts_come_from_what_the_editor_opened_and_changed(client: LanguageClient):
    open_doc(client, "class Point:\n", uri=MINE)
    edit(client, (1, 0), (1, 0), "    def __init__(self, x, y):\n", version=2, uri=MINE)
    await ready_inline(client, 2, 0, uri=MINE)
    before = await stats(client)
    assert before.drafted == 0  # no other document: nothing to look up

    open_doc(client, "class Point:\n", uri=OTHER)  # the body arrives by an edit
    body = "    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n"
    edit(client, (1, 0), (1, 0), body, version=2, uri=OTHER)
    result = await ready_inline(client, 2, 0, uri=MINE)
    assert "self.x = x" in result.items[0].insert_text
    after = await stats(client)
    assert after.drafted >= 8 and after.accepted / after.drafted > 0.8

    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=OTHER))
    )
    await ready_inline(client, 2, 0, uri=MINE)
    assert (await stats(client)).drafted == after.drafted  # closed: no longer looked up
