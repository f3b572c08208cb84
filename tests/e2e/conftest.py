"""pytest-lsp fixtures and helpers: the real server as a subprocess over stdio, fake backend.

The fake backend continues text from a small built-in corpus (`def fo` -> `o(x):` ...);
SPEC_LSP_FAKE_DELAY_MS slows each model pass (to catch generations in flight) and
SPEC_LSP_FAKE_LOAD_DELAY_MS slows the model load.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import replace
from typing import Any

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from spec_lsp.engine.finishing import confidence, gate_weights

SERVER = [sys.executable, "-m", "spec_lsp.cli", "serve", "--backend", "fake"]
SERVER_DEBUG = [*SERVER, "--log-level", "DEBUG"]
URI = "file:///work/demo.py"
FAKE = "<fake-corpus>"  # the fake backend's model path
AUTOMATIC = lsp.InlineCompletionTriggerKind.Automatic
INVOKED = lsp.InlineCompletionTriggerKind.Invoked


def gate_fitted(*, url: str | None = None, remote_model: str = "stub-coder") -> None:
    """The gate's weights fitted for the fake model (`url`: a server's model), as `spec-lsp
    bench gate --fit` leaves them where the server looks (the test session's cache folder:
    tests/conftest.py). Without them the gate is off for a model it was not fitted on."""
    key = gate_weights.remote_key(url, remote_model) if url else gate_weights.model_key(FAKE)
    fitted = replace(confidence.SHIPPED, fitted_on=url or FAKE, source="fitted")
    gate_weights.save(key, fitted)


def capabilities(*, encodings: list[str] | None = None) -> lsp.ClientCapabilities:
    """What an editor with inline completion announces (the capability is ours to add)."""
    return lsp.ClientCapabilities(
        general=lsp.GeneralClientCapabilities(position_encodings=encodings) if encodings else None,
        workspace=lsp.WorkspaceClientCapabilities(configuration=True),
        text_document=lsp.TextDocumentClientCapabilities(
            inline_completion=lsp.InlineCompletionClientCapabilities(),
            synchronization=lsp.TextDocumentSyncClientCapabilities(),
            completion=lsp.CompletionClientCapabilities(
                completion_item=lsp.ClientCompletionItemOptions(
                    documentation_format=[lsp.MarkupKind.PlainText]
                )
            ),
        ),
        window=lsp.WindowClientCapabilities(
            work_done_progress=True, show_message=lsp.ShowMessageRequestClientCapabilities()
        ),
    )


def server_config(*args: str, **env: str) -> ClientServerConfig:
    # (no Jedi warm-up after each server's load: seconds of a core beside every test)
    quiet = {"SPEC_LSP_JEDI_WARM_UP": "0"}
    return ClientServerConfig(
        server_command=[*SERVER_DEBUG, *args], server_env={**os.environ, **quiet, **env}
    )


async def start(
    client: LanguageClient, options: dict | None = None, caps: lsp.ClientCapabilities | None = None
) -> lsp.InitializeResult:
    result = await client.initialize_session(
        lsp.InitializeParams(
            capabilities=caps or capabilities(), initialization_options=options or {}
        )
    )
    client.init_result = result  # type: ignore[attr-defined]
    return result


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_DELAY_MS="150"))
async def slow_client(lsp_client: LanguageClient):
    """Each model pass takes 150 ms: generations last long enough to be caught in flight."""
    await start(lsp_client)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


# -- helpers ---------------------------------------------------------------------------------
def open_doc(client: LanguageClient, text: str, uri: str = URI, version: int = 1) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )


def edit(
    client: LanguageClient,
    start: tuple[int, int],
    end: tuple[int, int],
    text: str,
    *,
    version: int,
    uri: str = URI,
) -> None:
    """One incremental change: replace start..end (line, character) with `text`."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(lsp.Position(*start), lsp.Position(*end)), text=text
                )
            ],
        )
    )


def params(
    line: int,
    character: int,
    uri: str = URI,
    kind: lsp.InlineCompletionTriggerKind = AUTOMATIC,
    selected: lsp.SelectedCompletionInfo | None = None,
) -> lsp.InlineCompletionParams:
    return lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=line, character=character),
        context=lsp.InlineCompletionContext(trigger_kind=kind, selected_completion_info=selected),
    )


def inline(client: LanguageClient, line: int, character: int, **kw: Any):
    return client.text_document_inline_completion_async(params(line, character, **kw))


def send_inline(client: LanguageClient, msg_id: str, line: int, character: int, **kw: Any):
    """A request with an id of our choosing (to cancel it), as a task."""
    return asyncio.ensure_future(
        client.protocol.send_request_async(
            lsp.TEXT_DOCUMENT_INLINE_COMPLETION, params(line, character, **kw), msg_id=msg_id
        )
    )


def record_registrations(client: LanguageClient) -> list[lsp.Registration]:
    """Answer client/registerCapability as an editor does (a client that declares dynamic
    registration must), keeping what the server registered."""
    registered: list[lsp.Registration] = []

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def _register(params: lsp.RegistrationParams) -> None:
        registered.extend(params.registrations)

    return registered


async def stats(client: LanguageClient) -> Any:
    return await client.protocol.send_request_async("specLsp/stats", None)


async def wait_ready(client: LanguageClient, timeout: float = 60.0) -> None:
    """The model loads in the background after `initialized`: wait until it has, and until the
    rest of the start is done (measuring this machine's costs where no profile is cached yet,
    as on a fresh machine, then registering file watching): `file_events` is set last."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not ((numbers := await stats(client)).ready and numbers.file_events != "pending"):
        assert loop.time() < deadline, "the model never became ready"
        await asyncio.sleep(0.02)


async def ready_inline(client: LanguageClient, line: int, character: int, **kw: Any):
    """A completion once the model is ready (requests before that are answered empty), and
    once the generation behind it has ended (answered at its first line, it goes on: its
    statistics count when it ends)."""
    await wait_ready(client)
    result = await inline(client, line, character, **kw)
    assert result is not None and result.items, "no completion"
    await settled(client)
    return result


async def settled(client: LanguageClient, timeout: float = 30.0) -> None:
    """Until no generation runs (an early answer's goes on in the background)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (await stats(client)).pending.generations:
        assert loop.time() < deadline, "a generation never ended"
        await asyncio.sleep(0.02)
