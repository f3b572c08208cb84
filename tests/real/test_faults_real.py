"""Faults that need the real llama.cpp (SmolLM2-135M): truncated files, a model overwritten while
it serves, a prompt larger than the context, a context that does not fit in memory (the
server says which setting to lower and keeps running), and chat templates never rendered."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from spec_lsp.config import Settings
from spec_lsp.engine import (
    CancelToken,
    CompletionRequest,
    EngineError,
    SamplingParams,
    build_engine,
)
from spec_lsp.engine.backends import llama as llama_backend
from spec_lsp.engine.backends.base import detokenize
from spec_lsp.engine.backends.llama import LlamaModel

pytestmark = pytest.mark.real

PROGRAM = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(400))


def request(prefix: str, suffix: str = "", max_tokens: int = 16) -> CompletionRequest:
    return CompletionRequest(
        prefix=prefix,
        suffix=suffix,
        document_id="file:///faults.py",
        file_name="faults.py",
        language="python",
        max_tokens=max_tokens,
        sampling=SamplingParams(),
        version=1,
    )


def test_a_truncated_model_is_a_clear_error(smollm2_path, tmp_path):
    truncated = tmp_path / "half.gguf"
    truncated.write_bytes(smollm2_path.read_bytes()[: smollm2_path.stat().st_size // 2])
    with pytest.raises(EngineError) as caught:
        LlamaModel(str(truncated), n_ctx=512)
    message = str(caught.value)
    assert str(truncated) in message and "truncated" in message and "models pull" in message
    assert "contextSize" not in message  # not the memory message: the file is at fault


OVERWRITE = """
import sys
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, SamplingParams, build_engine

engine = build_engine(Settings(model=sys.argv[1], drafter="none", cache=False, contextSize=512))
engine.load()
def complete(prefix):
    request = CompletionRequest(prefix=prefix, suffix="", document_id="d", file_name="a.py",
        language="python", max_tokens=8, sampling=SamplingParams(), version=1)
    return engine.complete(request, CancelToken()).text
before = complete("def add(a, b):\\n")
with open(sys.argv[1], "r+b") as handle:  # overwritten in place, as cp or curl -o do
    handle.truncate(1000)
