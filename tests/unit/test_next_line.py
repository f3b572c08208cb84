"""The next line on its way before the Enter: a single-line suggestion at the end of a line is
generated on to the end of the line after it (not shown), so that once the person has typed the
line as suggested and pressed Enter (with the editor's indentation), the next line is answered
from what the model already wrote, without a model call; on the fake corpus model."""

from __future__ import annotations

import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.cache.suggestions import SuggestionCache
from spec_lsp.engine.finishing.postprocess import Shaping

HEAD = "class Point:\n    def __init__(self, x, y):\n        self.x"


@pytest.fixture
def engine():
    eng = build_engine(Settings(drafter="ngram", precompute=False), backend="fake")
    eng.load()
    yield eng
    eng.close()


def req(prefix: str, suffix: str = "\n") -> CompletionRequest:
    return CompletionRequest(
        prefix=prefix, suffix=suffix, document_id="file:///p.py", language="python"
    )


def evaluated(engine) -> int:
    return engine.parts.local.loaded.target.evaluated


def test_a_line_end_generates_the_next_line_and_shows_its_own_line_only(engine):
    first = engine.complete(req(HEAD), CancelToken())
    assert first.text == " = x"  # (single-line: the line's end)
    assert first.raw_text.startswith(" = x\n        self.y = y")  # the next line, not shown
    before = evaluated(engine)
    nxt = engine.peek(req(HEAD + " = x\n        "))  # typed as suggested, Enter, indentation
    assert nxt is not None and nxt.text == "self.y = y"
    assert nxt.stats.cache == "typed_through" and evaluated(engine) == before


def test_the_line_typed_otherwise_or_dedented_gets_no_stale_next_line(engine):
    engine.complete(req(HEAD), CancelToken())
    assert engine.peek(req(HEAD + " = 0\n        ")) is None  # another line typed
    assert engine.peek(req(HEAD + " = x\n            ")) is None  # deeper than the model's
    short = engine.peek(req(HEAD + " = x\n    "))  # (less: the rest of the model's indentation)
    assert short is not None and short.text == "    self.y = y"
    assert engine.peek(req(HEAD + " = x\n        self.y = y\n        ")) is None  # (its end)


def test_text_after_the_cursor_keeps_the_line_alone():
    mid = Shaping(req("x = foo(", suffix=")\n"), lookahead=1)
    assert not mid.multiline and not mid.lookahead
    assert mid.stop_reached("a\n")
    end = Shaping(req("x = foo"), lookahead=1)
    assert not end.multiline and end.lookahead
    assert not end.stop_reached("(a)\n")  # the next line is still to come
    assert not end.stop_reached("(a)\ny = ")
    assert end.stop_reached("(a)\ny = 2\n")
    assert end.shown("(a)\ny = 2\n")[1] == "(a)"  # shown: its own line only
    assert Shaping(req("x = foo")).stop_reached("(a)\n")  # (lookahead 0: off)
    assert not Shaping(req("    "), lookahead=1).lookahead  # (multi-line there: the block is shown)


def test_the_cache_answers_past_the_shown_text_only_through_a_line_break():
    cache = SuggestionCache()
    at = req("a = 1\nb")
    cache.put(at, " = 2", raw=" = 2\nc = 3\n")
    hit = cache.lookup(req("a = 1\nb = 2\n"))
    assert hit is not None and hit.beyond and hit.rest == "c = 3\n"
    assert cache.lookup(req("a = 1\nb = 2\nc")).rest == " = 3\n"  # (and typed into it)
    assert not cache.lookup(req("a = 1\nb = ")).beyond  # within the shown text: as before
    cache.put(req("q"), "", raw="\n\n")  # a blank next line: nothing to answer with
    assert cache.lookup(req("q\n")) is None


def test_lookahead_off_generates_the_line_alone():
    eng = build_engine(
        Settings(drafter="ngram", precompute=False, lookahead_lines=0), backend="fake"
    )
    eng.load()
    try:
        first = eng.complete(req(HEAD), CancelToken())
        assert first.text == " = x" and "self.y" not in first.raw_text
        assert eng.peek(req(HEAD + " = x\n        ")) is None
    finally:
        eng.close()
