"""The file prefix (engine/local/file_prefix.py): places in one open file share the KV of the text
above them, evaluated while idle; on the fake byte-level model (no real model needed)."""

from __future__ import annotations

import threading

import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.backends.base import common_prefix_len
from spec_lsp.engine.local.file_prefix import OPENED_TOKENS
from spec_lsp.prompts.window import line_chunks, line_offset

LINES = [f"def function_{i}(x):\n    return x * {i} + len('{'ab' * (i % 7)}')\n" for i in range(90)]
TEXT = "".join(LINES)  # 180 lines, ~6,000 characters (tokens, on the byte-level fake model)
URI = "file:///module.py"


def make(**settings):
    # windows as long as the defaults' in a real tokenizer's tokens (~3 bytes each)
    # (the context block on, as a person who turns it on has it: contextTokens 640)
    settings = {"prefix_tokens": 1200, "suffix_tokens": 300, "context_tokens": 640, **settings}
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
    prompts = engine.parts.local.prompts
    prompt = engine.parts.local.prompt(at(140))
    assert prompt.anchored and prompt.first_line == engine.parts.file_prefix.anchor
    snapshot = engine.parts.file_prefix.snapshot
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
    anchor_offset = line_offset(TEXT, engine.parts.file_prefix.anchor)
    assert 0 < regrown < held - (edit - anchor_offset) + 200  # from the edit on, not all again
    later = engine.complete(at(155, edited), CancelToken())
    assert later.stats.cache == "file_prefix"


def test_a_place_above_the_anchor_moves_it(engine):
    engine.complete(at(160), CancelToken())
    grow(engine)
    anchor = engine.parts.file_prefix.anchor
    assert anchor > 20
    engine.complete(at(12), CancelToken())
    assert engine.parts.file_prefix.anchor < anchor and engine.idle_work


def test_a_request_stops_the_growth_between_chunks_and_keeps_what_was_done():
    engine = make()
    engine.complete(at(101), CancelToken())
    engine.parts.local.loaded.target.delay_s = 0.002  # a slow model: growing takes a while
    cancel = CancelToken()
    done = threading.Event()

    def run() -> None:
        engine.idle_step(cancel)
        done.set()

    start = engine.parts.local.loaded.target.evaluated
    threading.Thread(target=run).start()
    while engine.parts.local.loaded.target.evaluated < start + 2_400:
        pass
    cancel.cancel("a request")
    assert done.wait(5)
    memory = engine.memory()["file_prefix"]
    assert memory["pending"] and 2_400 <= memory["tokens"] < 3_072  # kept, and more to do
    engine.parts.local.loaded.target.delay_s = 0.0
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
        # (no cost profile to measure either: alone, no earlier test has cached the fake's)
        engine = make(**settings, draft_policy="fixed")
        engine.complete(at(101), CancelToken())
        assert not engine.idle_work and grow(engine) == 0


def test_the_anchor_is_a_stable_start():
    from spec_lsp.engine.local.file_prefix import choose_anchor

    count = len  # a token a character
    lines = "".join(f"line {i:05d} of files\n" for i in range(400))  # 20 characters a line
    # the text above the place fits 3/4 of the budget: the file's first line
    assert choose_anchor(lines[: 100 * 20], 90, count, budget=3000) == 0
    # a long file: a 16-line edge about half the budget (75 lines) above the place
    anchor = choose_anchor(lines[: 300 * 20], 290, count, budget=3000)
    assert anchor % 16 == 0 and 300 - 80 <= anchor <= 300 - 60
    # the same anchor wherever the cursor is on the lines the window starts at
    assert choose_anchor(lines[: 301 * 20], 290, count, budget=3000) == anchor


def test_the_block_is_chosen_before_the_text_and_each_token_evaluated_once(engine):
    """A place's block comes before the file prefix's text is evaluated: block and text are
    evaluated in one pass, no token twice; the place's prompt then opens with the block."""
    tab(engine, "file:///shapes.py", SHAPES)
    text = TEXT + "\n\ndef report(points):\n    area = polygon_area(points)\n    return area\n"
    engine.document_changed(URI, text)
    engine.complete(at(183, text), CancelToken())
    fp = engine.parts.file_prefix
    assert fp.pending and fp.block is None
    grow(engine)  # (and the place prewarmed with the block)
    block = fp.block
    assert block is not None and not fp.pending and fp.ready
    assert [c.reason for c in block.chunks] == ["definition:polygon_area"]
    assert fp.report()["evaluated"] <= len(fp.snapshot.tokens)  # (none twice)
    assert engine.parts.local.prompt(at(183, text)).block is block


