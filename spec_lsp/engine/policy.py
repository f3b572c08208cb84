"""Draft length policies: how many tokens to draft this round."""

from __future__ import annotations

from typing import Any, Protocol

from spec_lsp.engine.types import SamplingParams


class DraftPolicy(Protocol):
    def choose_k(self) -> int: ...

    def min_confidence(self) -> float: ...

    def observe(self, drafted: int, accepted: int) -> None: ...

    def acceptance_estimate(self) -> float | None: ...


class FixedPolicy:
    """Always draft `draft_max` tokens (llama-server's behaviour), with its p-min cut-off."""

    def __init__(self, draft_max: int, *, p_min: float = 0.0) -> None:
        self.draft_max = draft_max
        self.p_min = p_min
        self.drafted = 0
        self.accepted = 0

    def choose_k(self) -> int:
        return self.draft_max

    def min_confidence(self) -> float:
        return self.p_min

    def observe(self, drafted: int, accepted: int) -> None:
        self.drafted += drafted
        self.accepted += accepted

    def acceptance_estimate(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None


def make_policy(settings: Any, loaded: Any, sampling: SamplingParams) -> DraftPolicy:
    """The policy the settings ask for. (Adaptive arrives with the cost profile.)"""
    return FixedPolicy(settings.draft_max, p_min=settings.draft_p_min)
