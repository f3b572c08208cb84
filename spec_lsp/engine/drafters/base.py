"""Where draft tokens come from. A drafter has one method: `draft(request) -> Draft`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from spec_lsp.engine.types import SamplingParams


@dataclass
class Draft:
    tokens: list[int]
    probs: list[np.ndarray] | None = None  # q per token (full distribution); None: deterministic
    # a lookup's match strength: tokens of context shared with the occurrence it copies
    strength: int | None = None
    # a costly drafter stopped before the length it was asked for (its confidence fell under the
    # policy's p-min, or it ended): the position after its last token counts as rejected, so a
    # drafter that keeps declining is learned as one that does not pay (its call still costs)
    short: bool = False
    # the source that proposed it when the drafter speaks for several (auto); empty: the
    # drafter's own name. What drafting really yields is judged per source (policy/realized.py)
    source: str = ""


@dataclass
class DraftRequest:
    context: Sequence[int]  # everything the target has committed: prompt + generated
    max_tokens: int
    sampling: SamplingParams
    rng: np.random.Generator
    min_confidence: float = 0.0  # stop drafting when the draft's top probability falls below
    shadow: bool = False  # an unverified proposal, only scored: costly sources need not run
    # raises Cancelled when the request was cancelled: a draft model catching up on a new
    # context (hundreds of tokens after a jump) checks it between chunks
    check: Callable[[], None] | None = None
    # the same context as int64, where the decode loop keeps one (it appends each round's tokens
    # to a buffer): a free lookup reads it rather than converting the context every round
    array: np.ndarray | None = None

    def tokens(self, last: int = 0) -> np.ndarray:
        """The context as an int64 array (`last`: only its last tokens; 0: all of it)."""
        if self.array is not None:
            return self.array[-last:] if last else self.array
        return np.asarray(self.context[-last:] if last else self.context, dtype=np.int64)


class Drafter(Protocol):
    """A source of draft tokens: `draft(request)` proposes; the declared flags say how the
    decode loop treats the source (drafters subclass this to inherit the defaults).

    - `free`: a lookup that costs nothing worth pricing. It proposes first: asked every round for
      as long a draft as the policy would ever take, which the policy then sizes from the
      proposal's match strength; a proposal not verified is kept as a shadow and scored later.
    - `sizes_itself`: the length it returns is already its choice (`auto`, which weighs its own
      sources): the loop verifies the draft as it is and leaves its cost to the drafter.
    - otherwise a costly drafter (a draft model): asked for the k the policy chose, its calls
      timed to calibrate the draft cost.
    - `counts_catch_up`: `catch_up(context)` predicts the tokens a model must evaluate before it
      can draft (the policy weighs them when deciding to probe it); `last_catch_up` is what the
      last call evaluated before drafting, (tokens, seconds), priced apart from its draft.
    """

    name: str = "drafter"
    free: bool = False
    sizes_itself: bool = False
    counts_catch_up: bool = False
    last_catch_up: tuple[int, float] = (0, 0.0)

    def draft(self, request: DraftRequest) -> Draft: ...

    def catch_up(self, context: Sequence[int]) -> int:
        return 0


CATCH_UP_MIN = 16  # tokens a model evaluates before drafting that count as a catch-up (fewer:
# the round's own re-sync after a partial acceptance, part of a draft's cost)


def catch_up_of(drafter: Drafter) -> tuple[int, float] | None:
    """The last draft call's catch-up on context its model had not seen, (tokens, seconds),
    when it was one: that is priced apart from a draft's own cost (None: it was not)."""
    tokens, seconds = drafter.last_catch_up
    return (tokens, seconds) if tokens >= CATCH_UP_MIN else None