SHAPES = "def polygon_area(points):\n    return 0.0\n"
FOCUSED = "from shapes import polygon_area\n\n" + TEXT  # imported, not used yet


def opened(engine, text: str = FOCUSED, uri: str = URI) -> None:
    """didOpen: the document's text, no cursor (as the server passes it on)."""
    engine.document_changed(uri, text)
    engine.document_opened(
        CompletionRequest("", text, document_id=uri, file_name=uri.rsplit("/", 1)[-1])
    )


def tab(engine, uri: str, text: str) -> None:
    """Another document open beside it (not focused: its text only)."""
    engine.document_changed(uri, text)


def test_a_file_opened_gets_its_block_before_any_edit_or_request(engine):
    """The block is chosen from what the file says as a whole (a name imported and not used
    yet) as the document opens, and evaluated first: ready before any request or edit."""
    tab(engine, "file:///shapes.py", SHAPES)
    opened(engine)
    fp = engine.parts.file_prefix
    assert fp.document == URI and fp.pending
    evaluated = grow(engine)
    assert fp.block is not None and fp.ready and fp.report()["block_ready_s"] is not None
    assert [c.reason for c in fp.block.chunks] == ["definition:polygon_area"]
    assert evaluated == len(fp.snapshot.tokens)  # block and text, each token once
    assert fp.report()["focused"] == 1
    # no place known yet: the file's first OPENED_TOKENS only (switching files costs less)
    assert len(fp.snapshot.tokens) - fp.snapshot_head <= OPENED_TOKENS < len(FOCUSED)
    # a request later in the file uses it: its prompt opens with the block, the block's KV held
    request = at(100, FOCUSED)
    prompt = engine.parts.local.prompt(request)
    assert prompt.block is fp.block
    head = len(engine.parts.local.prompts.file_prefix("", request, 0, 1 << 20, fp.block))
    assert fp.held(prompt.tokens) >= head
    # a place known: the rest grows while idle
    engine.complete(request, CancelToken())
    grow(engine)
    assert len(fp.snapshot.tokens) - fp.snapshot_head > OPENED_TOKENS


def test_another_file_opened_takes_the_file_prefix(engine):
    opened(engine, TEXT, "file:///first.py")
    grow(engine)
    opened(engine)
    fp = engine.parts.file_prefix
    assert fp.document == URI and fp.pending and fp.snapshot is None


def _grown_with_a_block(engine) -> list[int]:
    tab(engine, "file:///shapes.py", SHAPES)
    opened(engine)
    grow(engine)
    return list(engine.parts.file_prefix.snapshot.tokens)


def _another_tab(engine, text: str) -> None:
    """A tab opened meanwhile whose code is like the file's: the block changes (its similar
    chunk joins), the file's text does not."""
    tab(engine, "file:///circles.py", text)


CIRCLES = "def function_3(x):\n    return x * 3 + len('ababab')\n"


def test_a_new_block_under_an_evaluated_text_evaluates_only_the_blocks_tokens(engine):
    engine.parts.file_prefix.shift_blocks = True  # (off by default: it changes answers)
    before = _grown_with_a_block(engine)
    fp, target = engine.parts.file_prefix, engine.parts.local.loaded.target
    old_head, old_block = fp.snapshot_head, fp.block
    _another_tab(engine, CIRCLES)
    evaluated = grow(engine)
    after = fp.snapshot.tokens
    assert fp.block is not None and not fp.block.same(old_block) and fp.ready
    head = fp.snapshot_head
    # the text's KV moved behind the new head (less of it: the block takes more of the budget);
    # only the head's new tokens evaluated
    text = after[head:]
    assert len(text) > 1000 and text == tuple(before[old_head : old_head + len(text)])
    assert evaluated <= head - common_prefix_len(before, after) + 1
    assert list(target.tokens) == list(after)
    assert fp.report()["moved"] >= len(text)


@pytest.mark.parametrize("kv_shift", [True, False])
def test_by_default_or_without_kv_shift_a_new_block_evaluates_the_text_again(kv_shift):
    engine = make(kv_shift=kv_shift)
    engine.parts.file_prefix.shift_blocks = not kv_shift  # (on: without kvShift, no matter)
    try:
        before = _grown_with_a_block(engine)
        fp = engine.parts.file_prefix
        old_head = fp.snapshot_head
        _another_tab(engine, CIRCLES)
        evaluated = grow(engine)
        text = fp.snapshot.tokens[fp.snapshot_head :]
        assert evaluated >= len(fp.snapshot.tokens) - old_head > 1000
        assert text == tuple(before[old_head : old_head + len(text)])
    finally:
        engine.close()


