"""The crash probe over stdio (fake backend, simulated llama.cpp builds): a build that crashes
(SIGSEGV, SIGILL) or hangs in the probe's child gives one message naming the fix; the server
stays up and answers empty; a rebuild (the build's file changing) is noticed and loads."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from spec_lsp.server.language_server import MODEL_WATCH_S
from tests.e2e.conftest import server_config, start
from tests.e2e.test_faults import RELOAD_S, serves
from tests.e2e.test_robustness import poll
from tests.e2e.test_settings import nth_message
from tests.probe_builds import PLAIN_INFO, probe_env, write_build

ROOT = Path(tempfile.mkdtemp(prefix="spec-lsp-probe-"))


def crashing(kind: str, **env: str) -> ClientServerConfig:
    build = write_build(
        ROOT / f"{kind}.py", kind, **({"info": PLAIN_INFO} if kind == "sigill" else {})
    )
    return server_config(**probe_env(build, ROOT / f"{kind}-verdicts", **env))


CASES = {
    "segv": ("SIGSEGV", "make rebuild-llama"),
    "sigill": ("SIGILL", "instructions this CPU lacks"),
    "hang": ("within 8 s", "spec-lsp doctor"),
}


async def crashed_and_rebuilt(client: LanguageClient, kind: str) -> None:
    await start(client)
    message = await nth_message(client)
    assert message.type == lsp.MessageType.Error
    for words in CASES[kind]:
        assert words in message.message, message.message
    assert not await serves(client, 1)  # alive, answering empty
    await asyncio.sleep(MODEL_WATCH_S * 2.5)
    assert len(client.messages) == 1  # said once
    assert not await serves(client, 2)
    write_build(ROOT / f"{kind}.py", "ok")  # the user rebuilds llama-cpp-python
    await poll(client, lambda s: s.ready and s.load_error is None, RELOAD_S + 5)
    assert await serves(client, 3)
    await client.shutdown_session()


@pytest_lsp.fixture(config=crashing("segv"))
async def segv(lsp_client: LanguageClient):
    yield


@pytest_lsp.fixture(config=crashing("sigill"))
async def sigill(lsp_client: LanguageClient):
    yield


# (the timeout applies to the healthy child after the rebuild too: a busy machine keeps it)
@pytest_lsp.fixture(config=crashing("hang", SPEC_LSP_PROBE_TIMEOUT_S="8"))
async def hang(lsp_client: LanguageClient):
    yield


async def test_a_segfault_is_one_message_and_a_rebuild_recovers(segv):
    await crashed_and_rebuilt(segv, "segv")


async def test_an_illegal_instruction_is_one_message_and_a_rebuild_recovers(sigill):
    await crashed_and_rebuilt(sigill, "sigill")


async def test_a_hang_is_stopped_with_one_message_and_a_rebuild_recovers(hang):
    await crashed_and_rebuilt(hang, "hang")
