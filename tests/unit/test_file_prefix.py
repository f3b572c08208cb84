"""The file prefix (engine/file_prefix.py): places in one open file share the KV of the text
above them, evaluated while idle; on the fake byte-level model (no real model needed)."""

from __future__ import annotations

import threading

import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.backends.base import common_prefix_len
from spec_lsp.prompts.window import line_chunks, line_offset

LINES = [f"def function_{i}(x):\n    return x * {i} + len('{'ab' * (i % 7)}')\n" for i in range(90)]
TEXT = "".join(LINES)  # 180 lines, ~6,000 characters (tokens, on the byte-level fake model)
URI = "file:///module.py"


def make(**settings):
    # windows as long as the defaults' in a real tokenizer's tokens (~3 bytes each)
    settings = {"prefix_tokens": 1200, "suffix_tokens": 300, **settings}
    engine = build_engine(
        Settings(drafter="ngram", precompute=False, multiline="never", **settings), backend="fake"
    )
    engine.load()
    return engine


@pytest.fixture
def engine():
    eng = make()
    yield eng
    eng.close()


def at(line: int, text: str = TEXT) -> CompletionRequest:
    """A request at the start of `line`'s body (after its indentation), as a person asks."""
    start = line_offset(text, line)
    indent = len(text[start:]) - len(text[start:].lstrip(" "))
    cut = start + indent
    return CompletionRequest(
        text[:cut], text[cut:], document_id=URI, file_name="module.py", language="python"
    )


def grow(engine, cancel: CancelToken | None = None) -> int:
    total = 0
    while engine.idle_work:
        grown = engine.idle_step(cancel or CancelToken())
        total += grown
        if cancel is not None and cancel.cancelled:
            break
    return total


def test_line_chunks_cut_before_lines_with_text_and_join_back():
    text = "a = 1\n\n   \nb = 2\n    c\n\n"
    assert line_chunks(text) == ["a = 1\n\n   \n", "b = 2\n", "    c\n\n"]
    assert "".join(line_chunks(text)) == text
    assert line_chunks("\n\nx") == ["\n\n", "x"] and line_chunks("") == []


def test_a_later_place_evaluates_only_what_follows_the_shared_prefix(engine):
    first = engine.complete(at(101), CancelToken())
    assert first.stats.prompt_tokens_evaluated == first.stats.prompt_tokens  # cold
    assert engine.idle_work  # the file prefix waits for idle time
    assert grow(engine) > 0
    memory = engine.memory()["file_prefix"]
    assert memory["tokens"] > 0 and not memory["pending"]
    later = engine.complete(at(131), CancelToken())
    assert later.stats.cache == "file_prefix"
    # the same request without the file prefix evaluates its whole window
    without = make(file_prefix_tokens=0)
    without.complete(at(101), CancelToken())
    cold = without.complete(at(131), CancelToken())
    assert cold.stats.cache != "file_prefix"
    assert later.stats.prompt_tokens_evaluated < cold.stats.prompt_tokens_evaluated / 2
    assert later.stats.prompt_tokens > cold.stats.prompt_tokens  # it sees more of the file
    assert engine.stats()["file_prefix"]["prompts"] == 1


def test_the_anchored_prompt_starts_with_the_file_prefix(engine):
    engine.complete(at(101), CancelToken())
    grow(engine)
    prompts = engine.local.prompts
    prompt = engine.local.prompt(at(140))
    assert prompt.anchored and prompt.first_line == engine.stores.file_prefix.anchor
    snapshot = engine.stores.file_prefix.snapshot
    assert common_prefix_len(snapshot.tokens, prompt.tokens) == prompt.head
    window = prompts.build(at(140), engine.settings)
    assert prompt.first_line <= window.first_line  # never less of the file than the window


def test_the_first_ask_costs_what_the_window_costs(engine):
    cold = make(file_prefix_tokens=0).complete(at(120), CancelToken())
    first = engine.complete(at(120), CancelToken())
    assert first.stats.prompt_tokens_evaluated == cold.stats.prompt_tokens_evaluated
    assert first.text == cold.text


def test_an_edit_keeps_what_comes_before_it(engine):
    engine.complete(at(101), CancelToken())
    grow(engine)
    held = engine.memory()["file_prefix"]["tokens"]
    edit = line_offset(TEXT, 150)
    edited = TEXT[:edit] + "    # a comment\n" + TEXT[edit:]
    engine.document_changed(URI, edited)
    assert engine.idle_work
    regrown = grow(engine)
    anchor_offset = line_offset(TEXT, engine.stores.file_prefix.anchor)
    assert 0 < regrown < held - (edit - anchor_offset) + 200  # from the edit on, not all again
    later = engine.complete(at(155, edited), CancelToken())
    assert later.stats.cache == "file_prefix"