after = complete("def add(a, b):\\n")
print("same" if before == after else f"different: {before!r} {after!r}")
"""


def test_a_model_overwritten_in_place_while_loaded_keeps_serving(smollm2_path, tmp_path):
    """A mapped model file that shrinks kills the process with SIGBUS at the next decode; the
    weights are read into memory, so the loaded model keeps answering, the same answers."""
    live = tmp_path / "live.gguf"
    shutil.copyfile(smollm2_path, live)
    run = subprocess.run(
        [sys.executable, "-c", OVERWRITE, str(live)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])  # -7: SIGBUS
    assert run.stdout.strip() == "same"


def test_a_prompt_larger_than_the_context_is_trimmed_to_fit(smollm2_path):
    engine = build_engine(
        Settings(model=str(smollm2_path), drafter="none", cache=False, context_size=256)
    )
    engine.load()
    try:
        completion = engine.complete(request(PROGRAM + "def g", PROGRAM), CancelToken())
        assert completion.stats.prompt_tokens <= 256  # the window was cut to fit
    finally:
        engine.close()


def test_budgets_far_larger_than_the_context_are_trimmed_too(smollm2_path):
    """Budgets of 16,384 tokens each against a context of 256 (the document is ~7,000 tokens):
    the budgets are halved until the prompt and the answer fit; the prompt keeps the text
    nearest the cursor, and no less than half the room (halved only as far as needed)."""
    settings = Settings(
        model=str(smollm2_path),
        drafter="none",
        cache=False,
        context_size=256,
        prefix_tokens=16384,
        suffix_tokens=16384,
    )
    engine = build_engine(settings)
    engine.load()
    try:
        asked = request(PROGRAM + "def g", PROGRAM)
        stats = engine.complete(asked, CancelToken()).stats
        target = engine.parts.local.loaded.target  # type: ignore[union-attr]
        room = target.n_ctx - asked.max_tokens  # what the prompt may take, the answer aside
        assert stats.prompt_tokens_evaluated == stats.prompt_tokens  # (no cache: all of it)
        assert room // 2 < stats.prompt_tokens <= room
        assert stats.prompt_tokens < len(target.tokenize(PROGRAM)) // 10  # trimmed, not whole
        assert stats.tokens > 0  # and the model wrote after it
        window = detokenize(target, engine.parts.prompt_tokens(asked))
        assert window.endswith("def f399(x):\n    return x + 399\n\n\ndef g")
        assert "def f300(" not in window  # the far end of the document is left out
    finally:
        engine.close()


def test_a_context_larger_than_memory_is_refused_before_allocating(smollm2_path, monkeypatch):
    monkeypatch.setattr(llama_backend, "memory_available", lambda: 1 << 30)  # 1 GiB free
    with pytest.raises(EngineError) as caught:
        LlamaModel(str(smollm2_path), n_ctx=131072)  # 2.8 GiB of KV cache
    message = str(caught.value)
    assert "`contextSize`" in message and "131072" in message and "GiB" in message
    LlamaModel(str(smollm2_path), n_ctx=2048).close()  # 45 MiB: fine


# -- the server, with its address space capped: llama.cpp's allocation really fails ----------
CAPPED = (
    "import resource, runpy, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
    "sys.argv = ['spec-lsp', *sys.argv[1:]]; "
    "runpy.run_module('spec_lsp.cli', run_name='__main__')"
)


async def capped_server(model: Path) -> None:
    client = LanguageClient("test", "1")
    messages: list[lsp.ShowMessageParams] = []

    @client.feature(lsp.WINDOW_SHOW_MESSAGE)
    def show_message(params: lsp.ShowMessageParams) -> None:
        messages.append(params)

    await client.start_io(sys.executable, "-c", CAPPED, "serve", "--model", str(model))
    try:
        options = {"contextSize": 131072, "drafter": "none", "maxTokens": 8}
        await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(), initialization_options=options
            )
        )
        client.initialized(lsp.InitializedParams())

        async def stats() -> dict:
            return await asyncio.wait_for(
                client.protocol.send_request_async("specLsp/stats", None), 30
            )

        for _ in range(600):
            if messages:
                break
            await asyncio.sleep(0.1)
        (message,) = messages
        assert message.type == lsp.MessageType.Error
        assert "not enough memory" in message.message and "`contextSize`" in message.message
        numbers = await stats()
        assert not numbers.ready and "contextSize" in numbers.load_error

        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"specLsp": {"contextSize": 2048}})
        )
        for _ in range(600):
            if (await stats()).ready:
                break
            await asyncio.sleep(0.1)
        uri = "file:///capped.py"
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text="def add(")
            )
        )
        params = lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=0, character=8),
            context=lsp.InlineCompletionContext(
                trigger_kind=lsp.InlineCompletionTriggerKind.Invoked
            ),
        )
        result = await asyncio.wait_for(client.text_document_inline_completion_async(params), 30)
        assert result is not None and result.items  # recovered, no restart
        assert len(messages) == 1
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()


def test_out_of_memory_for_the_context_names_the_setting_and_the_server_recovers(smollm2_path):
    asyncio.run(asyncio.wait_for(capped_server(smollm2_path), 120))


# -- model metadata is data ------------------------------------------------------------------
def test_chat_templates_in_the_model_are_never_rendered(smollm2_path, monkeypatch):
    """SmolLM2-Instruct carries a Jinja chat template. llama-cpp-python compiles it (sandboxed)
    when loading; nothing in spec-lsp may render it: loading and completing render nothing."""
    import jinja2

    rendered: list[str] = []

    def refuse(self, *args, **kwargs):
        rendered.append(getattr(self, "name", None) or "template")
        raise AssertionError("a template was rendered")

    for method in ("render", "generate", "stream", "render_async", "generate_async"):
        monkeypatch.setattr(jinja2.Template, method, refuse)
    engine = build_engine(Settings(model=str(smollm2_path), drafter="ngram", context_size=512))
    engine.load()
    try:
        llm = engine.parts.local.loaded.target._llm  # type: ignore[union-attr]
        assert "tokenizer.chat_template" in llm.metadata  # the template is there to render
        assert engine.complete(request("def add(a, b):\n"), CancelToken()).text is not None
    finally:
        engine.close()
    assert rendered == []
