"""What is shown: the one place that decides whether a suggestion appears, and whether the work
that follows one (the next suggestion precomputed, the rest of its generation) is spent.

A suggestion's way to the screen, in order; each step names the module that does it:

1. Where the answer came from (`Completion.stats.cache`). The caches answer first, with no
   model call: the rest of a suggestion typed through (`typed_through`, engine.peek), the
   running generation's complete lines (`in_flight`, engine.from_in_flight). Otherwise the
   model generates (`none`): the speculative loop in process, or a server.
2. The shaping (engine/finishing/postprocess.Shaping): the model's text cut to what fits the place (one
   line or a block, the suffix's overlap removed, indentation, stop rules). Empty: nothing.
3. The first-answer cut (engine/finishing/first_answer.py): a multi-line suggestion is answered at its
   first complete line while the rest generates into the cache; an Automatic one whose budget
   ran out, with what is ready up to a word boundary. An Invoked one is never cut mid-line.
4. The verdict, here (`Showing.decide`), in this order:
   - `empty`: no text (the model said nothing that fits, or the request was superseded);
   - `stale`: the document changed while it was computed (the editor has cancelled the
     request or drops the answer: VS Code sends $/cancelRequest and the next key at once):
     answered empty, not counted as shown;
   - `invoked`: the person asked (Invoked): shown whatever its confidence;
   - `on_screen`: the rest of the suggestion on screen that the person types along, or it again
     where it stands (acceptance.continues; the rest may have grown: an early answer's next
     lines): shown, not gated again, so that it never vanishes under the person's keys;
   - `confident` / `hidden`: an Automatic answer is gated (engine/finishing/confidence.gate: the chance
     the model gives its first line against `gateThreshold`, with the weights fitted for the
     model in use; `gate_off` when the threshold is 0 or the model has none), whole or nothing.
5. The follow-on work (`Verdict.precompute`, `Verdict.stop_rest`): a shown suggestion's next one
   is precomputed (as if accepted) unless it came from the typed-through cache (its next one
   was computed with it) or the document closed meanwhile; a hidden one costs nothing more: no
   precompute (which would also stop the context block's idle work), and the rest of an early
   answer's generation is stopped.

The statistics count each verdict (`specLsp/stats`: `shown_why`), and the debug log says it per
request.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from spec_lsp.engine import Completion, CompletionRequest
from spec_lsp.engine.finishing import confidence
from spec_lsp.engine.finishing.confidence import GateModel
from spec_lsp.server.acceptance import Acceptance

log = logging.getLogger(__name__)
SHOWN = ("invoked", "on_screen", "confident", "gate_off")  # the verdicts that show it


@dataclass(frozen=True)
class Verdict:
    completion: Completion | None  # what to answer with (None: nothing shown)
    number: int | None  # the suggestion's number (the item's command argument)
    why: str  # empty | stale | invoked | on_screen | confident | gate_off | hidden
    score: float | None = None  # the gate's, where it assessed the suggestion
    precompute: bool = False  # compute the suggestion that follows it, as if accepted
    stop_rest: bool = False  # stop its generation going on in the background

    @property
    def shown(self) -> bool:
        return self.why in SHOWN


class Showing:
    """Decides what is shown; records it with the acceptance bookkeeping."""

    def __init__(self, acceptance: Acceptance) -> None:
        self.acceptance = acceptance
        self.counts: Counter[str] = Counter()

    def decide(
        self,
        request: CompletionRequest,
        completion: Completion | None,
        *,
        invoked: bool,
        threshold: float,
        gate: GateModel | None = confidence.SHIPPED,
        still_open: bool = True,
        stale: bool = False,
    ) -> Verdict:
        """The verdict on `completion`, the answer to `request` (`invoked`: the person asked;
        `threshold`: the gate's for Automatic answers, with `gate`'s weights, None: the gate
        off; `still_open`: the document is open; `stale`: it changed since the request)."""
        threshold = threshold if gate is not None else 0.0
        if stale and completion is not None and completion.text:
            verdict = Verdict(None, None, "stale")
        else:
            verdict = self._verdict(
                request, completion, invoked=invoked, threshold=threshold, gate=gate
            )
        if verdict.shown and verdict.completion is not None:
            number = self.acceptance.shown(
                request.document_id, request.prefix, request.suffix, verdict.completion.text
            )
            cached = verdict.completion.stats.cache == "typed_through"
            precompute = still_open and not cached
            verdict = Verdict(verdict.completion, number, verdict.why, verdict.score, precompute)
        elif verdict.why == "hidden":
            self.acceptance.hidden()
        self.counts[verdict.why] += 1
        if log.isEnabledFor(logging.DEBUG):
            score = "" if verdict.score is None else f" (confidence {verdict.score:.2f})"
            log.debug("%s: %s%s", request.document_id, verdict.why, score)
        return verdict

    def _verdict(
        self,
        request: CompletionRequest,
        completion: Completion | None,
        *,
        invoked: bool,
        threshold: float,
        gate: GateModel | None,
    ) -> Verdict:
        if completion is None or not completion.text:
            return Verdict(None, None, "empty")
        if invoked:
            return Verdict(completion, None, "invoked")
        document, before, after = request.document_id, request.prefix, request.suffix
        if self.acceptance.continues(document, before, after, completion.text):
            return Verdict(completion, None, "on_screen")
        if threshold <= 0:
            return Verdict(completion, None, "gate_off")
        last = self.acceptance.last_outcome(document)
        text, assessed = confidence.gate(request, completion, threshold, last, gate)
        score = assessed.score if assessed is not None else None
        if text:  # (the gate's verdict: whole or nothing)
            return Verdict(completion, None, "confident", score)
        return Verdict(None, None, "hidden", score, stop_rest=True)

    def report(self) -> dict[str, int]:
        return dict(self.counts)
