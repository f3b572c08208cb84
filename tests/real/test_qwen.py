"""A few checks on the default model, Qwen2.5-Coder-1.5B (slower: kept short)."""

from __future__ import annotations

import pytest

from spec_lsp.commands import DEMO_LOCATION, request_at
from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, build_engine

pytestmark = pytest.mark.qwen


@pytest.fixture(scope="module")
def engine(qwen_path):
    eng = build_engine(
        Settings(model=str(qwen_path), drafter="ngram", max_tokens=40, precompute=False)
    )
    eng.load()
    yield eng
    eng.close()


def test_fim_completion_of_the_demo_is_code(engine):
    settings = engine.settings
    completion = engine.complete(request_at(DEMO_LOCATION, settings), CancelToken())
    assert "quantity" in completion.text
    assert not completion.text.startswith(" ")  # the indentation before the cursor is not repeated
    assert completion.stats.prompt_tokens > 100


def test_ngram_speculation_equals_plain_decoding_on_qwen(engine):
    request = request_at(DEMO_LOCATION, engine.settings)
    engine.stores.suggestions.clear()  # a model call, not the suggestion cache
    spec = engine.complete(request, CancelToken())
    engine.update_settings(engine.settings.model_copy(update={"drafter": "none", "cache": False}))
    plain = engine.complete(request, CancelToken())
    engine.update_settings(engine.settings.model_copy(update={"drafter": "ngram", "cache": True}))
    assert spec.raw_text == plain.raw_text
    assert plain.stats.drafted == 0


def test_typing_one_character_reuses_the_prompt(engine):
    request = request_at(DEMO_LOCATION, engine.settings)
    first = engine.complete(request, CancelToken())
    engine.stores.suggestions.clear()
    typed = request.__class__(**{**request.__dict__, "prefix": request.prefix + first.text[:1]})
    second = engine.complete(typed, CancelToken())
    assert second.stats.prompt_tokens_evaluated <= 4
    # token healing: "i" continues as "if", not as " i" (now mid-line: one line)
    assert second.text == first.text[1:].split("\n")[0]
