"""When a request is answered before its generation ends (engine/first_answer.py)."""

from __future__ import annotations

from spec_lsp.engine.first_answer import FirstAnswer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def watch(budget_s: float, show=lambda text: text.rstrip(" ")):
    clock, sent = Clock(), []
    first = FirstAnswer(sent.append, budget_s=budget_s, show=show, clock=clock)
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
