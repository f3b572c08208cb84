"""Whether this machine is fast enough for the target model: its measured pace, and the advice
to take the 0.5B where the 1.5B is too slow for ghost text in a person's pause.

The pace is read from the cost profile (policy/profile.py: passes timed on this machine with
this model and thread count), never guessed from the CPU's name: a pass of one token is the
decode rate, a pass of 32 tokens stands for a prompt's rate. A machine is slow for a model when
it decodes it under SLOW_DECODE_TOK_S: between the paces at which the writing bench (`spec-lsp
bench writing`, bench/README.md) measured the smaller Qwen2.5-Coder-0.5B completing twice the
1.5B's share of a person's code (5.7 tokens/s) and the same share (9.3-10.3). Above it nothing
is said: no machine there has shown the 0.5B doing better.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from spec_lsp.engine.policy.profile import LOADED, CostProfile

# one-token passes of the 1.5B a second under which the 0.5B is offered, from the writing bench
# on a 2-core VM (bench/README.md, "The next line before the Enter, and a machine too slow for
# the 1.5B"): where the 1.5B decoded 5.7 tokens/s (1 thread) the 0.5B completed 2x its share
# of the code; at 9.3-10.3 (2 threads), each with its gate, the two completed the same (21.6%
# and 22.1%). No faster machine has been measured: above it, nothing is said.
SLOW_DECODE_TOK_S = 8.0
SMALL_MODEL = "qwen2.5-coder-0.5b"  # the default model's key for slow machines (models.py)
PROMPT_BATCH = 32  # the pass whose tokens/s stands for a prompt's


@dataclass(frozen=True)
class Pace:
    """Measured tokens/s of the target on this machine."""

    decode_tok_s: float  # one token per pass
    prompt_tok_s: float  # PROMPT_BATCH tokens per pass
    load: float | None = None  # cores other programs kept busy meanwhile (None: not known)

    @property
    def slow(self) -> bool:
        return self.decode_tok_s < SLOW_DECODE_TOK_S

    @property
    def loaded(self) -> bool:
        """Timed while other programs kept the cores busy: the machine may be faster."""
        return self.load is not None and self.load >= LOADED

    def describe(self) -> str:
        said = f"decode {self.decode_tok_s:.1f} tokens/s, prompts {self.prompt_tok_s:.0f} tokens/s"
        if self.loaded:
            said += f", while other programs kept {self.load:.1f} cores busy"
        return said


def of_profile(profile: CostProfile | None) -> Pace | None:
    """The pace a measured profile shows, to judge by; None for the prior (nothing measured
    yet), a profile that cannot be right, or one measured while other programs kept the cores
    busy."""
    if profile is None or profile.key == "prior" or profile.suspect() or profile.loaded:
        return None
    return read(profile)


def read(profile: CostProfile) -> Pace | None:
    """What a profile's passes of 1 and PROMPT_BATCH tokens say, with the load they were timed
    under (doctor times them with `calibrate.measure`, sizes (1, PROMPT_BATCH))."""
    one, batch = profile.verify_seconds.get(1), profile.verify(PROMPT_BATCH)
    if not one or one <= 0 or batch <= 0:
        return None
    return Pace(1.0 / one, PROMPT_BATCH / batch, profile.load)


def advice(pace: Pace | None, model_path: str) -> str | None:
    """What to tell the person when the machine is slow for the model in use (None: nothing)."""
    if pace is None or not pace.slow or pace.loaded or is_small(model_path):
        return None
    name = Path(model_path).name
    return (
        f"this machine runs {name} at {pace.describe()} (measured): ghost text will often come "
        f"after your pause. The smaller {SMALL_MODEL} completed more code on machines this slow "
        f"(spec-lsp bench writing): run `spec-lsp models pull {SMALL_MODEL}` and set `model` to "
        f"`{SMALL_MODEL}`."
    )


def is_small(model_path: str) -> bool:
    """The 0.5B itself, or a model file no larger than it (nothing smaller to offer)."""
    name = Path(model_path).name.lower()
    return "0.5b" in name or "135m" in name or "360m" in name
