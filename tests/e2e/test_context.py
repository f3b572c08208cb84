"""Context beyond the file, through the server (fake backend): a definition in another open tab
reaches the prompt's context block, a closed tab's leaves it, a workspace file edited on disk
is noticed (workspace/didChangeWatchedFiles), a workspace larger than the bounds is read up to
them with one message, and binary and unreadable files are skipped."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import (
    capabilities,
    edit,
    inline,
    open_doc,
    record_registrations,
    server_config,
    stats,
    wait_ready,
)
from tests.e2e.remote_servers import Stub
from tests.e2e.test_robustness import poll
from tests.e2e.test_settings import nth_message

ROOT = Path(tempfile.mkdtemp(prefix="spec-lsp-context-"))
SHAPES = "def polygon_area(points):\n    total = 0.0\n    return abs(total) / 2\n"
MAIN = "from shapes import polygon_area\n\n\ndef report(points):\n    area = "
MAIN_URI = (ROOT / "main.py").as_uri()
SHAPES_URI = (ROOT / "shapes.py").as_uri()
BIG = Path(tempfile.mkdtemp(prefix="spec-lsp-context-big-"))


async def begin(
    client: LanguageClient,
    folder: Path | None,
    *,
    watch: bool = True,
    ready: bool = True,
    **options: Any,
) -> list[lsp.Registration]:
    """Initialized and loaded (`ready`: else still loading), as an editor that can watch files
    for us (`watch`) and does; returns what the server registered with it (filled by the time
    this returns, when loaded)."""
    caps = capabilities()
    caps.workspace.did_change_watched_files = lsp.DidChangeWatchedFilesClientCapabilities(  # type: ignore[union-attr]
        dynamic_registration=watch
    )
    registered = record_registrations(client)
    folders = [lsp.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)] if folder else None
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=caps,
            workspace_folders=folders,
            # (the context block on: contextTokens is 0 by default)
            initialization_options={"precompute": False, "contextTokens": 640, **options},
        )
    )
    if ready:
        await wait_ready(client)  # (file watching is registered after the load)
    return registered


async def block(client: LanguageClient, want, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The context block once `want(parts)` holds (it is chosen while idle)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        parts = [
            p if isinstance(p, dict) else p._asdict()
            for p in (await stats(client)).context.last_block
        ]
        if want(parts):
            return parts
        assert loop.time() < deadline, f"the context block never satisfied the check: {parts}"
        await asyncio.sleep(0.05)


def paths(parts: list[dict[str, Any]]) -> set[str]:
    return {p["path"] for p in parts}


async def block_in_kv(client: LanguageClient, parts: list[dict[str, Any]]) -> None:
    """Until the file prefix opens with the block of `parts` and all of it is evaluated (the
    stats show a block as soon as it is chosen, before the file prefix takes it)."""
    tokens = sum(p["tokens"] for p in parts)
    await poll(
        client,
        lambda s: s.memory.file_prefix.block_tokens == tokens and not s.memory.file_prefix.pending,
        timeout=30,
    )


@pytest_lsp.fixture(config=server_config())
async def tabs(lsp_client: LanguageClient):
    await begin(lsp_client, None)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_tabs_definition_reaches_the_prompt_and_leaves_with_the_tab(tabs):
    client = tabs
    open_doc(client, SHAPES, uri=SHAPES_URI)
    open_doc(client, MAIN, uri=MAIN_URI, version=1)
    await inline(client, 4, 11, uri=MAIN_URI)
    parts = await block(client, lambda parts: parts)
    assert any(p["reason"] == "definition:polygon_area" for p in parts), parts
    assert all(p["tokens"] > 0 for p in parts), parts  # (each part's tokens, why, where)
    assert all("main.py" not in p["path"] for p in parts)  # never the file's own text
    await block_in_kv(client, parts)  # while idle
    edit(client, (4, 11), (4, 11), "p", version=2, uri=MAIN_URI)
    await inline(client, 4, 12, uri=MAIN_URI)
    numbers = await stats(client)
    assert numbers.context.requests_with_context == 1
    assert numbers.context.tokens_from_cache == numbers.context.tokens > 0  # none on its time
    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=SHAPES_URI))
    )
    await inline(client, 4, 11, uri=MAIN_URI)
    await block(client, lambda parts: not parts)


UNITS = "SCALE = 2.5\n\n\ndef to_metres(value):\n    return value * SCALE\n"
UNITS_URI = (ROOT / "units.py").as_uri()
BOTH = (
    "from shapes import polygon_area\nfrom units import to_metres\n\n\ndef report(points):\n"
    "    area = polygon_area(points)\n    size = to_metres(area)\n    return "
)


@pytest_lsp.fixture(config=server_config())
async def no_shift(lsp_client: LanguageClient):
    await begin(lsp_client, None, kvShift=False)
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.parametrize("shift", [True, False])
async def test_a_closed_tabs_part_leaves_and_what_follows_is_moved_not_evaluated(
    shift, tabs, no_shift
):
    """The block loses shapes.py's part (its first file): the rest of the block and the file
    prefix after it keep their cache, moved into place (kvShift), instead of evaluated again."""
    client = tabs if shift else no_shift
    open_doc(client, SHAPES, uri=SHAPES_URI)
    open_doc(client, UNITS, uri=UNITS_URI)
    open_doc(client, BOTH, uri=MAIN_URI, version=1)
    await inline(client, 7, 11, uri=MAIN_URI)
    await block_in_kv(
        client, await block(client, lambda parts: paths(parts) == {"shapes.py", "units.py"})
    )
    before = (await stats(client)).file_prefix
    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=SHAPES_URI))
    )
    # (no request: while idle)
    await block_in_kv(client, await block(client, lambda parts: paths(parts) == {"units.py"}))
    after = (await stats(client)).file_prefix
    evaluated, moved = after.evaluated - before.evaluated, after.moved - before.moved
    rest = len(BOTH) + len(UNITS)  # (bytes: the fake's tokens) what follows the dropped part
    if shift:
        assert moved >= rest - 64 and evaluated <= 8, (moved, evaluated)
    else:
        assert moved == 0 and evaluated >= rest, (moved, evaluated)


async def test_a_file_opened_gets_its_block_before_any_edit_or_ask(tabs):
    """A tab defines a name the file imports and has not used yet: the file, opened, gets a
    block with that definition in its KV while the person reads, with no edit or request."""
    client = tabs
    open_doc(client, SHAPES, uri=SHAPES_URI)
    open_doc(client, MAIN, uri=MAIN_URI, version=1)
    parts = await block(client, lambda parts: parts)
    assert [p["reason"] for p in parts] == ["definition:polygon_area"]
    await block_in_kv(client, parts)
    numbers = await poll(client, lambda s: s.memory.file_prefix.block_ready)
    assert numbers.requests == 0 and numbers.file_prefix.block_ready_s is not None
    # the first ask uses it, the block's tokens from the cache
    await inline(client, 4, 11, uri=MAIN_URI)
    numbers = await stats(client)
    assert numbers.context.tokens_from_cache == numbers.context.tokens > 0


@pytest_lsp.fixture(config=server_config(SPEC_LSP_FAKE_LOAD_DELAY_MS="1500"))
async def loading(lsp_client: LanguageClient):
    await begin(lsp_client, None, ready=False)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_file_opened_while_the_model_loads_gets_its_block_once_loaded(loading):
    """An editor started with files open: their didOpen comes while the model loads. The last
    one opened takes the file prefix once the model is ready, its block with no edit or ask."""
    client = loading
    open_doc(client, SHAPES, uri=SHAPES_URI)
    open_doc(client, MAIN, uri=MAIN_URI, version=1)
    assert not (await stats(client)).ready  # (opened before the load ended)
    await wait_ready(client)
    parts = await block(client, lambda parts: parts)
    assert [p["reason"] for p in parts] == ["definition:polygon_area"]
    await block_in_kv(client, parts)
    numbers = await stats(client)
    assert numbers.requests == 0 and numbers.file_prefix.focused == 1


LONG = MAIN.replace(
    "\n\n\ndef report",
    "".join(f"\n\n\ndef f{i}(x):\n    return x + {i}" for i in range(30)) + "\n\n\ndef report",
)


LATER = Path(tempfile.mkdtemp(prefix="spec-lsp-context-later-"))  # units.py on disk, changed


@pytest_lsp.fixture(config=server_config())
async def later(lsp_client: LanguageClient):
    (LATER / "units.py").write_text("SCALE = 2.5\n")
    await begin(lsp_client, LATER)
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config())
async def later_no_shift(lsp_client: LanguageClient):
    (LATER / "units.py").write_text("SCALE = 2.5\n")
    await begin(lsp_client, LATER, kvShift=False)
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.parametrize("shift", [True, False])
async def test_a_block_change_under_the_evaluated_file_evaluates_it_again_exactly(
    shift, later, later_no_shift
):
    """units.py, on disk, gets the `to_metres` the file imports after the file's text is
    evaluated: the block changes while idle (no request), and block and text are evaluated
    again, exactly, with kvShift or without (putting the block under the text's KV changed
    answers: FilePrefix.shift_blocks; a dropped part is moved, the test above)."""
    client = later if shift else later_no_shift
    main = "from units import to_metres\n" + LONG
    open_doc(client, SHAPES, uri=(LATER / "shapes.py").as_uri())
    open_doc(client, main, uri=(LATER / "main.py").as_uri(), version=1)
    await block_in_kv(client, await block(client, lambda parts: "shapes.py" in paths(parts)))
    before = (await stats(client)).file_prefix
    (LATER / "units.py").write_text(UNITS)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(uri=(LATER / "units.py").as_uri(), type=lsp.FileChangeType.Changed)]
        )
    )
    parts = await block(
        client, lambda parts: "definition:to_metres" in [p["reason"] for p in parts]
    )
    await block_in_kv(client, parts)
    after = (await stats(client)).file_prefix
    evaluated, moved = after.evaluated - before.evaluated, after.moved - before.moved
    text = len(main)  # (bytes: the fake's tokens) the file's text after the block
    assert evaluated >= text, (shift, moved, evaluated)  # the text, again
    # (with kvShift a part of the block it still holds may move: never the text)
    assert moved <= (sum(p["tokens"] for p in parts) if shift else 0), (shift, moved, evaluated)


(ROOT / "shapes.py").write_text(SHAPES)
(ROOT / "data.bin").write_bytes(b"\x00\x01polygon_area\x00" * 100)
(ROOT / "secret.py").write_text("def hidden(): ...\n")
os.chmod(ROOT / "secret.py", 0)


@pytest_lsp.fixture(config=server_config())
async def workspace(lsp_client: LanguageClient):
    await begin(lsp_client, ROOT)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_workspace_file_on_disk_is_shown_and_its_edits_noticed(workspace):
    client = workspace
    open_doc(client, MAIN, uri=MAIN_URI, version=1)  # shapes.py is only on disk
    await inline(client, 4, 11, uri=MAIN_URI)
    parts = await block(client, lambda parts: "shapes.py" in paths(parts))
    assert paths(parts) == {"shapes.py"}  # not the binary file, not the unreadable one
    memory = (await stats(client)).memory.context.workspace
    assert memory.files >= 2 and memory.skipped.binary == 1
    if os.geteuid() != 0:  # (root reads any file)
        assert memory.skipped.unreadable == 1
    (ROOT / "shapes.py").write_text("def shoelace(points):\n    return 0\n")
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(uri=SHAPES_URI, type=lsp.FileChangeType.Changed)]
        )
    )
    await inline(client, 4, 11, uri=MAIN_URI)
    await block(client, lambda parts: not any("polygon_area" in p["reason"] for p in parts))


@pytest_lsp.fixture(config=server_config())
async def watching(lsp_client: LanguageClient):
    lsp_client.registered = await begin(lsp_client, ROOT)  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config())
async def not_watching(lsp_client: LanguageClient):
    lsp_client.registered = await begin(lsp_client, ROOT, watch=False)  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_file_watching_is_registered_with_a_client_that_can(watching):
    """Files changed on disk (a git checkout, a formatter) reach the context through the
    client's watcher, registered once the model is loaded."""
    registered = watching.registered
    assert [r.method for r in registered] == [lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    watchers = registered[0].register_options["watchers"]
    assert [w["globPattern"] for w in watchers] == ["**/*"]
    assert (await stats(watching)).file_events == "registered"


async def test_file_watching_is_not_asked_of_a_client_that_cannot(not_watching):
    assert not_watching.registered == []
    assert (await stats(not_watching)).file_events == "unsupported"


for i in range(30):
    (BIG / f"m{i:02d}.py").write_text(f"def f{i}():\n    return {i}\n")


@pytest_lsp.fixture(config=server_config())
async def big(lsp_client: LanguageClient):
    await begin(lsp_client, BIG, workspaceMaxFiles=10)
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_workspace_over_the_bounds_is_read_up_to_them_with_one_message(big):
    client = big
    message = await nth_message(client)
    assert "10 files" in message.message and "workspaceMaxFiles" in message.message
    await asyncio.sleep(0.5)
    memory = (await stats(client)).memory.context.workspace
    assert memory.files == 10 and memory.limited
    assert len(client.messages) == 1


@pytest.fixture
def stub():
    server = Stub()
    yield server
    server.close()


@pytest_lsp.fixture(config=server_config())
async def remote(lsp_client: LanguageClient, stub: Stub):
    await begin(lsp_client, None, engine="remote", remoteUrl=stub.url, fimTemplate="qwen")
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_a_remote_engine_sends_the_tabs_definition_in_the_prompt(remote, stub):
    """The remote engine's prompt opens with the same block (chosen while idle after the first
    ask), in the model's repository format."""
    client, server = remote, stub
    open_doc(client, SHAPES, uri=SHAPES_URI)
    open_doc(client, MAIN, uri=MAIN_URI, version=1)
    await inline(client, 4, 11, uri=MAIN_URI)
    assert "<|repo_name|>" not in server.completions[-1]["prompt"]  # (nothing chosen yet)
    parts = await block(client, lambda parts: parts)
    assert any(p["reason"] == "definition:polygon_area" for p in parts), parts
    assert all(p["tokens"] > 0 for p in parts), parts  # (each part's tokens, why, where)
    edit(client, (4, 11), (4, 11), "p", version=2, uri=MAIN_URI)
    await inline(client, 4, 12, uri=MAIN_URI)
    prompt = server.completions[-1]["prompt"]
    assert prompt.startswith("<|repo_name|>")
    assert "<|file_sep|>shapes.py\ndef polygon_area(points):" in prompt
    assert prompt.index("def polygon_area") < prompt.index("<|fim_prefix|>")
    assert (await stats(client)).context.requests_with_context == 1


@pytest.fixture
def llama_stub():
    server = Stub()
    server.llama_server = True
    yield server
    server.close()


@pytest_lsp.fixture(config=server_config())
async def remote_llama(lsp_client: LanguageClient, llama_stub: Stub):
    await begin(lsp_client, None, engine="remote", remoteUrl=llama_stub.url, remoteApi="infill")
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_llama_server_gets_the_tabs_definition_as_input_extra(remote_llama, llama_stub):
    """Against llama-server (/infill), the block travels as input_extra, one entry per file,
    apart from the document's own text."""
    client, server = remote_llama, llama_stub
    open_doc(client, SHAPES, uri=SHAPES_URI)
    open_doc(client, MAIN, uri=MAIN_URI, version=1)
    await inline(client, 4, 11, uri=MAIN_URI)
    assert server.infills[-1]["input_extra"] == []  # (nothing chosen yet)
    await block(client, lambda parts: parts)
    edit(client, (4, 11), (4, 11), "p", version=2, uri=MAIN_URI)
    await inline(client, 4, 12, uri=MAIN_URI)
    assert not server.completions
    body = server.infills[-1]
    assert body["input_extra"][-1]["filename"] == "shapes.py"
    assert body["input_extra"][-1]["text"].startswith("def polygon_area(points):")
    assert (
        body["input_prefix"].startswith("from shapes import") and body["prompt"] == "    area = p"
    )
    assert (await stats(client)).context.requests_with_context == 1
