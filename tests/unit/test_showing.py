"""Why a suggestion is or is not shown (server/showing.py), on made-up answers: the order of the
verdicts, what each records, and the work that follows."""

from __future__ import annotations

from spec_lsp.engine import Completion, CompletionRequest
from spec_lsp.engine.types import DecodeStats
from spec_lsp.server.acceptance import Acceptance
from spec_lsp.server.showing import Showing

REQUEST = CompletionRequest(prefix="def area(r):\n    return ", suffix="\n", document_id="d")


def answer(text: str, logprob: float = -0.01, cache: str = "none") -> Completion:
    stats = DecodeStats(cache=cache)
    stats.token_logprobs = [logprob] * len(text)  # (one token a character: enough here)
    return Completion(text=text, stats=stats, raw_text=text)


def test_each_verdict_and_the_work_that_follows_it() -> None:
    showing = Showing(Acceptance(retention_s=()))
    decide = showing.decide
    assert decide(REQUEST, None, invoked=False, threshold=0.5).why == "empty"
    unsure = answer("3.14 * r * r", logprob=-3.0)
    hidden = decide(REQUEST, unsure, invoked=False, threshold=0.5)
    assert (hidden.why, hidden.completion, hidden.precompute, hidden.stop_rest) == (
        "hidden",
        None,
        False,
        True,
    )
    assert hidden.score is not None and hidden.score < 0.5
    shown = decide(REQUEST, unsure, invoked=True, threshold=0.5)  # the person asked
    assert (shown.why, shown.number, shown.precompute) == ("invoked", 1, True)
    # the same suggestion asked for again where it stands (Automatic): on screen, not gated
    again = decide(REQUEST, unsure, invoked=False, threshold=0.5)
    assert (again.why, again.number) == ("on_screen", 1)
    sure = answer("2 * r", logprob=-0.001)
    other = CompletionRequest(prefix="x = ", suffix="\n", document_id="e")
    assert decide(other, sure, invoked=False, threshold=0.5).why == "confident"
    assert decide(other, sure, invoked=False, threshold=0.0, stale=True).why == "stale"
    typed = answer("r * r", cache="typed_through")  # its next one was computed with it
    assert not decide(other, typed, invoked=True, threshold=0.0).precompute
    closed = decide(other, sure, invoked=True, threshold=0.0, still_open=False)
    assert closed.shown and not closed.precompute
    assert showing.report() == {
        "empty": 1,
        "hidden": 1,
        "invoked": 3,
        "on_screen": 1,
        "confident": 1,
        "stale": 1,
    }
