"""Running totals across requests: what `specLsp/stats` and `spec-lsp complete --json` report."""

from __future__ import annotations

import math
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.engine.types import DecodeStats, add_by_source

STAGES = ("prompt", "first_answer", "decode", "prompt_share_evaluated")
GUIDE = (  # (DecodeStats' fields, summed under "guide" without their prefix)
    "guide_triggers",
    "guide_resolved",
    "guide_masked",
    "guide_changed",
    "symbol_drafted",
    "symbol_accepted",
    "guide_unprepared",
    "guide_waited_ms",
    "guide_seconds",
)


@dataclass
class EngineTotals:
    requests: int = 0
    cancelled: int = 0
    tokens: int = 0
    drafted: int = 0
    accepted: int = 0
    rounds: int = 0
    target_passes: int = 0
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    prompt_seconds: float = 0.0
    decode_seconds: float = 0.0
    draft_seconds: float = 0.0
    k_histogram: Counter[int] = field(default_factory=Counter)
    cache_hits: Counter[str] = field(default_factory=Counter)
    model_names: list[str] = field(default_factory=list)
    last_acceptance_estimate: float | None = None
    engine: str = "local"  # which engine serves: local | remote
    # per generation that ran the model (not typed-through, not a fault): its total time and
    # (remote) the time to the server's first text; the latest 1000
    generation_seconds: deque[float] = field(default_factory=lambda: deque(maxlen=1000))
    first_token_seconds: deque[float] = field(default_factory=lambda: deque(maxlen=1000))
    server_timings: dict[str, Any] | None = None  # the server's own, of the latest answer
    # per generation that ran the model, the latest 1000 of each phase: prompt evaluation,
    # the first answer (when sent before the end: first_answer), decoding, the share of the
    # prompt evaluated (the rest came from the KV cache)
    phases: dict[str, deque[float]] = field(
        default_factory=lambda: {name: deque(maxlen=1000) for name in STAGES}
    )
    # requests answered before their generation ended (first_answer); of those, the ones the
    # answer budget cut (a partial first line, up to a word boundary) and their characters shown
    # and held back
    first_answers: int = 0
    first_answers_cut: int = 0
    first_answer_cut_chars: int = 0
    first_answer_dropped_chars: int = 0
    prewarms: int = 0  # prompts evaluated while idle after an edit (prewarm)
    prewarm_tokens: int = 0
    guide: Counter[str] = field(default_factory=Counter)  # the guide's counts (GUIDE)
    # per draft source: drafting rounds, tokens drafted, tokens accepted
    by_source: dict[str, list[int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, stats: DecodeStats, *, cancelled: bool = False) -> None:
        with self._lock:
            self.requests += 1
            self.cancelled += int(cancelled)
            for name in (
                "tokens",
                "drafted",
                "accepted",
                "rounds",
                "target_passes",
                "prompt_tokens",
                "prompt_tokens_evaluated",
                "prompt_seconds",
                "decode_seconds",
                "draft_seconds",
            ):
                setattr(self, name, getattr(self, name) + getattr(stats, name))
            self.k_histogram.update(stats.k_trace)
            add_by_source(self.by_source, stats.by_source)
            self.guide.update({name: getattr(stats, name) for name in GUIDE})
            if stats.first_answer_seconds is not None:  # (shown, even if cancelled since)
                self.first_answers += 1
                if stats.first_answer_cut:
                    self.first_answers_cut += 1
                    self.first_answer_cut_chars += stats.first_answer_chars
                    self.first_answer_dropped_chars += stats.first_answer_dropped_chars
            self.cache_hits[stats.cache] += 1
            if stats.tokens and not cancelled:
                self.generation_seconds.append(stats.prompt_seconds + stats.decode_seconds)
                self.phases["prompt"].append(stats.prompt_seconds)
                self.phases["decode"].append(stats.decode_seconds)
                if stats.first_answer_seconds is not None:
                    self.phases["first_answer"].append(stats.first_answer_seconds)
                if stats.prompt_tokens:
                    share = stats.prompt_tokens_evaluated / stats.prompt_tokens
                    self.phases["prompt_share_evaluated"].append(share)
                if stats.engine == "remote":
                    self.first_token_seconds.append(stats.first_token_seconds)
            if stats.server_timings:
                self.server_timings = dict(stats.server_timings)
            if stats.acceptance_estimate is not None:
                self.last_acceptance_estimate = stats.acceptance_estimate

    def count_prewarm(self, evaluated: int) -> None:
        with self._lock:
            self.prewarms += 1
            self.prewarm_tokens += evaluated

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "models": list(self.model_names),
                "requests": self.requests,
                "cancelled": self.cancelled,
                "tokens": self.tokens,
                "drafted": self.drafted,
                "accepted": self.accepted,
                "acceptance_rate": round(self.accepted / self.drafted, 4) if self.drafted else 0.0,
                "acceptance_estimate": self.last_acceptance_estimate,
                "rounds": self.rounds,
                "target_passes": self.target_passes,
                "tokens_per_second": round(self.tokens / self.decode_seconds, 2)
                if self.decode_seconds
                else 0.0,
                "prompt_tokens": self.prompt_tokens,
                "prompt_tokens_evaluated": self.prompt_tokens_evaluated,
                "prompt_seconds": round(self.prompt_seconds, 3),
                "decode_seconds": round(self.decode_seconds, 3),
                "draft_seconds": round(self.draft_seconds, 3),
                "draft_length_histogram": {str(k): v for k, v in sorted(self.k_histogram.items())},
                "drafts_by_source": {
                    source: {
                        "rounds": rounds,
                        "drafted": drafted,
                        "accepted": accepted,
                        "acceptance_rate": round(accepted / drafted, 4) if drafted else 0.0,
                    }
                    for source, (rounds, drafted, accepted) in sorted(self.by_source.items())
                },
                "cache_hits": dict(self.cache_hits),
                "engine": self.engine,
                **_percentiles("generation_ms", self.generation_seconds),
                **_percentiles("first_token_ms", self.first_token_seconds),
                "server_timings": self.server_timings,
                "timing": self._timing(),
                "first_answers": {
                    "answered": self.first_answers,
                    "cut": self.first_answers_cut,
                    "cut_chars": self.first_answer_cut_chars,
                    "dropped_chars": self.first_answer_dropped_chars,
                },
                "prewarm": {"prompts": self.prewarms, "tokens": self.prewarm_tokens},
                "guide": {
                    name.removeprefix("guide_"): round(self.guide[name], 3) for name in GUIDE
                },
            }

    def _timing(self) -> dict[str, Any]:
        """p50/p95 per phase of the generations that ran the model (ms; the prompt share as
        a fraction)."""
        timing: dict[str, Any] = {}
        for name, values in self.phases.items():
            if name == "prompt_share_evaluated":
                ordered = sorted(values)
                timing[name] = {
                    "p50": round(_rank(ordered, 0.5), 3) if ordered else None,
                    "p95": round(_rank(ordered, 0.95), 3) if ordered else None,
                }
            else:
                found = _percentiles(name, values)
                timing[f"{name}_ms"] = {"p50": found[f"{name}_p50"], "p95": found[f"{name}_p95"]}
        return timing


def _rank(ordered: list[float], q: float) -> float:
    """The nearest-rank q-quantile of a sorted, non-empty list."""
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def _percentiles(name: str, seconds: deque[float]) -> dict[str, float | None]:
    """Nearest-rank p50 and p95 in milliseconds (None without data)."""
    ordered = sorted(seconds)

    def rank(q: float) -> float | None:
        return round(_rank(ordered, q) * 1000, 1) if ordered else None

    return {f"{name}_p50": rank(0.5), f"{name}_p95": rank(0.95)}


def reuse_kind(stats: DecodeStats) -> str:
    """How a request's prompt was served: mostly from the KV cache, or evaluated cold."""
    if stats.prompt_tokens and stats.prompt_tokens_evaluated * 2 <= stats.prompt_tokens:
        return "kv_prefix"
    return "cold"
