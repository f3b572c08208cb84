"""The one interface the engine has to a model: tokens in, logits out, a KV cache to trim.

A backend holds one sequence of tokens in its KV cache (`tokens`). `evaluate` appends tokens and
returns logits for the rows asked; `truncate` drops the tail (rejected draft tokens, edited text);
`move_back` shifts cached runs to earlier positions (text removed before them); `swap_tail`
puts tokens evaluated last before a run cached earlier (text inserted before it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from spec_lsp.engine.types import Cancelled, CancelToken, EngineError
from spec_lsp.gguf_meta import GGUFFormatError, check_header

# chunk size for abortable evaluation: Qwen2.5-Coder-1.5B on 2 cores evaluated a 512-token
# prompt at 77 tok/s in 16-token chunks, 90 in 64, 93 in 128 and 256, 91.5 in one batch;
# an abort loses at most this many tokens of work
ABORTABLE_CHUNK = 128
# a cached run at least this long that a prompt has earlier than the cache holds it (text removed
# before it) is moved into place (KV shift, llama-server's --cache-reuse) rather than evaluated
# again; shorter runs are evaluated. Moved keys and values were computed with the removed text
# before them: an approximation llama.vim relies on (same completions: bench/results/kv-shift.md)
SHIFT_MIN_TOKENS = 64
Run = tuple[int, int, int]  # (where the cache holds it, where the prompt has it, its tokens)


class Aborted(Cancelled):
    """An evaluation stopped by its `abort` token while the model computed."""


@dataclass(frozen=True)
class ModelInfo:
    path: str
    name: str
    architecture: str
    n_vocab: int
    n_ctx_train: int
    special: dict[str, int] = field(default_factory=dict)  # role -> id: bos, eos, eot, fim_pre, ...
    stop_ids: frozenset[int] = frozenset()  # tokens that end a generation (EOS, EOT, FIM end ...)
    supports_rollback: bool = True  # False for sliding-window / recurrent models
    can_shift: bool = False  # cached positions can be moved (RoPE K-shift; not M-RoPE, SWA...)
    vocab_fingerprint: str = ""  # hash of the token texts: equal fingerprints share a vocabulary
    add_bos: bool = False  # the model expects a BOS token before the prompt


@dataclass(frozen=True)
class Snapshot:
    tokens: tuple[int, ...]
    data: bytes | bytearray = b""  # the backend's serialized KV for those tokens

    @property
    def nbytes(self) -> int:
        """What it holds: the serialized KV and the token tuple (a pointer per token; the fake
        backend, without KV, holds only that)."""
        return len(self.data) + 8 * len(self.tokens)


class ModelBackend(Protocol):
    info: ModelInfo
    shift_min: int  # `sync` moves cached runs at least this long into place (0: never)
    moved: int  # tokens moved into place so far (not evaluated)

    @property
    def tokens(self) -> list[int]:
        """Tokens whose keys and values are in the cache, in order."""
        ...

    @property
    def n_ctx(self) -> int: ...

    def tokenize(self, text: str, *, special: bool = False) -> list[int]: ...

    def token_bytes(self, token: int) -> bytes: ...

    def evaluate(
        self,
        tokens: Sequence[int],
        *,
        logits_from: int,
        abort: CancelToken | None = None,
        view: bool = False,
    ) -> np.ndarray:
        """Append `tokens` to the cache; return logits rows for tokens[logits_from:].

        With `abort`, looked at while the model computes: once it is cancelled the call stops
        and raises `Aborted`; the cache keeps the batches finished before (none of the one
        stopped). With `view`, the rows may be a read-only view of the model's own buffer,
        valid until its next evaluation (the decode loop reads them within its round: a copy
        of Qwen's 151,936 logits cost 0.15 ms a round on a busy machine)."""
        ...

    def truncate(self, n_keep: int) -> None:
        """Keep only the first `n_keep` cached tokens."""
        ...

    def move_back(self, keep: int, runs: Sequence[Run]) -> int:
        """Keep the first `keep` cached tokens and then `runs` (moved_runs: in order, each
        where the one before ends), dropping the rest; the moved keys are shifted by the next
        evaluation. Returns how many tokens the cache holds then (fewer if it refused)."""
        ...

    def swap_tail(self, keep: int, n: int) -> None:
        """The cached tokens after the first `keep`: the first `n` of them go after the rest
        (positions exchanged; the keys are shifted by the next evaluation). What was evaluated
        last then stands before a run cached earlier: text inserted before that run."""
        ...

    def save_state(self) -> Snapshot:
        """Copy the cache (tokens and their keys/values) so another document can use it."""
        ...

    def load_state(self, snapshot: Snapshot) -> None: ...

    def close(self) -> None: ...


def detokenize(model: ModelBackend, tokens: Sequence[int]) -> str:
    return b"".join(model.token_bytes(t) for t in tokens).decode("utf-8", errors="replace")


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def moved_runs(cached: Sequence[int], tokens: Sequence[int], keep: int, min_run: int) -> list[Run]:
    """Runs of `cached` after its first `keep` tokens that `tokens` has next, each at least
    `min_run` long, earlier than the cache holds them (text removed before them), as llama-server
    reuses its cache: what `tokens` has next is looked for further on in the cache, never the
    other way round (text inserted is evaluated, with all after it). The last token of `tokens`
    is left to evaluate (its logits)."""
    runs: list[Run] = []
    head_c, head_p, end = keep, keep, len(tokens) - 1
    while head_p + min_run <= end and head_c + min_run <= len(cached):
        want = list(tokens[head_p : head_p + min_run])
        try:
            head_c = cached.index(want[0], head_c)
        except ValueError:
            break
        if list(cached[head_c : head_c + min_run]) != want:
            head_c += 1
            continue
        n = min_run
        while (
            head_c + n < len(cached)
            and head_p + n < end
            and cached[head_c + n] == tokens[head_p + n]
        ):
            n += 1
        runs.append((head_c, head_p, n))
        head_c, head_p = head_c + n, head_p + n
    return runs


def kept_by_sync(model: ModelBackend, tokens: Sequence[int]) -> int:
    """How many cached tokens `sync(model, tokens)` keeps (the rest it evaluates)."""
    keep = min(common_prefix_len(model.tokens, tokens), len(tokens) - 1)
    if not model.info.supports_rollback and keep < len(model.tokens):
        keep = 0  # no partial removal on this architecture: start over
    return keep


def sync(
    model: ModelBackend,
    tokens: Sequence[int],
    *,
    check: Callable[[], None] | None = None,
    chunk: int = 64,
    abort: CancelToken | None = None,
) -> tuple[np.ndarray, int]:
    """Make the cache hold exactly `tokens`, evaluating only what differs from what it holds.

    Returns the logits after the last token and the number of tokens evaluated. At least the
    last token is evaluated (its logits are not kept), so this is never a no-op. Long prompts
    are evaluated in chunks with `check()` (cancellation) between them; a cancelled prompt keeps
    what it evaluated, so the next request for the document starts from there. Cached runs the
    prompt has earlier (text removed before them) are moved into place, not evaluated
    (`moved_runs`, where the model's `shift_min` allows).

    With `abort` (work whose cancel means nobody wants the rest), its cancel stops the chunk
    being computed (losing it) instead of waiting for its end, so the chunks can be large
    (ABORTABLE_CHUNK), which evaluates faster.
    """
    if not tokens:
        raise ValueError("cannot sync an empty token sequence")
    keep = kept_by_sync(model, tokens)
    runs: list[Run] = []
    if model.shift_min and model.info.can_shift and keep < len(model.tokens):
        runs = moved_runs(model.tokens, tokens, keep, model.shift_min)
    if runs:
        keep = model.move_back(keep, runs)
    model.truncate(keep)
    rest = list(tokens[keep:])
    rows = np.zeros((0, 0), dtype=np.float32)
    first = 0
    if runs:  # (the move is applied by the next evaluation: one that no cancel stops)
        rows = model.evaluate(rest[:1], logits_from=0 if len(rest) == 1 else 1)
        first = 1
    out = append(model, rest[first:], check=check, chunk=chunk, abort=abort, logits=True)
    rows = rows if out is None else out
    return rows[-1], len(rest)


def append(
    model: ModelBackend,
    tokens: Sequence[int],
    *,
    check: Callable[[], None] | None = None,
    chunk: int = 64,
    abort: CancelToken | None = None,
    logits: bool = False,
) -> np.ndarray | None:
    """Evaluate `tokens` after what the cache holds, in chunks with `check()` between them (and
    `abort` looked at while the model computes: see sync); the last token's logits with
    `logits`. What was evaluated before a cancel stays in the cache."""
    rows = None
    for start in range(0, len(tokens), chunk):
        if check is not None:
            check()
        piece = tokens[start : start + chunk]
        last = logits and start + chunk >= len(tokens)  # the final chunk: the last logits
        try:
            rows = model.evaluate(
                piece, logits_from=len(piece) - 1 if last else len(piece), abort=abort
            )
        except Aborted:
            if check is not None:
                check()  # (the cancel's own reason)
            raise
    return rows


def check_model_file(path: str, *, what: str = "model") -> Path:
    """Fail early, with the fix in the message, on a missing, unreadable or non-GGUF file."""
    file = Path(path)
    fix = f"Set `{what}` to a .gguf file, or run `spec-lsp models pull` for the defaults."
    if not file.is_file():
        raise EngineError(f"{what} file not found: {file}. {fix}")
    try:
        check_header(file)
    except OSError as exc:
        raise EngineError(f"cannot read {what} file {file}: {exc.strerror}. {fix}") from exc
    except GGUFFormatError as exc:
        raise EngineError(f"{what} file {file} is not a GGUF model ({exc}). {fix}") from exc
    return file
