"""Deterministic fake models for tests and `spec-lsp serve --backend fake`.

`FakeModel` is byte-level (token id = byte value, specials above 255) and computes logits from
the whole context with any function you give it, so tests can build random, adversarial or
scripted models. `corpus_model()` continues code from a small built-in corpus: after the FIM
middle token it looks up the longest tail of the document in the corpus and predicts the next
character, which makes end-to-end completions predictable (`def fo` -> `o(x):` ...).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence

import numpy as np

from spec_lsp.engine.backends.base import Aborted, ModelInfo, Run, Snapshot
from spec_lsp.engine.types import CancelToken

SPECIALS = ("<|endoftext|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>")
EOS = 256
FIM_PRE, FIM_SUF, FIM_MID = 257, 258, 259
N_VOCAB = 256 + len(SPECIALS)

CORPUS = (
    "def foo(x):\n    return x * 2\n",
    "def add(a, b):\n    return a + b\n",
    'def greet(name):\n    print(f"Hello, {name}!")\n',
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n",
    "for i in range(10):\n    print(i)\n",
    "import os\nimport sys\n",
)

LogitsFn = Callable[[Sequence[int]], np.ndarray]


class FakeModel:
    def __init__(
        self,
        logits_fn: LogitsFn,
        *,
        n_vocab: int = N_VOCAB,
        name: str = "fake",
        n_ctx: int = 8192,
        delay_s: float = 0.0,
        fingerprint: str = "fake-bytes",
    ) -> None:
        self._logits_fn = logits_fn
        self._tokens: list[int] = []
        self._n_ctx = n_ctx
        self.delay_s = delay_s
        self.evaluated = 0  # tokens evaluated in total (for cache tests)
        self.shift_min = 0  # (the engine sets it from `kvShift`)
        self.moved = 0
        self.aborted = 0  # evaluations stopped by their abort token
        self.info = ModelInfo(
            path=f"<{name}>",
            name=name,
            architecture="fake",
            n_vocab=n_vocab,
            n_ctx_train=n_ctx,
            special={"eos": EOS, "fim_pre": FIM_PRE, "fim_suf": FIM_SUF, "fim_mid": FIM_MID},
            stop_ids=frozenset({EOS}),
            vocab_fingerprint=fingerprint,
            can_shift=True,
        )

    @property
    def tokens(self) -> list[int]:
        return self._tokens

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        if special and text in SPECIALS:
            return [256 + SPECIALS.index(text)]
        return list(text.encode("utf-8"))

    def token_bytes(self, token: int) -> bytes:
        return bytes([token]) if token < 256 else b""

    def evaluate(
        self,
        tokens: Sequence[int],
        *,
        logits_from: int,
        abort: CancelToken | None = None,
        view: bool = False,
    ) -> np.ndarray:
        """(`delay_s` a call, as a model's compute: `abort` is looked at through it)"""
        self._compute(abort)
        rows = []
        for i, token in enumerate(tokens):
            self._tokens.append(int(token))
            if i >= logits_from:
                rows.append(self._logits_fn(self._tokens))
        self.evaluated += len(tokens)
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), self.info.n_vocab)

    def _compute(self, abort: CancelToken | None) -> None:
        end = time.perf_counter() + self.delay_s
        while True:
            if abort is not None and abort.cancelled:
                self.aborted += 1
                raise Aborted("aborted while the model computed")
            left = end - time.perf_counter()
            if left <= 0:
                return
            time.sleep(min(left, 0.005) if abort is not None else left)

    def truncate(self, n_keep: int) -> None:
        del self._tokens[n_keep:]

    def move_back(self, keep: int, runs: Sequence[Run]) -> int:
        """(No keys to shift: the logits come from the tokens, as after evaluating them.)"""
        moved = [t for start, _at, n in runs for t in self._tokens[start : start + n]]
        self._tokens = self._tokens[:keep] + moved
        self.moved += len(moved)
        return len(self._tokens)

    def swap_tail(self, keep: int, n: int) -> None:
        tail = self._tokens[keep:]
        self._tokens = self._tokens[:keep] + tail[n:] + tail[:n]
        self.moved += n

    def save_state(self) -> Snapshot:
        return Snapshot(tuple(self._tokens))

    def load_state(self, snapshot: Snapshot) -> None:
        self._tokens = list(snapshot.tokens)

    def close(self) -> None:
        self._tokens = []


def hashed_noise(
    context: Sequence[int], n_vocab: int, *, window: int = 3, salt: str = ""
) -> np.ndarray:
    """Pseudo-random logits that depend only on the last `window` tokens (deterministic)."""
    key = hashlib.blake2b(f"{salt}:{list(context[-window:])}".encode(), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(key, "little"))
    return rng.normal(0.0, 2.0, n_vocab)


def corpus_logits(context: Sequence[int], corpus: Sequence[str] = CORPUS) -> np.ndarray:
    logits = hashed_noise(context, N_VOCAB) * 0.25
    document = _document(context)
    nxt = _continue_from_corpus(document, corpus)
    logits[EOS if nxt is None else ord(nxt)] += 12.0
    return logits


def corpus_model(*, delay_s: float | None = None) -> FakeModel:
    if delay_s is None:
        delay_s = float(os.environ.get("SPEC_LSP_FAKE_DELAY_MS", "0")) / 1000.0
    return FakeModel(corpus_logits, name="fake-corpus", delay_s=delay_s)


def _document(context: Sequence[int]) -> str:
    """The text the cursor continues: the FIM prefix plus what was generated after FIM middle."""
    tokens = list(context)
    if FIM_MID in tokens:
        mid = len(tokens) - 1 - tokens[::-1].index(FIM_MID)
        pre = tokens.index(FIM_PRE) + 1 if FIM_PRE in tokens else 0
        suf = tokens.index(FIM_SUF) if FIM_SUF in tokens else mid
        tokens = tokens[pre:suf] + tokens[mid + 1 :]
    return bytes(t for t in tokens if t < 256).decode("utf-8", errors="replace")


def _continue_from_corpus(
    document: str, corpus: Sequence[str], *, min_match: int = 3
) -> str | None:
    """The character after the longest tail of `document` found in a snippet; None at its end."""
    for n in range(min(len(document), 40), min_match - 1, -1):
        for snippet in corpus:
            at = snippet.rfind(document[-n:])
            if at >= 0:
                return snippet[at + n] if at + n < len(snippet) else None
    return None
