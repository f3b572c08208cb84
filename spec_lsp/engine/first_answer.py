"""The latency budget: answer before the generation ends.

A multi-line suggestion of 64 tokens takes seconds to decode on a CPU, and the person sees
nothing until it is done. So the request is answered as soon as its first line is complete (and
BLOCK_GRACE_S of decoding have passed, so that a fast backend's whole block is shown whole), or
once `budget_s` of decoding have passed with something to show (then with what is ready: the
complete lines, else the partial line). The budget counts from the first generated text: the
prompt's evaluation before it is not decoding, and on a slow machine it alone would use the
budget up and every answer would be a partial line. The generation goes on in the background: its whole
text goes into the suggestion cache, so the next request at the accepted or typed position,
and the lines after an accepted first one, are answered from there (or wait for the running
generation, which already produced them: in-flight reuse).
"""

from __future__ import annotations

import time
from collections.abc import Callable

Reply = Callable[[str], None]
# complete lines wait this long into decoding before they are sent early: a backend that writes
# a whole block by then (a GPU, a fast server, the fake model) shows it whole, as the editor
# draws a block; on a CPU the first line takes longer than this anyway
BLOCK_GRACE_S = 0.25


class FirstAnswer:
    """Watches a generation's text as it grows; calls `reply` once with the text to show."""

    def __init__(
        self,
        reply: Reply | None,
        *,
        budget_s: float,
        show: Callable[[str], str],
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.reply, self.budget_s, self.show, self.clock = reply, budget_s, show, clock
        self.started = clock()
        self.decoding: float | None = None  # when the first text came
        self.sent: str | None = None  # the text answered early, if any
        self.seconds: float | None = None  # when, from the start of the request

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
            ready = lines  # at least one complete line with something on it
        elif self.budget_s > 0 and waited >= self.budget_s:
            ready = generated  # the budget ran out: what is there, a partial line
        else:
            return
        text = self.show(ready)
        if text.strip():
            self.sent, self.seconds = text, now - self.started
            self.reply(text)
