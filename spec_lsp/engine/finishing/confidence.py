"""How likely a suggestion is to be kept, from what the engine already has: the target's token
probabilities for the text shown, its length, whether it repeats a line around it, the place
(end of line, inside a word, after an opener) and what the person did with the last one here.

A logistic model over those features, fitted offline per model (`spec-lsp bench gate --fit`,
on held-out places and typing replays; chosen and judged on others) and stored with the cost
profiles (gate_weights.py); SHIPPED holds the default model's, SHIPPED_SMALL the 0.5B's. Only the features in USED weigh
anything: the bench adds features one at a time while they lower the log loss on its second set
of places (the sum of log probabilities, then whether the rest of the line is empty). The gate shows an Automatic suggestion whose first
line's score clears the threshold, else nothing; an Invoked one is always shown (the person
asked).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from spec_lsp.engine.types import Completion, CompletionRequest

FEATURES = (
    "sum_logprob",  # of the tokens shown: the log of the chance the model gives the whole text
    "mean_logprob",
    "min_logprob",
    "log_chars",  # log(1 + characters shown)
    "repeats_line",  # the first line shown equals one of the 3 lines above or below
    "end_of_line",  # nothing but spaces after the cursor on its line
    "in_word",  # a word character either side of the cursor
    "after_opener",  # the last character before the cursor opens something: ( [ { , = :
    "last_accepted",  # the last suggestion in this document was accepted (whole or in part)
    "last_rejected",
)
USED = ("sum_logprob", "end_of_line")  # chosen on the bench's second set; the others weigh 0
OPENERS = "([{,=:"
DEFAULT_THRESHOLD = 0.25  # weights with no threshold chosen for them (bench/results/gate.md)
WORD = re.compile(r"\w")


@dataclass(frozen=True)
class GateModel:
    """The gate's logistic model for one model (or a server's model)."""

    bias: float
    weights: dict[str, float]
    fitted_on: str  # the model file (a server: its URL and model) the weights were fitted on
    source: str = "shipped"  # shipped with spec-lsp, or fitted here (`bench gate --fit`)
    threshold: float | None = None  # the threshold the fit chose (on its second set)
    # in force where gateThreshold is not set: for the shipped 1.5B's, the one that completed the
    # most code with the wrong suggestions shown at most half the right (bench/README.md#writing)
    default_threshold: float = DEFAULT_THRESHOLD
    figures: dict[str, Any] = field(default_factory=dict)  # its third set's, at that threshold

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GateModel:
        weights = {**dict.fromkeys(FEATURES, 0.0), **data["weights"]}
        if set(weights) != set(FEATURES):
            raise ValueError(f"unknown features: {sorted(set(weights) - set(FEATURES))}")
        return cls(**{**data, "weights": {k: float(v) for k, v in weights.items()}})


# fitted by `spec-lsp bench gate` (bench/results/gate.md) on 82 places of 8 standard-library
# modules (line starts and ends, mid-line, inside an auto-closed bracket), its features chosen
# on 88 of 8 others, judged on 88 of 8 more: Qwen2.5-Coder-1.5B
SHIPPED = GateModel(
    bias=2.125,
    weights={**dict.fromkeys(FEATURES, 0.0), "sum_logprob": 1.552, "end_of_line": -0.459},
    fitted_on="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    default_threshold=0.4,
)
# the same way for the 0.5B offered on slow machines (bench/results/gate-qwen05b.md: fitted on
# 111 places, chosen on 110, judged on 116; at 0.25 it hid 75% of the wrong, kept 86% of the good)
SHIPPED_SMALL = GateModel(
    bias=1.449,
    weights={**dict.fromkeys(FEATURES, 0.0), "sum_logprob": 1.900, "log_chars": -0.246},
    fitted_on="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
)
SHIPPED_FOR = {model.fitted_on: model for model in (SHIPPED, SHIPPED_SMALL)}  # by file name


def threshold_in_force(setting: float | None, model: GateModel | None) -> float:
    """The gate's threshold: 0 (off) with no weights for the model in use; else the setting,
    or where it is unset the weights' own."""
    if model is None:
        return 0.0
    return model.default_threshold if setting is None else setting


