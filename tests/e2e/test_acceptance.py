"""What people do with suggestions, through the server (fake backend): an item accepted (the
next didChange inserts it), in part, or passed over with something else typed is counted so,
from the document alone; the item's command (run by clients on accept) says it too; accepted
text is looked for again later (a short clock here: SPEC_LSP_RETENTION_S); the gate hides an
unsure Automatic suggestion and answers an Invoked one."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import (
    INVOKED,
    edit,
    gate_fitted,
    inline,
    open_doc,
    server_config,
    settled,
    start,
    stats,
    wait_ready,
)
from tests.e2e.test_robustness import poll

TEXT = "import os\n\ndef fo\n"  # the fake model goes on with "o(x):" ...


@pytest_lsp.fixture(config=server_config(SPEC_LSP_RETENTION_S="1,2"))
async def client(lsp_client: LanguageClient):
    await start(lsp_client, {"precompute": False})
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def shown(client: LanguageClient, uri: str, **kw) -> lsp.InlineCompletionItem:
    open_doc(client, TEXT, uri=uri)
    item = (await inline(client, 2, 6, uri=uri, **kw)).items[0]
    await settled(client)
    assert item.insert_text.startswith("o(x):") and item.command is not None
    assert item.command.command == "specLsp.accepted"
    return item


async def counts(client: LanguageClient) -> dict:
    return (await stats(client)).acceptance


async def test_a_suggestion_inserted_whole_is_accepted_and_still_there_later(client):
    uri = "file:///work/accept.py"
    item = await shown(client, uri)
    edit(client, (2, 6), (2, 6), item.insert_text, version=2, uri=uri)  # Tab
    numbers = await poll(client, lambda s: s.acceptance.accepted == 1)
    assert numbers.acceptance.shown == 1 and numbers.acceptance.rejected == 0
    assert numbers.acceptance.chars_accepted == len(item.insert_text)
    assert numbers.acceptance.rate == 1.0
    later = await poll(client, lambda s: s.acceptance.checked_2s == 1)  # (the short clock)
    assert later.acceptance.still_there_1s == 1 and later.acceptance.still_there_2s == 1


async def test_a_first_word_inserted_is_partial(client):
    uri = "file:///work/partial.py"
    item = await shown(client, uri)
    word = item.insert_text[:2]  # "o(": VS Code's accept-word inserts a part in one change
    edit(client, (2, 6), (2, 6), word, version=2, uri=uri)
    numbers = await poll(client, lambda s: s.acceptance.partial == 1)
    assert numbers.acceptance.chars_accepted == len(word)


async def test_typing_something_else_is_rejected(client):
    uri = "file:///work/reject.py"
    await shown(client, uri)
    edit(client, (2, 6), (2, 6), "x", version=2, uri=uri)
    numbers = await poll(client, lambda s: s.acceptance.rejected == 1)
    assert numbers.acceptance.accepted == 0


async def test_the_items_command_says_it_was_accepted(client):
    uri = "file:///work/command.py"
    item = await shown(client, uri)
    command = item.command
    assert command is not None and command.arguments
    await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert (await counts(client)).accepted == 1
    edit(client, (2, 6), (2, 6), item.insert_text, version=2, uri=uri)  # the edit after it
    assert (await counts(client)).accepted == 1  # counted once
    bad = lsp.ExecuteCommandParams(command=command.command, arguments=["not a number"])
    await client.workspace_execute_command_async(bad)  # ignored, no error
    assert (await counts(client)).accepted == 1


@pytest_lsp.fixture(config=server_config())
async def strict(lsp_client: LanguageClient):
    gate_fitted()
    await start(lsp_client, {"precompute": False, "gateThreshold": 1.0})
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_the_gate_hides_an_unsure_automatic_suggestion_and_answers_an_invoked_one(strict):
    client = strict
    open_doc(client, TEXT, uri="file:///work/gate.py")
    assert not (await inline(client, 2, 6, uri="file:///work/gate.py")).items
    await settled(client)
    assert (await counts(client)).hidden == 1 and (await counts(client)).shown == 0
    item = await shown(client, "file:///work/gate-invoked.py", kind=INVOKED)
    assert item.insert_text.startswith("o(x):")
    assert (await counts(client)).shown == 1


async def test_typing_along_an_invoked_suggestion_keeps_it_on_screen_under_the_gate(strict):
    """The person asked (Invoked: shown whatever its confidence) and types along it: each key's
    Automatic answer is the rest of the same suggestion, not gated again."""
    client, uri = strict, "file:///work/gate-typed.py"
    item = await shown(client, uri, kind=INVOKED)
    edit(client, (2, 6), (2, 6), item.insert_text[0], version=2, uri=uri)  # a key typed into it
    rest = (await inline(client, 2, 7, uri=uri)).items
    assert rest and rest[0].insert_text.endswith(item.insert_text[1:])
    numbers = await stats(client)
    assert numbers.acceptance.hidden == 0 and numbers.cache_hits.typed_through == 1


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_DELAY_MS="60"))
async def strict_early(lsp_client: LanguageClient):
    """The gate at 1 (every Automatic answer hidden unless on screen), answers early."""
    settings = {"precompute": False, "gateThreshold": 1.0, "drafter": "none"}
    await start(lsp_client, {**settings, "answerBudgetMs": 5000})
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_an_early_answered_suggestion_typed_along_stays_when_its_rest_grew(strict_early):
    """Invoked, answered at its first line while the rest goes on into the cache: the key typed
    along it is answered with more than was shown (the first line's rest and the lines after),
    still the suggestion on screen, not gated again."""
    client, uri = strict_early, "file:///work/gate-early.py"
    open_doc(client, "class Point:\n", uri=uri)
    first = (await inline(client, 1, 0, uri=uri, kind=INVOKED)).items[0].insert_text
    assert "\n" not in first and (await stats(client)).server_requests.answered_early == 1
    await settled(client)  # (the person reads it: the rest is in the cache by now)
    edit(client, (1, 0), (1, 0), first[0], version=2, uri=uri)  # a key typed along it
    rest = (await inline(client, 1, 1, uri=uri)).items
    assert rest, "the suggestion on screen vanished at the first key typed along it"
    assert rest[0].insert_text.startswith(first) and "\n" in rest[0].insert_text
    numbers = await stats(client)
    assert numbers.acceptance.hidden == 0 and numbers.acceptance.shown == 1
    assert numbers.cache_hits.typed_through == 1 and numbers.shown_why.on_screen == 1


@pytest_lsp.fixture(config=server_config())
async def precomputing(lsp_client: LanguageClient):
    await start(lsp_client, {"gateThreshold": 1.0})  # (precompute on: the default)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_a_hidden_suggestion_costs_no_follow_on_work(precomputing):
    """The gate hides the Automatic answer: nothing is precomputed after it (which would also
    stop the context block's idle work); a shown (Invoked) one's next suggestion is."""
    client, uri = precomputing, "file:///work/hidden.py"
    open_doc(client, TEXT, uri=uri)
    assert not (await inline(client, 2, 6, uri=uri)).items
    await settled(client)
    numbers = await stats(client)
    assert numbers.shown_why.hidden == 1 and numbers.follow_on.precomputes == 0
    open_doc(client, TEXT, uri="file:///work/shown.py")
    assert (await inline(client, 2, 6, uri="file:///work/shown.py", kind=INVOKED)).items
    await settled(client)
    assert (await stats(client)).follow_on.precomputes == 1


def changes(client: LanguageClient, uri: str, version: int, *edits: tuple[int, int, str]) -> None:
    """One didChange of several insertions (line, character, text), as Neovim batches keys."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(line, char), lsp.Position(line, char)), text=text
                )
                for line, char, text in edits
            ],
        )
    )


