"""This machine's cost profile: seconds to verify a batch of n tokens, and to draft one token.

Measured once per (model file, threads, backend) on the real model with a realistic KV length,
cached on disk as JSON, re-measured by `spec-lsp profile`. Real curves have steps (kernels switch
at some batch sizes), so the policy uses the measured points, interpolating only between them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from spec_lsp.cache_dirs import cache_subdir

log = logging.getLogger(__name__)

BATCH_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 32)
LOADED = 0.5  # cores kept busy by other programs while measuring that make a profile suspect
IMPLAUSIBLE = 1.25  # a batch of n tokens measured above n x this x one pass: load, not cost
JUDGED = 0.001  # passes shorter than this (a test's fake model) are timed too finely to judge


@dataclass
class CostProfile:
    verify_seconds: dict[int, float]  # batch size n -> seconds for one target pass of n tokens
    draft_seconds_per_token: float = 0.0
    draft_seconds_fixed: float = 0.0  # per draft call (catching up the draft cache, lookups)
    key: str = ""
    measured_at: float = field(default_factory=time.time)
    round_overhead: float = 0.0  # seconds per decode round outside the model (sampling, checks)
    # seconds per token a draft model takes to catch up on context it has not seen (learned
    # from probes; None until one ran)
    catch_up_seconds_per_token: float | None = None
    # draft calls as actually run over what the startup figures predict (EWMA): a draft model's
    # call costs more in a decode loop than alone (re-syncing after a full acceptance, logits)
    draft_scale: float = 1.0
    # cores other programs kept busy while it was measured (None: not known, an older profile)
    load: float | None = None

    @classmethod
    def prior(cls) -> CostProfile:
        """Until this machine is measured: a pessimistic CPU-like curve (relative units)."""
        curve = {1: 1.0, 2: 1.7, 4: 2.7, 8: 7.0, 16: 14.0, 32: 28.0}
        return cls(curve, draft_seconds_per_token=0.25, key="prior")

    def verify(self, n: int) -> float:
        """Seconds for a batch of n tokens: measured points, linear between them, linear beyond."""
        table = self.__dict__.get("_table")
        if table is None or n >= len(table):
            points = sorted(self.verify_seconds.items())  # (once a table, not once a size)
            table = self.__dict__["_table"] = [0.0] + [
                self._interpolate(i, points) for i in range(1, max(n, 64) + 1)
            ]
        return table[n]

    def round_costs(self, k_max: int, *, free: bool) -> list[float]:
        """Seconds of a round that drafts k = 0..k_max tokens and verifies k + 1, the loop's own
        cost left out (`free`: nothing to draft). The policy asks each round a lookup proposes:
        kept until the curve is interpolated again or the draft cost moves (not to be changed)."""
        self.verify(k_max + 1)  # (the table, interpolated when due)
        table = self.__dict__["_table"]
        key = (
            k_max,
            free,
            self.draft_scale,
            self.draft_seconds_fixed,
            self.draft_seconds_per_token,
        )
        kept = self.__dict__.setdefault("_costs", {})
        found = kept.get(key)
        if found is not None and found[0] is table:
            return found[1]
        costs = [(0.0 if free else self.draft(k)) + table[k + 1] for k in range(k_max + 1)]
        kept[key] = (table, costs)
        return costs

    def _interpolate(self, n: int, points: list[tuple[int, float]]) -> float:
        if n <= points[0][0]:
            return points[0][1] * n / points[0][0]
        for (n0, t0), (n1, t1) in zip(points, points[1:]):
            if n <= n1:
                return t0 + (t1 - t0) * (n - n0) / (n1 - n0)
        (n0, t0), (n1, t1) = points[-2], points[-1]
        return t1 + (t1 - t0) / (n1 - n0) * (n - n1)

    def observe_verify(self, n: int, seconds: float) -> None:
        """Calibrate the curve in place from the passes actually run (the machine drifts: clock,
        thermal, other load). A size the loop does not run keeps its measured ratio to one
        pass: when single passes speed up or slow down, it moves with them."""
        old = self.verify_seconds.get(n)
        new = seconds if old is None else 0.8 * old + 0.2 * seconds
        self.verify_seconds[n] = new
        seen = self.__dict__.setdefault("_seen", set())
        seen.add(n)
        if n == 1 and old:  # the machine's speed moved: sizes not run since keep their ratio
            for m in self.verify_seconds.keys() - seen:
                self.verify_seconds[m] *= new / old
        count = self.__dict__["_observed"] = self.__dict__.get("_observed", 0) + 1
        if old is None or count % 16 == 0:  # re-interpolate now and then, not every round
            self.__dict__.pop("_table", None)

    def observe_overhead(self, seconds: float) -> None:
        """Learn the loop's own cost per round (EWMA), measured while decoding."""
        self.round_overhead = (
            seconds if self.round_overhead == 0 else 0.9 * self.round_overhead + 0.1 * seconds
        )

    def draft(self, k: int) -> float:
        if k <= 0:
            return 0.0
        return self.draft_scale * (self.draft_seconds_fixed + k * self.draft_seconds_per_token)

    def observe_draft(self, k: int, seconds: float) -> None:
        """Calibrate the draft cost from a call actually run (k tokens drafted in `seconds`; 0:
        a call that declined to draft, its fixed cost); free drafters (no measured cost) are
        left at zero."""
        base = self.draft_seconds_fixed + k * self.draft_seconds_per_token
        if base > 0:
            self.draft_scale = 0.8 * self.draft_scale + 0.2 * seconds / base

    def catch_up_rate(self, seconds_per_draft_token: float) -> float:
        """Seconds per token for a draft model to catch up on context it has not seen: as
        learned from probes; before any, priced as a drafted token (a batch is cheaper per
        token, by a factor the target's curve does not tell for another model: this errs
        towards probing less)."""
        if self.catch_up_seconds_per_token is not None:
            return self.catch_up_seconds_per_token
        return seconds_per_draft_token

    def suspect(self) -> str | None:
        """Why these figures cannot be right (None: they can). A batch of n tokens never costs
        more than n passes of one: where the figures say so, the passes were timed while other
        programs held the cores (c(4) = 8.77 c(1) was cached on a 2-core machine beside a test
        run, and turned drafting off for good). Such a profile is measured again, not kept."""
        one = self.verify_seconds.get(1)
        if not one or one < JUDGED:
            return None
        for n, seconds in sorted(self.verify_seconds.items()):
            if seconds > n * one * IMPLAUSIBLE:
                return f"verifying {n} tokens cost {seconds / one:.2f}x one: more than {n} passes"
        return None

    @property
    def loaded(self) -> bool:
        """Measured while other programs kept LOADED cores or more busy: its ratios hold (the
        sizes are measured in turn, so load slows them alike), its seconds may not; it is
        measured again once the machine is quiet."""
        return self.load is not None and self.load >= LOADED

    def relative(self) -> dict[int, float]:
        base = self.verify(1)
        return {n: round(t / base, 2) for n, t in sorted(self.verify_seconds.items())}

    def to_json(self) -> str:
        return json.dumps(
            {**asdict(self), "verify_seconds": {str(k): v for k, v in self.verify_seconds.items()}}
        )

    @classmethod
    def from_json(cls, text: str) -> CostProfile:
        data = json.loads(text)
        data["verify_seconds"] = {int(k): float(v) for k, v in data["verify_seconds"].items()}
        return cls(**data)


