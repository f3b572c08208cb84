"""The file prefix on real models: the KV restored from its snapshot is the KV of the text (the
next token's logits match a cold evaluation of the same prompt), and on Qwen's tokenizer the
line-chunk tokenization gives exactly the tokens of the whole text."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np
import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.backends.base import sync
from spec_lsp.engine.backends.llama import LlamaModel
from spec_lsp.engine.local.text_tokens import chunks_are_exact
from spec_lsp.prompts.window import line_chunks, line_offset

URI = "file:///stdlib/textwrap.py"


def stdlib(name: str) -> str:
    return (Path(sysconfig.get_paths()["stdlib"]) / name).read_text()


def at(text: str, line: int) -> CompletionRequest:
    start = line_offset(text, line)
    cut = start + len(text[start:]) - len(text[start:].lstrip(" "))
    return CompletionRequest(text[:cut], text[cut:], document_id=URI, file_name="textwrap.py")


def test_the_snapshot_holds_the_kv_of_the_text(smollm2_path):
    engine = build_engine(
        Settings(
            model=str(smollm2_path),
            drafter="none",
            precompute=False,
            file_prefix_tokens=1024,
            prefix_tokens=160,
            suffix_tokens=32,
            max_tokens=4,
        )
    )
    engine.load()
    text = stdlib("textwrap.py")
    engine.complete(at(text, 150), CancelToken())
    while engine.idle_work:
        engine.idle_step(CancelToken())
    assert engine.memory()["file_prefix"]["tokens"] > 600
    loaded = engine.parts.local.loaded
    later = at(text, 175)
    prompt = engine.parts.local.prompt(later)
    assert prompt.anchored
    assert engine.parts.local.prepare_caches(URI, prompt) == "file_prefix"
    warm, evaluated = sync(loaded.target, prompt.tokens)
    assert evaluated < len(prompt.tokens) / 3
    loaded.target.truncate(0)
    cold, evaluated = sync(loaded.target, prompt.tokens)
    assert evaluated == len(prompt.tokens)
    assert int(np.argmax(warm)) == int(np.argmax(cold))
    # batch splits differ (16-token growth chunks, 64-token prompt chunks): float noise only
    assert float(np.max(np.abs(warm - cold))) < 1.0, float(np.max(np.abs(warm - cold)))
    engine.close()


@pytest.mark.qwen
def test_line_chunks_tokenize_as_the_whole_text_on_qwen(qwen_path):
    model = LlamaModel(str(qwen_path), n_ctx=256)
    try:
        assert chunks_are_exact(model)
        for name in ("textwrap.py", "json/decoder.py"):
            text = stdlib(name)[:20_000]
            chunked = [t for chunk in line_chunks(text) for t in model.tokenize(chunk)]
            assert chunked == model.tokenize(text), name
    finally:
        model.close()
