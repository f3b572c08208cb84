"""Faults over stdio (fake backend, which checks the model file as the real one does before
llama.cpp sees it): a model file that is not a GGUF, and one replaced on disk while the server
runs. The server says so once, answers empty meanwhile, and reloads by itself when the file is
good again. (Truncated files, context overflow and memory: tests/real/test_faults_real.py.)"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from spec_lsp.server.language_server import MODEL_WATCH_S
from tests.e2e.conftest import inline, open_doc, server_config, start, wait_ready
from tests.e2e.test_robustness import poll
from tests.e2e.test_settings import nth_message

MODELS = Path(tempfile.mkdtemp(prefix="spec-lsp-faults-"))
GOOD = b"GGUF" + bytes(60)  # enough for the fake backend, which checks the magic only
NOT_GGUF = MODELS / "not-a-model.gguf"
REPLACED = MODELS / "replaced.gguf"
# changed, then unchanged for one check, then loaded (~3 checks), with a busy machine's margin
RELOAD_S = 3 * MODEL_WATCH_S + 30


def write(path: Path, data: bytes) -> None:
    """Overwrite in place, as cp or curl -o do (not an atomic rename)."""
    with path.open("wb") as handle:
        handle.write(data)
    stamp = path.stat().st_mtime_ns + 10**9  # a visibly newer file, even on coarse clocks
    os.utime(path, ns=(stamp, stamp))


async def serves(client: LanguageClient, version: int) -> bool:
    uri = f"file:///work/faults-{version}.py"
    open_doc(client, "def fo\n", uri=uri, version=version)
    return bool((await inline(client, 0, 6, uri=uri)).items)


NOT_GGUF.write_bytes(b"<html>404 Not Found</html>")


@pytest_lsp.fixture(config=server_config("--model", str(NOT_GGUF)))
async def not_gguf_client(lsp_client: LanguageClient):
    await start(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_not_a_gguf_is_one_clear_message_and_fixing_the_file_reloads(not_gguf_client):
    client = not_gguf_client
    message = await nth_message(client)
    assert message.type == lsp.MessageType.Error
    assert str(NOT_GGUF) in message.message and "not a GGUF" in message.message
    assert not await serves(client, 1)  # up, answering empty
    await asyncio.sleep(MODEL_WATCH_S * 1.5)
    assert len(client.messages) == 1  # said once, not at every check
    write(NOT_GGUF, GOOD)  # the user fixes the file: no restart, no settings change needed
    await poll(client, lambda s: s.ready and s.load_error is None, RELOAD_S)
    assert await serves(client, 2)


REPLACED.write_bytes(GOOD)


@pytest_lsp.fixture(config=server_config("--model", str(REPLACED)))
async def replaced_client(lsp_client: LanguageClient):
    await start(lsp_client)
    await wait_ready(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_a_model_replaced_while_running_is_reloaded_with_a_message(replaced_client):
    client = replaced_client
    assert await serves(client, 1)
    write(REPLACED, b"garbage, half-downloaded")
    failed = await poll(client, lambda s: s.load_error is not None, RELOAD_S)
    assert not failed.ready and "not a GGUF" in failed.load_error
    reloading, error = await nth_message(client, 1), await nth_message(client, 2)
    assert reloading.type == lsp.MessageType.Info and "changed on disk" in reloading.message
    assert error.type == lsp.MessageType.Error and str(REPLACED) in error.message
    assert not await serves(client, 2)  # still up, answering empty
    write(REPLACED, GOOD)  # the download finishes
    await poll(client, lambda s: s.ready and s.load_error is None, RELOAD_S)
    assert await serves(client, 3)
    assert [m.type for m in client.messages] == [
        lsp.MessageType.Info,
        lsp.MessageType.Error,
        lsp.MessageType.Info,
    ]
