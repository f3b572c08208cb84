"""Settings and model loading over stdio: initializationOptions, didChangeConfiguration (pushed
and pulled), invalid values, unknown keys, progress while loading, a missing model and its fix."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import (
    INVOKED,
    edit,
    inline,
    open_doc,
    server_config,
    start,
    stats,
    wait_ready,
)

LOG = Path(tempfile.mkdtemp(prefix="spec-lsp-e2e-")) / "server.log"
MISSING = "/nonexistent/models/target.gguf"


async def nth_message(client: LanguageClient, n: int = 1) -> lsp.ShowMessageParams:
    """The n-th window/showMessage the client received (waiting for it if need be)."""
    for _ in range(500):
        if len(client.messages) >= n:
            return client.messages[n - 1]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no message #{n}: {client.messages}")


def change_settings(client: LanguageClient, settings: object) -> None:
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=settings))


async def completion_length(client: LanguageClient, uri: str, version: int) -> int:
    """Open `uri` as `class Po` (a long corpus continuation) and measure its completion."""
    open_doc(client, "class Po\n", uri=uri, version=version)
    result = await inline(client, 0, 8, uri=uri)
    assert result.items
    return len(result.items[0].insert_text)


@pytest_lsp.fixture(config=server_config("--log-file", str(LOG)))
async def logged_client(lsp_client: LanguageClient):
    await start(lsp_client)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_invalid_settings_are_reported_the_rest_applies(logged_client):
    client = logged_client
    assert await completion_length(client, "file:///work/a.py", 1) > 3
    change_settings(client, {"specLsp": {"draftMax": -3, "mysteryKey": 1, "maxTokens": 3}})
    message = await nth_message(client)
    assert message.type == lsp.MessageType.Warning
    assert "draftMax" in message.message and "previous value" in message.message
    await asyncio.sleep(0.2)
    assert await completion_length(client, "file:///work/b.py", 1) <= 3  # the valid key applied
    assert "unknown setting 'mysteryKey'" in LOG.read_text()
    assert "mysteryKey" not in message.message  # unknown keys are logged, not shown


@pytest_lsp.fixture(config=server_config())
async def fresh_client(lsp_client: LanguageClient):
    """Not initialized yet: the test does it, with its own options."""
    yield
    await lsp_client.shutdown_session()


@pytest.mark.parametrize("nested", [True, False], ids=["under-specLsp", "top-level"])
async def test_initialization_options(fresh_client: LanguageClient, nested: bool):
    client = fresh_client
    options = {"maxTokens": 3, "topP": 7}  # topP must be in (0, 1]
    await start(client, {"specLsp": options} if nested else options)
    message = await nth_message(client)
    assert "topP" in message.message
    await wait_ready(client)
    assert await completion_length(client, "file:///work/init.py", 1) <= 3


async def test_settings_are_pulled_when_the_client_sends_none(client: LanguageClient):
    await wait_ready(client)
    client.set_configuration({"maxTokens": 2}, section="specLsp")
    change_settings(client, None)  # VS Code's pull model: "ask me with workspace/configuration"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    version = 1
    while await completion_length(client, "file:///work/pull.py", version) > 2:
        assert loop.time() < deadline, "the pulled settings never applied"
        version += 1
        await asyncio.sleep(0.05)


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_LOAD_DELAY_MS="800"))
async def loading_client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_a_request_while_the_model_loads_is_answered_once_it_has_and_progress_shows(
    loading_client,
):
    """The editor asks as the person types, once per pause (Neovim), and not again when the
    load ends: the newest request per document waits for the load; an older one is answered
    empty at once (superseded)."""
    client = loading_client
    open_doc(client, "def fo\n")
    loop = asyncio.get_running_loop()
    started = loop.time()
    older = asyncio.ensure_future(inline(client, 0, 6))
    await asyncio.sleep(0.1)
    result = await inline(client, 0, 6)
    assert result.items and loop.time() - started > 0.3  # (the 0.8 s load)
    assert len((await older).items) == 0
    assert (await stats(client)).server_requests.superseded == 1
    (reports,) = client.progress_reports.values()
    assert [r.kind for r in (reports[0], reports[-1])] == ["begin", "end"]
    assert reports[0].title == "spec-lsp" and reports[-1].message == "ready"


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_LOAD_DELAY_MS="800"))
async def loading_client_left_to_the_test(lsp_client: LanguageClient):
    await start(lsp_client)
    yield


async def test_shutdown_while_the_model_loads_is_answered_without_error(
    loading_client_left_to_the_test,
):
    """The editor closes during the load: pygls cancels the pending `initialized` handler as
    it shuts down, and the answer to `shutdown` is a result, not an internal error."""
    client = loading_client_left_to_the_test
    await asyncio.sleep(0.2)  # the load is under way
    assert not (await stats(client)).ready
    await asyncio.wait_for(client.shutdown_session(), 10)  # raises on an error answer


async def test_a_person_asking_while_the_model_loads_is_answered_once_it_has(loading_client):
    """Alt+\\ while the model loads: the answer comes when the load is done, not empty at once
    (the person would have to ask again); the editor's request before it is superseded."""
    client = loading_client
    open_doc(client, "def fo\n")
    loop = asyncio.get_running_loop()
    started = loop.time()
    automatic = asyncio.ensure_future(inline(client, 0, 6))
    await asyncio.sleep(0.05)  # (sent first)
    invoked = await inline(client, 0, 6, kind=INVOKED)
    waited = loop.time() - started
    assert invoked.items and invoked.items[0].insert_text
    assert 0.3 < waited < 10  # it waited for the 0.8 s load
    assert len((await automatic).items) == 0
    assert (await stats(client)).ready


@pytest_lsp.fixture(config=server_config("--model", MISSING))
async def missing_model_client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_a_missing_model_is_one_clear_message_and_a_good_setting_retries(
    missing_model_client,
):
    client = missing_model_client
    message = await nth_message(client)
    assert message.type == lsp.MessageType.Error
    assert MISSING in message.message and "models pull" in message.message  # path and fix
    open_doc(client, "def fo\n")
    assert len((await inline(client, 0, 6)).items) == 0  # still up, answering empty
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert len((await inline(client, 0, 6, kind=INVOKED)).items) == 0  # no load to wait for
    assert loop.time() - started < 1.0
    numbers = await stats(client)
    assert not numbers.ready and MISSING in numbers.load_error
    (reports,) = client.progress_reports.values()
    assert reports[-1].kind == "end" and reports[-1].message == "failed"
    assert len(client.messages) == 1
    change_settings(client, {"specLsp": {"model": ""}})  # back to the default model: it loads
    await wait_ready(client)
    edit(client, (0, 6), (0, 6), "", version=2)
    assert (await inline(client, 0, 6)).items
    assert (await stats(client)).load_error is None
