"""Work carried between keystrokes, on the fake corpus model (no real model needed)."""

from __future__ import annotations

import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import Cancelled, CancelToken, Completion, CompletionRequest, build_engine
from spec_lsp.prompts.window import split_for_typing

SUFFIX = "\n\nprint(foo(3))\n"


@pytest.fixture
def engine():
    eng = build_engine(
        Settings(drafter="ngram", precompute=False, multiline="always"), backend="fake"
    )
    eng.load()
    yield eng
    eng.close()


def req(prefix: str, suffix: str = SUFFIX, doc: str = "file:///a.py") -> CompletionRequest:
    return CompletionRequest(prefix=prefix, suffix=suffix, document_id=doc, language="python")


def evaluated(engine) -> int:
    return engine.parts.local.loaded.target.evaluated


def test_typed_through_is_answered_without_the_model(engine):
    first = engine.complete(req("import sys\n\ndef fo"), CancelToken())
    assert first.text.startswith("o(x):")
    before = evaluated(engine)
    hit = engine.peek(req("import sys\n\ndef foo("))
    assert hit is not None and hit.typed == "o(" and hit.text == first.text[2:]
    assert hit.stats.cache == "typed_through"
    assert evaluated(engine) == before


def test_edit_above_the_cursor_never_serves_a_stale_suggestion(engine):
    engine.complete(req("import sys\n\ndef fo"), CancelToken())
    assert engine.peek(req("import os\n\ndef foo")) is None  # the prefix changed before the cursor


def test_edit_after_the_cursor_changes_the_key(engine):
    engine.complete(req("import sys\n\ndef fo"), CancelToken())
    assert engine.peek(req("import sys\n\ndef foo", suffix="\n\nprint(foo(4))\n")) is None


def test_undo_and_backspace(engine):
    shown = engine.complete(req("import sys\n\ndef fo"), CancelToken())
    assert engine.peek(req("import sys\n\ndef f")) is None  # backspace: before the suggestion
    again = engine.peek(req("import sys\n\ndef fo"))  # undo: back where it was shown
    assert again is not None and again.text == shown.text and again.typed == ""
    assert engine.peek(req("import sys\n\ndef fox")) is None  # typed something else


def test_keystroke_evaluates_only_the_change(engine):
    prefix = "import sys\n\n" * 20 + "def fo"
    engine.complete(req(prefix), CancelToken())
    second = engine.complete(req(prefix + "o(x"), CancelToken(), kind="")
    assert second.stats.cache in ("typed_through", "kv_prefix")
    third = engine.complete(req(prefix + "o(y"), CancelToken())  # not typed-through: a model call
    assert third.stats.cache == "kv_prefix"
    assert third.stats.prompt_tokens_evaluated <= 4 + 2


def test_switching_documents_restores_the_saved_state(engine):
    a, b = "import sys\n\n" * 30 + "def fo", "import os\n\n" * 30 + "def ad"
    engine.complete(req(a, doc="file:///a.py"), CancelToken())
    engine.complete(req(b, doc="file:///b.py"), CancelToken())
    back = engine.complete(req(a + "o(y", doc="file:///a.py"), CancelToken())
    assert back.stats.cache == "state_pool"
    assert back.stats.prompt_tokens_evaluated <= 6


def test_last_generation_is_the_next_draft(engine):
    prefix = "import sys\n\ndef fo"
    engine.complete(req(prefix), CancelToken())
    engine.stores.suggestions.clear()  # force a model call for the next keystroke
    second = engine.complete(req(prefix + "o"), CancelToken())
    assert second.stats.continuation_drafted > 0
    assert second.stats.target_passes < second.stats.tokens


def test_cancel_in_the_middle_of_a_cached_continuation(engine):
    prefix = "import sys\n\ndef fo"
    expected = engine.complete(req(prefix), CancelToken()).text
    engine.stores.suggestions.clear()
    token = CancelToken()
    rounds = []

    def cancel_after_first_round(request, produced):
        rounds.append(produced)
        token.cancel("newer request")

    engine.stores.in_flight.track = cancel_after_first_round
    with pytest.raises(Cancelled):
        engine.complete(req(prefix + "o"), token)
    del engine.stores.in_flight.track
    assert rounds  # it was cancelled between rounds, not before starting
    engine.stores.suggestions.clear()
    assert engine.complete(req(prefix + "o"), CancelToken()).text == expected[1:]


def test_in_flight_generation_is_extended_not_cancelled(engine):
    prefix = "import sys\n\ndef fo"
    seen = []

    original = engine.stores.in_flight.track

    def probe(request, produced, logprobs=()):
        original(request, produced, logprobs)
        seen.append(
            (
                produced,
                engine.extends_in_flight(req(prefix + "o(")),
                engine.extends_in_flight(req(prefix + "x")),
            )
        )

    engine.stores.in_flight.track = probe
    engine.complete(req(prefix), CancelToken())
    assert seen[0] == ("", True, True)  # nothing written yet: any key may be what it writes
    written = [(extends, other) for produced, extends, other in seen if produced]
    assert written and all(extends for extends, _ in written)
    assert not any(other for _, other in written)  # it wrote "o(", not "x"