@dataclass(frozen=True)
class Confidence:
    score: float  # the estimated probability that the suggestion is right
    features: dict[str, float]


def features(
    prefix: str,
    suffix: str,
    text: str,
    logprobs: Sequence[float],
    last_outcome: str | None = None,
) -> dict[str, float]:
    """The features of showing `text` at the cursor (`prefix`|`suffix`), whose tokens had
    `logprobs` under the target."""
    lps = list(logprobs) or [0.0]
    line_start = prefix.rfind("\n") + 1
    around = prefix[:line_start].splitlines()[-3:] + suffix.split("\n")[1:4]
    first = (prefix[line_start:] + text).split("\n", 1)[0].strip()
    rest_of_line = suffix.split("\n", 1)[0]
    before = prefix[-1:] if prefix else ""
    last_char = prefix.rstrip(" \t")[-1:] if prefix.strip() else ""
    return {
        "sum_logprob": sum(lps),
        "mean_logprob": sum(lps) / len(lps),
        "min_logprob": min(lps),
        "log_chars": math.log1p(len(text)),
        "repeats_line": float(bool(first) and any(line.strip() == first for line in around)),
        "end_of_line": float(not rest_of_line.strip()),
        "in_word": float(bool(WORD.match(before)) and bool(WORD.match(suffix[:1]))),
        "after_opener": float(bool(last_char) and last_char in OPENERS),
        "last_accepted": float(last_outcome in ("accepted", "partial", "typed_through")),
        "last_rejected": float(last_outcome == "rejected"),
    }


def score(values: dict[str, float], model: GateModel = SHIPPED) -> float:
    z = model.bias + sum(model.weights[name] * values[name] for name in FEATURES)
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def shown_logprobs(completion: Completion, chars: int | None = None) -> list[float]:
    """The log probabilities of the tokens that make the first `chars` characters of the text
    shown (all of it by default), apportioned by characters over the generated text."""
    lps = completion.stats.token_logprobs
    raw = completion.raw_text or completion.text
    if not lps or not raw:
        return []
    start = len(completion.typed)  # (typed into an earlier suggestion: not shown again)
    end = start + (len(completion.text) if chars is None else chars)
    per_token = len(raw) / len(lps)
    first = min(len(lps) - 1, int(start / per_token))
    last = max(first + 1, math.ceil(end / per_token))
    return list(lps[first:last])


def first_line(text: str) -> str:
    """The part a suggestion is judged by: up to the end of its first line with code (a
    suggestion that opens with a line break is judged by the line after it)."""
    end = text.find("\n")
    while end != -1 and not text[:end].strip():
        end = text.find("\n", end + 1)
    return text if end == -1 else text[:end]


def assess(
    request: CompletionRequest,
    completion: Completion,
    last_outcome: str | None = None,
    model: GateModel = SHIPPED,
) -> Confidence | None:
    """The suggestion's confidence (that of its first line, which the model was fitted on), or
    None where the engine has no token probabilities for it (answers from the typed-through or
    in-flight caches, remote servers that send none)."""
    judged = first_line(completion.text)
    lps = shown_logprobs(completion, len(judged))
    if not lps or not judged.strip():
        return None
    values = features(request.prefix, request.suffix, judged, lps, last_outcome)
    return Confidence(score(values, model), values)


def gate(
    request: CompletionRequest,
    completion: Completion,
    threshold: float,
    last_outcome: str | None = None,
    model: GateModel | None = SHIPPED,
) -> tuple[str, Confidence | None]:
    """The text to show of an Automatic suggestion: all of it if its first line's score clears
    `threshold`, else "" (and its confidence). No `model` (none fitted for the model in use):
    shown, not assessed. (Showing the longest first words that clear it
    instead, as a fallback, showed mostly wrong words: on the gate bench's typing replays it
    cut 33% of the wrong suggestions at 0.40, against 69% whole or nothing.)"""
    if model is None:
        return completion.text, None
    whole = assess(request, completion, last_outcome, model)
    if whole is None or threshold <= 0 or whole.score >= threshold:
        return completion.text, whole
    return "", whole
