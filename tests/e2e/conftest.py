"""pytest-lsp fixtures: the real server as a subprocess over stdio, with the fake backend."""

from __future__ import annotations

import os
import sys

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = [
    sys.executable,
    "-m",
    "spec_lsp.cli",
    "serve",
    "--backend",
    "fake",
    "--log-level",
    "DEBUG",
]
CAPABILITIES = lsp.ClientCapabilities(
    text_document=lsp.TextDocumentClientCapabilities(
        inline_completion=lsp.InlineCompletionClientCapabilities(),
        synchronization=lsp.TextDocumentSyncClientCapabilities(),
    ),
    window=lsp.WindowClientCapabilities(
        work_done_progress=True, show_message=lsp.ShowMessageRequestClientCapabilities()
    ),
)


def server_config(**env: str) -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER, server_env={**os.environ, **env})


async def start(client: LanguageClient, options: dict | None = None) -> lsp.InitializeResult:
    result = await client.initialize_session(
        lsp.InitializeParams(capabilities=CAPABILITIES, initialization_options=options or {})
    )
    client.init_result = result  # type: ignore[attr-defined]
    return result


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_DELAY_MS="300"))
async def slow_client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()
