"""Cancellation, exactly-one-response, settings errors, missing model, not-ready: over stdio."""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.e2e.conftest import SERVER, server_config, start
from tests.e2e.test_inline import URI, inline, open_doc, ready_inline


def params(line: int, character: int, uri: str = URI) -> lsp.InlineCompletionParams:
    return lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=line, character=character),
        context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Automatic),
    )


async def test_newer_request_supersedes_older(slow_client: LanguageClient):
    client = slow_client
    open_doc(client, "def fo\n")
    await ready_inline(client, 0, 6)
    open_doc(client, "def gre\n", uri="file:///work/other.py")
    older = asyncio.ensure_future(
        client.protocol.send_request_async(
            "textDocument/inlineCompletion", params(0, 7, "file:///work/other.py")
        )
    )
    await asyncio.sleep(0.1)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri="file:///work/other.py", version=2),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(0, 7), lsp.Position(0, 7)), text="e"
                )
            ],
        )
    )
    newer = client.protocol.send_request_async(
        "textDocument/inlineCompletion", params(0, 8, "file:///work/other.py")
    )
    old_result, new_result = await asyncio.wait_for(asyncio.gather(older, newer), timeout=30)
    assert len(old_result.items) == 0  # superseded: answered, empty
    assert new_result.items[0].insert_text.startswith("t(name):")


async def test_cancel_request_is_honoured(slow_client: LanguageClient):
    client = slow_client
    open_doc(client, "def fo\n")
    await ready_inline(client, 0, 6)
    open_doc(client, "class Po\n", uri="file:///work/c.py")
    future = asyncio.ensure_future(
        client.protocol.send_request_async(
            "textDocument/inlineCompletion", params(0, 8, "file:///work/c.py"), msg_id="cancel-me"
        )
    )
    await asyncio.sleep(0.2)
    client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="cancel-me"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(future, timeout=10)
    # the server is still serving, and the cancelled generation stopped early
    result = await ready_inline(client, 0, 6)
    assert result.items


async def test_exactly_one_response_each_under_a_burst(slow_client: LanguageClient):
    client = slow_client
    open_doc(client, "def fo\n")
    await ready_inline(client, 0, 6)
    futures = [
        asyncio.ensure_future(
            client.protocol.send_request_async(
                "textDocument/inlineCompletion", params(0, 6), msg_id=f"burst-{i}"
            )
        )
        for i in range(25)
    ]
    await asyncio.sleep(0.05)
    for i in range(0, 10, 3):
        client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=f"burst-{i}"))
    done = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), timeout=60)
    assert len(done) == 25
    answered = [r for r in done if not isinstance(r, Exception)]
    assert answered and answered[-1].items  # the newest one is served
    assert len(client.protocol._request_futures) == 0  # no request left without an answer


async def test_invalid_setting_is_reported_and_old_settings_kept(client: LanguageClient):
    open_doc(client, "def fo\n")
    await ready_inline(client, 0, 6)
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"specLsp": {"draftMax": -3, "mysteryKey": 1}})
    )
    message = await asyncio.wait_for(client.wait_for_notification("window/showMessage"), timeout=10)
    assert "draftMax" in message.message and "previous settings" in message.message
    assert (await ready_inline(client, 0, 6)).items
    client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"specLsp": {"maxTokens": 3}})
    )
    await asyncio.sleep(0.3)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=URI, version=2),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(0, 6), lsp.Position(0, 6)), text="\n\nclass Po"
                )
            ],
        )
    )
    short = await ready_inline(client, 2, 8)
    assert len(short.items[0].insert_text) <= 3  # the good change took effect


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[*SERVER, "--model", "/nonexistent/model.gguf"])
)
async def missing_model_client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_missing_model_is_one_clear_message_and_server_stays_up(
    missing_model_client: LanguageClient,
):
    client = missing_model_client
    message = await asyncio.wait_for(client.wait_for_notification("window/showMessage"), timeout=10)
    assert "/nonexistent/model.gguf" in message.message and "models pull" in message.message
    assert message.type == lsp.MessageType.Error
    open_doc(client, "def fo\n")
    result = await inline(client, 0, 6)
    assert len(result.items) == 0


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_LOAD_DELAY_MS="1500"))
async def loading_client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_requests_before_the_model_is_ready_get_an_empty_list_quickly(
    loading_client: LanguageClient,
):
    client = loading_client
    open_doc(client, "def fo\n")
    started = asyncio.get_running_loop().time()
    result = await inline(client, 0, 6)
    assert len(result.items) == 0 and asyncio.get_running_loop().time() - started < 1.0
    assert (await ready_inline(client, 0, 6)).items


def test_tcp_binds_loopback_by_default():
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "serve", "--help"], capture_output=True, text=True
    )
    assert (
        "--tcp" in proc.stdout
        and "127.0.0.1"
        in subprocess.run(
            [
                sys.executable,
                "-c",
                "from spec_lsp.cli import build_parser; print(build_parser().parse_args(['serve']).host)",
            ],
            capture_output=True,
            text=True,
        ).stdout
    )
