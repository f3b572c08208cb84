"""A fresh machine: no cost profile cached. Plain decoding needs none, so the first requests
are answered at once, while this machine's costs are measured in idle time (a request stops
the measurement; the next pause goes on with it)."""

from __future__ import annotations

import tempfile

import pytest_lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import INVOKED, inline, open_doc, server_config, start, stats, wait_ready
from tests.e2e.test_robustness import poll

# each model pass slowed: the measurement (some 40 passes) takes seconds, as on a real model
FRESH = server_config(
    SPEC_LSP_FAKE_DELAY_MS="40", SPEC_LSP_PROFILE_DIR=tempfile.mkdtemp(prefix="spec-lsp-profiles-")
)


@pytest_lsp.fixture(config=FRESH)
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"precompute": False})
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_the_first_suggestion_comes_while_the_costs_are_measured(client):
    assert (await stats(client)).cost_profile is None  # ready before any measurement
    uri = "file:///work/fresh.py"
    open_doc(client, "import os\n\ndef fo\n", uri=uri)
    items = (await inline(client, 2, 6, uri=uri, kind=INVOKED)).items
    assert items and items[0].insert_text.startswith("o(x):")
    measured = await poll(client, lambda s: s.cost_profile is not None, timeout=60)
    assert measured.requests >= 1
