"""One request on its way through the engine, made once when it arrives: the request, its cancel
token and kind, its post-processing (`postprocess.Shaping`: multi-line or not, the stop rule,
the text shown), its statistics, and the first answer that watches its text grow
(`first_answer`). The stage that completes it reads what it needs here (the stop rule among it)
and tells it the text so far (`progress`) and when it is done (`settled`); the engine finishes
with `shown`. Post-processing is reached through it alone. The stage that completes it: stage.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from spec_lsp.config import Settings
from spec_lsp.engine.cache.in_flight import InFlight
from spec_lsp.engine.finishing.first_answer import FirstAnswer
from spec_lsp.engine.finishing.postprocess import Shaping
from spec_lsp.engine.stats import EngineTotals, reuse_kind
from spec_lsp.engine.types import (
    CancelToken,
    Completion,
    CompletionRequest,
    DecodeStats,
)


@dataclass
class Answer:
    request: CompletionRequest
    cancel: CancelToken
    kind: str  # "" when asked, "precompute", or the scheduler's name for its reuse
    shaping: Shaping
    stats: DecodeStats
    first: FirstAnswer
    in_flight: InFlight  # the running generation's text, for requests typed meanwhile
    totals: EngineTotals

    # -- its post-processing (the stage's stop rule, the engine's finish): read here only
    @property
    def multiline(self) -> bool:
        return self.shaping.multiline

    def stop_reached(self, generated: str) -> bool:
        """Whether the generation may stop: a stop string, or more text changes nothing shown."""
        return self.shaping.stop_reached(generated)

    def shown(self, generated: str) -> tuple[str, str]:
        """(raw, shown): the generated text cut at the stop strings, and post-processed."""
        return self.shaping.shown(generated)

    # -- what the stage tells it
    def progress(self, generated: str) -> None:
        """A generation's text so far: in-flight reuse sees it, the first answer may go."""
        self.in_flight.track(self.request, generated, self.stats.token_logprobs)
        self.first.progress(generated)

    def settled(self) -> None:
        """The generation ended, however (its `stats.cache` told): the totals count it."""
        self.in_flight.clear()
        self.first.describe(self.stats)
        self.totals.record(self.stats, cancelled=self.cancel.cancelled)


def begin(
    request: CompletionRequest,
    cancel: CancelToken,
    *,
    kind: str,
    settings: Settings,
    reply: Callable[[Completion], None] | None,
    in_flight: InFlight,
    totals: EngineTotals,
) -> Answer:
    """The request's answer, its first answer wired to `reply` (called once, earlier, with what
    can be shown, while the generation goes on: finishing/first_answer.py)."""
    shaping = Shaping(request, settings.multiline, settings.lookahead_lines)
    stats = DecodeStats(drafter=settings.drafter)

    def early(text: str) -> None:
        assert reply is not None
        cache = stats.cache or reuse_kind(stats)  # (the prompt is evaluated by now)
        answered = first.seconds or 0.0  # (set before the reply)
        so_far = replace(
            stats,
            stop_reason="first_answer",
            cache=cache,
            # the decoding so far (and the prompt's layout, a few ms): the rest of the time
            # since the request began
            decode_seconds=max(0.0, answered - stats.prompt_seconds),
            k_trace=list(stats.k_trace),
            accepted_trace=list(stats.accepted_trace),
        )
        first.describe(so_far)
        reply(Completion(text=text, stats=so_far))

    budget_s = settings.answer_budget_ms / 1000
    first = FirstAnswer(
        early if reply and budget_s else None,
        budget_s=budget_s,
        show=lambda generated: shaping.shown(generated)[1],
        partial=not request.invoked,  # an Invoked request's first line is answered whole
    )
    return Answer(request, cancel, kind, shaping, stats, first, in_flight, totals)