async def test_two_keys_batched_in_one_notification_are_typed_through(client):
    uri = "file:///work/batched.py"
    await shown(client, uri)  # "o(x):"
    changes(client, uri, 2, (2, 6, "o"), (2, 7, "("))  # within Neovim's debounce
    edit(client, (2, 8), (2, 8), "Z", version=3, uri=uri)  # then something else
    numbers = await poll(client, lambda s: s.acceptance.typed_through == 1)
    assert numbers.acceptance.partial == 0 and numbers.acceptance.rejected == 0


async def test_enter_with_auto_indent_before_a_suggested_body_is_not_an_accept(client):
    uri = "file:///work/enter.py"
    open_doc(client, "import os\n\ndef foo(x):\n", uri=uri)
    item = (await inline(client, 2, 11, uri=uri)).items[0]
    assert item.insert_text.startswith("\n    return")
    edit(client, (2, 11), (2, 11), "\n    ", version=2, uri=uri)  # Enter: the indent with it
    edit(client, (3, 4), (3, 4), "Z", version=3, uri=uri)
    numbers = await poll(client, lambda s: s.acceptance.typed_through == 1)
    assert numbers.acceptance.partial == 0 and numbers.acceptance.accepted == 0


async def test_asking_again_where_a_suggestion_stands_is_not_a_reject(client):
    """Cycling (VS Code's Alt+]: an Invoked request at the same place) or asking again."""
    uri = "file:///work/cycle.py"
    item = await shown(client, uri)
    again = (await inline(client, 2, 6, uri=uri, kind=INVOKED)).items[0]
    assert again.insert_text == item.insert_text
    edit(client, (2, 6), (2, 6), item.insert_text, version=2, uri=uri)  # Tab
    numbers = await poll(client, lambda s: s.acceptance.accepted == 1)
    assert numbers.acceptance.rejected == 0 and numbers.acceptance.shown == 1