def test_a_block_put_in_is_resumed_after_a_cancel(engine):
    """Typing cancels idle work at each key: the block's tokens evaluated so far are kept, and
    the next idle step goes on from there."""
    engine.parts.file_prefix.shift_blocks = True
    before = _grown_with_a_block(engine)
    fp, target = engine.parts.file_prefix, engine.parts.local.loaded.target
    _another_tab(engine, "".join(CIRCLES.replace("3", str(i)) for i in range(3, 12)))
    cancel = CancelToken()
    evaluate, calls = target.evaluate, []

    def counting(tokens, **kw):  # the third evaluation (a chunk of the block) is cancelled
        calls.append(len(tokens))
        if len(calls) == 3:
            cancel.cancel("a key")
        return evaluate(tokens, **kw)

    target.evaluate = counting
    first = engine.idle_step(cancel)
    target.evaluate = evaluate
    assert fp.swapping is not None and fp.pending
    rest = grow(engine)
    assert fp.swapping is None and not fp.pending and fp.ready
    assert list(target.tokens) == list(fp.snapshot.tokens)
    assert first + rest <= fp.snapshot_head - common_prefix_len(before, target.tokens) + 2


OTHER = "file:///other.py"


def test_going_back_to_a_file_evaluates_nothing_again(engine):
    """A -> B -> A: A's block and text, evaluated at its first focus, are kept while B has the
    focus (the state pool) and come back with A: the second visit evaluates no token, and its
    block is the one its text was evaluated after, ready at once."""
    tab(engine, "file:///shapes.py", SHAPES)
    opened(engine)
    fp = engine.parts.file_prefix
    first = grow(engine)
    block, tokens = fp.block, fp.snapshot.tokens
    assert block is not None and first == len(tokens)
    opened(engine, TEXT.replace("function_", "helper_"), OTHER)
    assert grow(engine) > 0  # B's first visit
    assert engine.memory()["saved_states"]["file_prefixes"] == 1
    engine.document_opened(CompletionRequest("", FOCUSED, document_id=URI, file_name="module.py"))
    assert grow(engine) == 0  # A again: nothing evaluated
    assert fp.document == URI and fp.block is block and fp.ready
    assert fp.snapshot.tokens == tokens and fp.report()["restored"] == 1
    assert engine.stores.context.block is block  # (the context provider's choice again)
    # its requests use it: the prompt opens with the block, held in the KV
    prompt = engine.parts.local.prompt(at(100, FOCUSED))
    assert prompt.block is block and fp.held(prompt.tokens) >= fp.snapshot_head
    # and B's came to the pool in turn: back to it, nothing evaluated either
    opened(engine, TEXT.replace("function_", "helper_"), OTHER)
    assert grow(engine) == 0


def test_a_file_edited_while_away_evaluates_from_the_edit_on(engine):
    opened(engine)
    fp = engine.parts.file_prefix
    grow(engine)
    opened(engine, TEXT.replace("function_", "helper_"), OTHER)
    grow(engine)
    edited = FOCUSED.replace("function_5(", "changed_5(")  # (within its first tokens)
    engine.document_changed(URI, edited)
    engine.document_opened(CompletionRequest("", edited, document_id=URI, file_name="module.py"))
    kept = len(fp.snapshot.tokens)
    evaluated = grow(engine)
    assert 0 < evaluated < kept  # from the changed line on
    assert list(engine.parts.local.loaded.target.tokens) == list(fp.snapshot.tokens)


def test_kept_file_prefixes_are_bounded(engine):
    """The state pool keeps the file prefixes of its last DOCUMENTS documents; an older one is
    evaluated again, and closing a document drops its kept state."""
    pool = engine.stores.states
    uris = [f"file:///m{i}.py" for i in range(pool.size + 2)]
    for uri in uris:
        opened(engine, TEXT.replace("function_", uri[-5:-3] + "_"), uri)
        grow(engine)
    memory = engine.memory()["saved_states"]
    assert memory["file_prefixes"] == pool.size and memory["bytes"] <= pool.max_bytes
    assert pool.saved("file_prefix") == uris[1:-1]
    engine.document_closed(uris[1])
    assert uris[1] not in pool.saved("file_prefix")
    opened(engine, TEXT.replace("function_", uris[0][-5:-3] + "_"), uris[0])
    assert grow(engine) > 0  # the oldest was dropped: evaluated again