def test_caching_off_starts_cold(engine):
    engine.update_settings(engine.settings.model_copy(update={"cache": False}))
    prefix = "import sys\n\ndef fo"
    engine.complete(req(prefix), CancelToken())
    again = engine.complete(req(prefix + "o"), CancelToken())
    assert again.stats.cache == "off"
    assert again.stats.prompt_tokens_evaluated == again.stats.prompt_tokens


def test_precompute_fills_the_next_suggestion(engine):
    engine.update_settings(engine.settings.model_copy(update={"precompute": True}))
    request = req("import sys\n\ndef ad")
    shown = engine.complete(request, CancelToken())
    engine.precompute(request, shown, CancelToken())
    assert engine.totals.cache_hits["precompute"] == 1
    accepted = req(request.prefix + shown.text)
    fresh = build_engine(engine.settings, backend="fake")
    fresh.load()
    direct = fresh.complete(accepted, CancelToken())
    hit = engine.peek(accepted)
    assert (hit.text if hit else "") == direct.text


@pytest.mark.parametrize(
    ("lines_before", "expected_middle"),
    [(0, "def fo"), (1, "x = 1\ndef fo"), (8, "def fo"), (9, "x = 1\ndef fo")],
)
def test_split_keeps_typing_an_append(lines_before, expected_middle):
    prefix = "a = 0\n" * 6 + "x = 1\ndef fo"
    head, middle = split_for_typing(prefix, lines_before=lines_before)
    assert head + middle == prefix
    assert middle == expected_middle
    assert split_for_typing(prefix + "o(", lines_before=lines_before)[0] == head


def test_a_lookup_builds_keys_only_where_a_suggestion_may_be(monkeypatch):
    """A lookup looks back over up to 256 characters typed: building a key for each end (a
    slice of the text before the cursor, the suffix hashed) made lookups on the event loop the
    server's bottleneck at 200 keys/s. Only ends where an entry was put get a key."""
    from spec_lsp.engine.cache import suggestions as module

    cache = module.SuggestionCache()
    built = []
    real_key = module._key
    monkeypatch.setattr(module, "_key", lambda *args: built.append(args[2]) or real_key(*args))
    text = "x = 1\n" * 5000
    request = req(text + "def fo")
    assert cache.lookup(request) is None and built == []
    cache.put(req(text + "def f"), "oo(x):")
    built.clear()
    assert cache.lookup(req(text + "def fo"))[:2] == ("o", "o(x):")
    assert len(built) == 1


def test_a_line_of_the_running_generation_carries_its_token_probabilities(engine):
    """What the gate reads of an in-flight answer: the generation's text so far and its
    tokens' log probabilities (the running list, as it grows)."""
    running = req("import sys\n\ndef fo")
    logprobs = [-0.1, -0.2]
    engine.stores.in_flight.track(running, "o(x):\n    ret", logprobs)
    logprobs.append(-0.3)  # (a token committed since)
    line = engine.from_in_flight(req("import sys\n\ndef foo"))
    assert line is not None and line.text == "(x):"
    assert line.raw_text == "o(x):\n    ret" and line.stats.token_logprobs == [-0.1, -0.2, -0.3]
    engine.stores.in_flight.clear()
    assert engine.from_in_flight(req("import sys\n\ndef foo")) is None


def test_a_complete_line_of_the_running_generation_answers_a_request_typed_into_it(engine):
    running = req("import sys\n\ndef fo")
    engine.stores.in_flight.track(running, "o(x):\n    ret")
    line = engine.from_in_flight(req("import sys\n\ndef foo"))
    assert line is not None and line.text == "(x):" and line.stats.cache == "in_flight"
    assert engine.from_in_flight(req("import sys\n\ndef foo(x):\n    r")) is None  # no line yet
    assert engine.from_in_flight(req("import sys\n\ndef fox")) is None  # typed something else
    engine.stores.in_flight.clear()
    assert engine.from_in_flight(req("import sys\n\ndef foo")) is None


def test_a_first_answer_tells_how_its_prompt_was_served(engine):
    """The answer the editor gets first (at the first complete line) says where its prompt came
    from, as the whole completion does (it said 'none' before the generation had ended)."""
    engine.parts.local.loaded.target.delay_s = (
        0.03  # decoding takes time: the first line is sent early
    )
    early: list[Completion] = []
    whole = engine.complete(req("class Po", ""), CancelToken(), reply=early.append)
    assert early, "no first answer before the generation ended"
    assert early[0].stats.cache == whole.stats.cache == "cold"
    # and its timing so far: when it was sent, the decoding before it (they were 0 and None)
    first = early[0].stats
    assert first.first_answer_seconds == whole.stats.first_answer_seconds
    assert 0 < first.decode_seconds < whole.stats.decode_seconds
    assert 0 < first.tokens < whole.stats.tokens
    assert len(first.k_trace) == first.rounds < whole.stats.rounds  # a copy, not the live list
