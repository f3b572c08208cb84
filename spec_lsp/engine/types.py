"""Plain data crossing the engine's boundary: requests, completions, statistics, cancellation.

No pygls, no lsprotocol, no llama_cpp: strings, token ids and numbers only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spec_lsp.config import Settings


@dataclass(frozen=True)
class SamplingParams:
    """How the target picks tokens. temperature 0 means greedy (argmax)."""

    temperature: float = 0.0
    top_k: int = 0  # 0: no top-k truncation
    top_p: float = 1.0  # 1.0: no nucleus truncation
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> SamplingParams:
        return cls(settings.temperature, settings.top_k, settings.top_p, settings.seed)


@dataclass(frozen=True)
class CompletionRequest:
    """Complete at the cursor of a document: the text before it and the text after it."""

    prefix: str
    suffix: str = ""
    document_id: str = ""  # the editor's URI; keys the caches and the per-document statistics
    file_name: str = ""  # for templates with a place for it
    language: str = ""
    max_tokens: int = 64
    multiline: bool | None = None  # None: decide from the cursor's context
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stop: tuple[str, ...] = ()
    version: int = 0  # document version, for logs and stale-request detection
    # the person asked for it and waits (Invoked): an early answer is never a partial line;
    # else the editor sent it as they typed (Automatic)
    invoked: bool = False


@dataclass
class DecodeStats:
    """What one generation did. Every field is data, none is a log line."""

    tokens: int = 0  # tokens generated (committed)
    drafted: int = 0  # draft tokens proposed to the target
    accepted: int = 0  # draft tokens the target accepted
    rounds: int = 0  # verify rounds (one target pass each)
    target_passes: int = 0  # llama_decode calls on the target, prompt included
    prompt_tokens: int = 0  # tokens in the prompt
    prompt_tokens_evaluated: int = 0  # of those, evaluated now (the rest came from the KV cache)
    prompt_seconds: float = 0.0
    decode_seconds: float = 0.0
    draft_seconds: float = 0.0
    continuation_drafted: int = 0  # draft tokens taken from the document's last generation
    # the guide (names that exist): positions generated at a trigger point (`x.`), of those
    # whose receiver the prepared analysis knew, those masked, and those where the mask changed
    # the target's best token; symbol drafts (the rest of the only valid name) and accepted
    guide_triggers: int = 0
    guide_resolved: int = 0
    guide_masked: int = 0
    guide_changed: int = 0
    symbol_drafted: int = 0
    symbol_accepted: int = 0
    guide_unprepared: int = 0  # 1: no table for the file's text was ready (unguided)
    guide_waited_ms: float = 0.0  # how long the request waited for its file's first table
    guide_seconds: float = 0.0  # the decode loop's time in the guide (reading, masking)
    # per draft source (ngram, suffix, last_suggestion, symbol, continuation, model...): its
    # drafting rounds, tokens drafted and accepted
    by_source: dict[str, list[int]] = field(default_factory=dict)
    k_trace: list[int] = field(default_factory=list)  # draft length chosen per round
    accepted_trace: list[int] = field(default_factory=list)  # accepted per round
    acceptance_estimate: float | None = None  # the policy's running estimate at the end
    drafter: str = "none"
    # max_tokens | eos | stop_string | cancelled | context_full | fault | empty_prompt (nothing
    # to condition on: an empty document and a model without FIM tokens); first_answer: an
    # early answer's snapshot (the generation went on)
    stop_reason: str = ""
    cache: str = "none"  # which cache served the request: none | typed_through | ...
    engine: str = "local"  # which engine served: local (in-process) | remote (a server)
    first_token_seconds: float = 0.0  # remote: from sending the request to the first text
    server_timings: dict[str, Any] | None = None  # remote: the server's own figures, if sent
    # when the request was answered before the generation ended (first_answer), from its start
    first_answer_seconds: float | None = None
    first_answer_chars: int = 0  # the characters that first answer showed
    # the answer budget ran out before the first line was complete: the first answer was the
    # partial line up to its last word boundary, holding back this many characters generated
    # by then (a word, number or operator still growing)
    first_answer_cut: bool = False
    first_answer_dropped_chars: int = 0
    # the context block the prompt opened with: its parts (path, lines, why), its tokens, and
    # how many of them came from the KV cache
    context_chunks: list[dict[str, Any]] = field(default_factory=list)
    context_tokens: int = 0
    context_cached_tokens: int = 0
    # the target's log probability of each token generated (in process; not in to_dict): the
    # suggestion's confidence is read from those of the text shown
    token_logprobs: list[float] = field(default_factory=list, repr=False)

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.decode_seconds if self.decode_seconds > 0 else 0.0

    def count_draft(self, source: str, drafted: int, accepted: int) -> None:
        """A round that verified `drafted` tokens from `source`, `accepted` of them."""
        add_by_source(self.by_source, {source: [1, drafted, accepted]})

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["token_logprobs"]
        data["acceptance_rate"] = round(self.acceptance_rate, 4)
        data["tokens_per_second"] = round(self.tokens_per_second, 2)
        return data


def add_by_source(into: dict[str, list[int]], counts: dict[str, list[int]]) -> None:
    """Add per-source counts (rounds, tokens drafted, tokens accepted) to `into`."""
    for source, numbers in counts.items():
        mine = into.setdefault(source, [0, 0, 0])
        for i, n in enumerate(numbers):
            mine[i] += n


@dataclass(frozen=True)
class Completion:
    """The text to insert at the cursor (after post-processing) and how it was made."""

    text: str
    stats: DecodeStats
    raw_text: str = ""  # the model's continuation before post-processing
    typed: str = ""  # text just before the cursor that the user typed into an earlier suggestion;
    # the editor's item replaces it: insert `typed + text` over the range ending at the cursor


class Cancelled(Exception):
    """Raised inside the engine when a request's CancelToken fires; never escapes to the user."""


class CancelToken:
    """Cooperative cancellation: set by the scheduler, polled by the decode loop between rounds."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        self.reason = self.reason or reason
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:  # on the cancelling thread
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when the token fires (now, if it has): for work that waits outside
        the engine's loop, such as a network stream, which must be closed, not polled.
        Returns a function that removes the callback."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.reason)


class EngineError(Exception):
    """A failure the user can fix (missing model, bad file, vocabulary mismatch).

    The message names what is wrong and the fix; the server shows it once and keeps running.
    """