def test_a_place_above_the_anchor_moves_it(engine):
    engine.complete(at(160), CancelToken())
    grow(engine)
    anchor = engine.stores.file_prefix.anchor
    assert anchor > 20
    engine.complete(at(12), CancelToken())
    assert engine.stores.file_prefix.anchor < anchor and engine.idle_work


def test_a_request_stops_the_growth_between_chunks_and_keeps_what_was_done():
    engine = make()
    engine.complete(at(101), CancelToken())
    engine.local.loaded.target.delay_s = 0.002  # a slow model: growing takes a while
    cancel = CancelToken()
    done = threading.Event()

    def run() -> None:
        engine.idle_step(cancel)
        done.set()

    start = engine.local.loaded.target.evaluated
    threading.Thread(target=run).start()
    while engine.local.loaded.target.evaluated < start + 2_400:
        pass
    cancel.cancel("a request")
    assert done.wait(5)
    memory = engine.memory()["file_prefix"]
    assert memory["pending"] and 2_400 <= memory["tokens"] < 3_072  # kept, and more to do
    engine.local.loaded.target.delay_s = 0.0
    later = engine.complete(at(122), CancelToken())
    assert later.stats.cache == "file_prefix"
    assert later.stats.prompt_tokens_evaluated < later.stats.prompt_tokens / 4


def test_the_live_prompt_is_parked_for_the_next_keystroke(engine):
    request = at(120)
    engine.complete(request, CancelToken())
    grow(engine)  # replaced the live cache with the file prefix
    typed = CompletionRequest(
        request.prefix + "ret", request.suffix, document_id=URI, file_name="module.py"
    )
    again = engine.complete(typed, CancelToken())
    assert again.stats.prompt_tokens_evaluated <= 8  # the parked prompt came back
    assert again.stats.cache in ("state_pool", "kv_prefix", "typed_through")


def test_closing_the_document_frees_the_file_prefix(engine):
    engine.complete(at(101), CancelToken())
    grow(engine)
    assert engine.memory()["file_prefix"]["bytes"] > 0
    engine.document_closed(URI)
    memory = engine.memory()["file_prefix"]
    assert memory["bytes"] == 0 and memory["documents"] == 0 and not engine.idle_work


def test_off_with_no_budget_or_no_cache():
    for settings in ({"file_prefix_tokens": 0}, {"cache": False}):
        engine = make(**settings)
        engine.complete(at(101), CancelToken())
        assert not engine.idle_work and grow(engine) == 0


def test_the_anchor_is_a_stable_start():
    from spec_lsp.engine.file_prefix import choose_anchor

    count = len  # a token a character
    lines = "".join(f"line {i:05d} of files\n" for i in range(400))  # 20 characters a line
    # the text above the place fits 3/4 of the budget: the file's first line
    assert choose_anchor(lines[: 100 * 20], 90, count, budget=3000) == 0
    # a long file: a 16-line edge about half the budget (75 lines) above the place
    anchor = choose_anchor(lines[: 300 * 20], 290, count, budget=3000)
    assert anchor % 16 == 0 and 300 - 80 <= anchor <= 300 - 60
    # the same anchor wherever the cursor is on the lines the window starts at
    assert choose_anchor(lines[: 301 * 20], 290, count, budget=3000) == anchor


def test_the_context_block_waits_for_the_files_own_text(engine):
    """A block re-evaluates the file prefix from its head, so it is chosen only once the file's
    own text is evaluated (idle time the places need first); then it is, and the place's prompt
    opens with it."""
    tab = "file:///shapes.py"
    engine.document_changed(tab, "def polygon_area(points):\n    return 0.0\n")
    text = TEXT + "\n\ndef report(points):\n    area = polygon_area(points)\n    return area\n"
    engine.document_changed(URI, text)
    engine.complete(at(183, text), CancelToken())
    assert engine.stores.file_prefix.pending
    engine.stores.context.parse()
    engine.local._choose_block()
    assert engine.stores.file_prefix.block is None and engine.stores.context.chosen == 0
    grow(engine)
    block = engine.stores.file_prefix.block
    assert block is not None and not engine.stores.file_prefix.pending
    assert [c.reason for c in block.chunks] == ["definition:polygon_area"]
    assert engine.local.prompt(at(183, text)).block is block
