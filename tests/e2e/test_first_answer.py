"""The latency budget through the real server: a multi-line suggestion is answered at its first
complete line while the rest is generated in the background into the cache; the lines after an
accepted first one then come from there."""

from __future__ import annotations

import pytest_lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import (
    AUTOMATIC,
    INVOKED,
    edit,
    inline,
    open_doc,
    server_config,
    settled,
    start,
    stats,
    wait_ready,
)

URI = "file:///work/point.py"
FIRST = "    def __init__(self, x, y):"  # the fake model continues `class Point:` with the corpus
REST = "\n        self.x = x\n        self.y"  # (64 tokens: the fake model's are bytes)


def client_with(budget_ms: int):
    @pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_DELAY_MS="60"))
    async def fixture(lsp_client: LanguageClient):
        await start(lsp_client, {"drafter": "none", "answerBudgetMs": budget_ms})
        await wait_ready(lsp_client)
        yield
        await lsp_client.shutdown_session()

    return fixture


early_client = client_with(5000)
whole_client = client_with(0)
busy_client = client_with(1)  # the budget runs out long before the first line is complete


async def test_the_first_line_is_answered_and_the_rest_follows_from_the_cache(early_client):
    client = early_client
    open_doc(client, "class Point:\n", uri=URI)
    item = (await inline(client, 1, 0, uri=URI, kind=INVOKED)).items[0]
    assert item.insert_text == FIRST  # one line: ~30 model passes, not 64
    assert (await stats(client)).server_requests.answered_early == 1
    edit(client, (1, 0), (1, 0), FIRST, version=2, uri=URI)  # Tab
    nxt = (await inline(client, 1, len(FIRST), uri=URI)).items[0]
    # the next line, as soon as the generation that went on has written it (the item replaces
    # the typed line: its range starts at 0), not when it ends: from the generation in flight
    assert nxt.insert_text == FIRST + REST[: REST.index("\n", 1)]
    assert nxt.range.start.character == 0
    assert getattr((await stats(client)).cache_hits, "in_flight", 0) == 1
    await settled(client)  # the generation has ended: the rest comes from the cache
    rest = (await inline(client, 1, len(FIRST), uri=URI)).items[0]
    assert rest.insert_text == FIRST + REST and rest.range.start.character == 0
    assert getattr((await stats(client)).cache_hits, "typed_through", 0) >= 1
    assert getattr((await stats(client)).cache_hits, "in_flight", 0) == 1
    data = await stats(client)  # each stage's p50/p95, the first answer's included
    timing = data.timing
    # (p95: the first request's generation, the longest; precompute ran short ones since)
    assert 0 < timing.first_answer_ms.p50 < timing.prompt_ms.p95 + timing.decode_ms.p95
    assert 0 < timing.prompt_share_evaluated.p95 <= 1 and data.queue_ms.p50 is not None


async def test_with_no_budget_the_answer_is_the_whole_suggestion(whole_client):
    client = whole_client
    open_doc(client, "class Point:\n", uri=URI)
    item = (await inline(client, 1, 0, uri=URI, kind=INVOKED)).items[0]
    assert item.insert_text == FIRST + REST
    assert getattr((await stats(client)).server_requests, "answered_early", 0) == 0


async def test_an_automatic_answer_cut_by_the_budget_ends_at_a_word_boundary(busy_client):
    client = busy_client
    open_doc(client, "class Point:\n", uri=URI)
    shown = (await inline(client, 1, 0, uri=URI, kind=AUTOMATIC)).items[0].insert_text
    assert FIRST.startswith(shown) and len(shown) < len(FIRST)  # a partial first line
    after = FIRST[len(shown)]  # never inside a word the generation goes on with
    assert not ((shown[-1].isalnum() or shown[-1] == "_") and (after.isalnum() or after == "_"))
    await settled(client)
    assert (await stats(client)).first_answers.cut == 1


async def test_an_invoked_answer_is_its_first_line_whole(busy_client):
    client = busy_client
    open_doc(client, "class Point:\n", uri=URI)
    item = (await inline(client, 1, 0, uri=URI, kind=INVOKED)).items[0]
    assert item.insert_text == FIRST  # (the whole is FIRST + REST)
    await settled(client)
    data = await stats(client)
    assert data.server_requests.answered_early == 1
    assert data.first_answers.answered == 1 and data.first_answers.cut == 0
