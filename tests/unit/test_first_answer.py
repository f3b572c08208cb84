"""When a request is answered before its generation ends (engine/finishing/first_answer.py)."""

from __future__ import annotations

import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, Completion, CompletionRequest, build_engine
from spec_lsp.engine.finishing.first_answer import FirstAnswer, word_boundary
from spec_lsp.engine.stats import EngineTotals
from spec_lsp.engine.types import DecodeStats


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def watch(budget_s: float, show=lambda text: text.rstrip(" "), partial: bool = True):
    clock, sent = Clock(), []
    first = FirstAnswer(sent.append, budget_s=budget_s, show=show, partial=partial, clock=clock)
    return first, clock, sent


def test_the_first_complete_line_is_answered_once():
    first, clock, sent = watch(10.0)
    first.progress("    def __init__(self")
    assert sent == []
    clock.now = 0.4
    first.progress("    def __init__(self, x, y):\n        se")
    first.progress("    def __init__(self, x, y):\n        self.x = x\n")
    assert sent == ["    def __init__(self, x, y):"] and first.seconds == 0.4


def test_a_leading_newline_is_not_a_line_yet():
    first, clock, sent = watch(10.0)
    first.progress("\n")
    first.progress("\n    return x")
    assert sent == []
    clock.now = 0.3
    first.progress("\n    return x\n")
    assert sent == ["\n    return x"]


def test_a_block_written_within_the_grace_is_answered_whole():
    first, clock, sent = watch(10.0)
    first.progress("if x:")
    clock.now = 0.1
    first.progress("if x:\n    y = 1\n")  # a fast backend: lines come quicker than the grace
    assert sent == []
    clock.now = 0.26
    first.progress("if x:\n    y = 1\n    z = 2\nw")
    assert sent == ["if x:\n    y = 1\n    z = 2"]


def test_when_the_budget_runs_out_the_partial_line_is_answered():
    first, clock, sent = watch(1.0)
    clock.now = 5.0  # the prompt's evaluation: not decoding, the budget has not begun
    first.progress("x = compute_")
    clock.now = 5.9
    first.progress("x = compute_some")
    assert sent == []
    clock.now = 6.0
    first.progress("x = compute_something(")
    assert sent == ["x = compute_something("] and first.seconds == 6.0


def test_nothing_to_show_is_not_an_answer():
    first, clock, sent = watch(0.5, show=lambda text: "")  # post-processing left nothing
    clock.now = 2.0
    first.progress("ab\ncd\n")
    assert sent == [] and first.sent is None


def test_without_a_reply_nothing_is_sent():
    first = FirstAnswer(None, budget_s=1.0, show=str)
    first.progress("a line\n")
    assert first.sent is None


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        # a word, identifier or keyword still being written
        ("        self.linejunk = line", "        self.linejunk = "),
        ("bound1 = Fraction(p0+k*p1, q0", "bound1 = Fraction(p0+k*p1, "),
        ("    ret", "    "),
        ("self._num", "self."),
        ("a+b", "a+"),  # (`+` is whole: `b` follows it)
        ("x = $el", "x = "),
        ("# the café", "# the "),
        # a number: its `.`, exponent and sign included
        ("x = 3.", "x = "),
        ("x = 3.14", "x = "),
        ("x = 1e-", "x = "),
        ("x = 1e-5", "x = "),
        ("x = .5", "x = "),
        ("n = 0x1F", "n = "),
        ("x-1", "x-"),
        # an operator that may grow: `==`, `->`, `**`, `//`, `...`, `:=`
        ("if x =", "if x "),
        ("x==", "x"),
        ("def f(x) -", "def f(x) "),
        ("a *", "a "),
        ("self.", "self"),
        ("def f(x):", "def f(x)"),
        # already at a boundary: whole
        ("return (self._numerator,", "return (self._numerator,"),
        ("x = f(a)", "x = f(a)"),
        ("x = ", "x = "),
        ("", ""),
        # only the last line: the lines before it are complete
        ("a = 1\nb = c", "a = 1\nb = "),
        ("a = 1\n", "a = 1\n"),
    ],
)
def test_word_boundary(text, whole):
    assert word_boundary(text) == whole