REMEASURE_S = 600.0  # the least time between two measurements of a suspect or loaded profile


def due_again(
    profile: CostProfile | None, *, since_measured: float | None, others: float
) -> str | None:
    """Why `profile` is to be measured again now (None: it is not): it cannot be right
    (`suspect`: at once, once per REMEASURE_S), or it was measured under load and the machine
    is quiet now (`others`: cores other programs keep busy now)."""
    if profile is None or (since_measured is not None and since_measured < REMEASURE_S):
        return None
    if profile.verify_seconds.get(1, 0.0) < JUDGED:  # (a test's fake model: kept as it is)
        return None
    reason = profile.suspect()
    if reason is None and profile.loaded and others < LOADED:
        reason = f"measured while other programs kept {profile.load:.1f} cores busy"
    return reason


def profile_key(model_path: str, *, threads: int | None, backend: str, drafter: str) -> str:
    try:
        st = os.stat(model_path)
        ident = f"{os.path.realpath(model_path)}:{st.st_size}:{int(st.st_mtime)}"
    except OSError:
        ident = model_path
    raw = f"{ident}|threads={threads}|backend={backend}|drafter={drafter}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def profiles_dir() -> Path:
    return cache_subdir("profiles", "SPEC_LSP_PROFILE_DIR")


def load_cached(key: str) -> CostProfile | None:
    path = profiles_dir() / f"{key}.json"
    try:
        return CostProfile.from_json(path.read_text())
    except (OSError, ValueError, TypeError, KeyError):
        return None


def save(profile: CostProfile) -> Path:
    directory = profiles_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{profile.key}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(profile.to_json())
    os.replace(tmp, path)
    return path
