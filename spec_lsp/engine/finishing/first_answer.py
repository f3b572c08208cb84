"""The latency budget: answer before the generation ends.

A multi-line suggestion of 64 tokens takes seconds to decode on a CPU, and the person sees
nothing until it is done. So the request is answered as soon as its first line is complete (and
BLOCK_GRACE_S of decoding have passed, so that a fast backend's whole block is shown whole), or
once `budget_s` of decoding have passed with something to show (then with what is ready: the
complete lines, else the partial line up to its last word boundary, `word_boundary`: a word,
number or operator the generation may still be writing is held back, so that the ghost text
never ends inside an identifier, `self.linejunk = line` of `self.linejunk = linejunk`). A
request the person asked for (Invoked: they wait for it) is never cut: it is answered at its
first complete line, or at the end. The budget counts from the first generated text: the
prompt's evaluation before it is not decoding, and on a slow machine it alone would use the
budget up and every answer would be a partial line. The generation goes on in the background: its whole
text goes into the suggestion cache, so the next request at the accepted or typed position,
and the lines after an accepted first one, are answered from there (or wait for the running
generation, which already produced them: in-flight reuse).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from spec_lsp.engine.types import DecodeStats

Reply = Callable[[str], None]
# complete lines wait this long into decoding before they are sent early: a backend that writes
# a whole block by then (a GPU, a fast server, the fake model) shows it whole, as the editor
# draws a block; on a CPU the first line takes longer than this anyway
BLOCK_GRACE_S = 0.25
# what may still grow at the end of the text so far: a number (`3.` of `3.14`, `1e-` of `1e-5`),
# an identifier, keyword or word (`line` of `linejunk`), an operator (`=` of `==`, `-` of `->`,
# `*` of `**`, `.` of `...`). Whatever precedes it is whole: a generated character follows it.
GROWING = re.compile(
    r"(?:(?<![\w.$])\.?\d(?:[\w.]|(?<=[eEpP])[+-])*"  # a number
    r"|[\w$]+"  # an identifier, a keyword, a word
    r"|[-=!<>*/+&|^%@:?.]+)\Z"  # an operator
)


def word_boundary(text: str) -> str:
    """`text` up to its last word boundary: without the word, number or operator at its end,
    which the generation may still be writing (the last line alone is searched: none of them
    spans a line break)."""
    start = text.rfind("\n") + 1
    found = GROWING.search(text, start)
    return text[: found.start()] if found else text


class FirstAnswer:
    """Watches a generation's text as it grows; calls `reply` once with the text to show."""

    def __init__(
        self,
        reply: Reply | None,
        *,
        budget_s: float,
        show: Callable[[str], str],
        partial: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """`partial`: whether the budget may answer with a partial line (an Automatic request);
        False: the first line is answered whole (an Invoked one)."""
        self.reply, self.budget_s, self.show, self.clock = reply, budget_s, show, clock
        self.partial = partial
        self.started = clock()
        self.decoding: float | None = None  # when the first text came
        self.sent: str | None = None  # the text answered early, if any
        self.seconds: float | None = None  # when, from the start of the request
        self.cut = False  # answered at the budget with a partial line, cut at a word boundary
        self.dropped = 0  # of the text generated then, the characters held back at the cut

    def progress(self, generated: str) -> None:
        """The text generated so far (the decode loop's rounds, a stream's chunks)."""
        if self.reply is None or self.sent is not None:
            return
        now = self.clock()
        if self.decoding is None:
            self.decoding = now
        end = generated.rfind("\n")
        lines = generated[:end] if end >= 0 else ""
        waited = now - self.decoding
        if lines.strip() and waited >= min(BLOCK_GRACE_S, self.budget_s or BLOCK_GRACE_S):
            ready, cut = lines, False  # at least one complete line with something on it
        elif self.partial and self.budget_s > 0 and waited >= self.budget_s:
            # the budget ran out: what is there, a partial line up to its last word boundary
            ready, cut = word_boundary(generated), True
        else:
            return
        text = self.show(ready)
        if text.strip():  # (else wait: for a boundary after something, or a complete line)
            self.cut, self.dropped = cut, (len(generated) - len(ready) if cut else 0)
            self.sent, self.seconds = text, now - self.started
            self.reply(text)

    def describe(self, stats: DecodeStats) -> None:
        """The first answer in a request's statistics: when, and whether the budget cut it."""
        stats.first_answer_seconds = self.seconds
        stats.first_answer_chars = len(self.sent) if self.sent is not None else 0
        stats.first_answer_cut = self.cut
        stats.first_answer_dropped_chars = self.dropped