def test_the_budget_never_cuts_inside_a_word():
    first, clock, sent = watch(1.0)
    first.progress("        self.linejunk = li")
    clock.now = 1.0
    first.progress("        self.linejunk = line")  # `linejunk` is still being written
    assert sent == ["        self.linejunk ="]
    assert first.cut and first.dropped == len("line")


def test_with_nothing_before_a_boundary_the_budget_waits():
    first, clock, sent = watch(1.0)
    first.progress("    ")
    clock.now = 1.5
    first.progress("    bound")  # nothing whole: no answer yet
    first.progress("    bound1")
    assert sent == []
    first.progress("    bound1 = Frac")
    assert sent == ["    bound1 ="] and first.seconds == 1.5 and first.dropped == len("Frac")


def test_a_line_that_needs_no_cut_is_answered_as_it_is():
    first, clock, sent = watch(1.0)
    first.progress("    return (")
    clock.now = 1.0
    first.progress("    return (self._numerator,")
    assert sent == ["    return (self._numerator,"] and first.cut and first.dropped == 0


def test_an_invoked_request_gets_its_first_line_whole():
    first, clock, sent = watch(1.0, partial=False)
    first.progress("    self.linejunk")
    clock.now = 5.0  # long past the budget: no partial line
    first.progress("    self.linejunk = line")
    first.progress("    self.linejunk = linejunk")
    assert sent == []
    first.progress("    self.linejunk = linejunk\n    se")
    assert sent == ["    self.linejunk = linejunk"] and not first.cut and first.dropped == 0


def test_the_stats_say_whether_and_where_the_budget_cut():
    first, clock, sent = watch(1.0)
    first.progress("x = compute")
    clock.now = 1.0
    first.progress("x = compute_some")
    stats = DecodeStats()
    first.describe(stats)
    assert stats.first_answer_seconds == 1.0 and stats.first_answer_cut
    assert stats.first_answer_chars == len("x =") and stats.first_answer_dropped_chars == 12
    totals = EngineTotals()
    totals.record(stats)
    whole = DecodeStats(first_answer_seconds=0.5, first_answer_chars=20)  # a complete line
    totals.record(whole)
    totals.record(DecodeStats())  # answered at the end
    assert totals.snapshot()["first_answers"] == {
        "answered": 2,
        "cut": 1,
        "cut_chars": 3,
        "dropped_chars": 12,
    }


# -- on the fake corpus model, slowed: a budget of 1 ms runs out at the second model pass --------
@pytest.fixture
def slow_engine():
    engine = build_engine(
        Settings(drafter="none", precompute=False, answer_budget_ms=1), backend="fake"
    )
    engine.load()
    engine.parts.local.loaded.target.delay_s = 0.02  # a busy machine: one byte per 20 ms pass
    yield engine
    engine.close()


def early_and_whole(engine, prefix: str, *, invoked: bool) -> tuple[list[Completion], Completion]:
    request = CompletionRequest(prefix, document_id="file:///a.py", invoked=invoked)
    early: list[Completion] = []
    whole = engine.complete(request, CancelToken(), reply=early.append)
    return early, whole


def identifier(char: str) -> bool:
    return char.isalnum() or char == "_"


@pytest.mark.parametrize(
    "prefix",
    ["class Point:\n", "class Point:\n    def __init__(self, x, y):\n", "def greet(name):\n"],
)
def test_an_automatic_answer_cut_by_the_budget_ends_at_a_word_boundary(slow_engine, prefix):
    early, whole = early_and_whole(slow_engine, prefix, invoked=False)
    assert len(early) == 1 and early[0].stats.first_answer_cut and whole.stats.first_answer_cut
    shown, line = early[0].text, whole.text.split("\n")[0]
    assert line.startswith(shown) and len(shown) < len(line)  # a partial first line
    # never inside an identifier that the generation goes on with
    assert not (identifier(shown[-1]) and identifier(line[len(shown)])), (shown, line)
    assert whole.stats.first_answer_chars == len(shown)


def test_an_invoked_answer_is_its_first_line_whole(slow_engine):
    early, whole = early_and_whole(slow_engine, "class Point:\n", invoked=True)
    assert len(early) == 1 and early[0].text == whole.text.split("\n")[0]
    assert early[0].text == "    def __init__(self, x, y):" and "\n" in whole.text
    assert not whole.stats.first_answer_cut and whole.stats.first_answer_dropped_chars == 0
