"""Text between tokenizers: the text of a target context, kept up to date token by token, and
text turned back into target tokens with the boundary handled (shared by the cross-vocabulary
drafter and the open documents' lookup, which both draft text)."""

from __future__ import annotations

from collections.abc import Sequence

from spec_lsp.engine.backends.base import ModelBackend, common_prefix_len
from spec_lsp.engine.types import EngineError

ROUND_TRIP_PROBE = "def f(x):\n    return x + 1  # one\n\n\tpass\n"


class ContextText:
    """The target context as the bytes a left-to-right model continues, updated incrementally.

    FIM prompts: the prefix segment (after the prefix token, up to the next template token) and
    everything after the last middle token (suffix-first templates: after the last prefix
    token). Other prompts: every token's bytes (template tokens have none). Appending committed
    tokens costs only their bytes; a change before the open segment rebuilds (a new prompt).
    """

    def __init__(self, target: ModelBackend) -> None:
        self.target = target
        self._marks = frozenset(target.info.special.values())
        self._tokens: list[int] = []
        self._head = b""
        self._open_from = 0  # context index where the appendable segment starts
        self._open = bytearray()
        self._ends: list[int] = []  # byte end of each open-segment token

    def update(self, context: Sequence[int]) -> bytes:
        tokens, m = list(context), self._open_from
        if self._tokens and len(tokens) >= m and self._tokens[:m] == tokens[:m]:
            c = m + common_prefix_len(self._tokens[m:], tokens[m:])
            if self._marks.isdisjoint(tokens[c:]):
                del self._ends[c - m :]
                del self._open[self._ends[-1] if self._ends else 0 :]
                self._append(tokens[c:])
                self._tokens = tokens
                return self._head + bytes(self._open)
        self._rebuild(tokens)
        return self._head + bytes(self._open)

    def _rebuild(self, tokens: list[int]) -> None:
        special = self.target.info.special
        last = next((i for i in range(len(tokens) - 1, -1, -1) if tokens[i] in self._marks), -1)
        self._head = b""
        pre_id = special.get("fim_pre")
        if last >= 0 and tokens[last] == special.get("fim_mid") and pre_id is not None:
            pre = next((i for i in range(last - 1, -1, -1) if tokens[i] == pre_id), -1)
            if pre >= 0:
                end = next(i for i in range(pre + 1, last + 1) if tokens[i] in self._marks)
                self._head = self._bytes(tokens[pre + 1 : end])
        self._tokens, self._open_from = tokens, last + 1
        self._open, self._ends = bytearray(), []
        self._append(tokens[last + 1 :])

    def _append(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self._open += self.target.token_bytes(token)
            self._ends.append(len(self._open))

    def _bytes(self, tokens: Sequence[int]) -> bytes:
        return b"".join(self.target.token_bytes(t) for t in tokens)


def complete_utf8(data: bytes | bytearray) -> int:
    """Length of `data` without a trailing incomplete UTF-8 sequence."""
    i = len(data) - 1
    while i >= 0 and len(data) - i < 4 and data[i] & 0xC0 == 0x80:
        i -= 1
    if i < 0:
        return len(data)
    lead = data[i]
    need = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return i if len(data) - i < need else len(data)


def text_to_target(
    target: ModelBackend, last_token: int | None, text: str, *, final: bool = False
) -> list[int]:
    """Target tokens that continue a context ending in `last_token` with `text`.

    The context's last token is tokenized together with the text: if the tokenizer keeps it
    as it is, what follows is the text's tokenization in context; if it merges it with the text
    (the context ends inside what the tokenizer sees as one token), the text is tokenized on
    its own, as the target must continue from the token it has. Unless `final`, the last token
    is dropped: more text could extend it, and the target would then choose the longer token.
    """
    if not text:
        return []
    tokens: list[int] | None = None
    if last_token is not None:
        try:
            before = target.token_bytes(last_token).decode("utf-8")
        except UnicodeDecodeError:
            before = ""
        if before:
            merged = target.tokenize(before + text)
            if merged[:1] == [last_token]:
                tokens = merged[1:]
    if tokens is None:
        tokens = target.tokenize(text)
    return tokens if final else tokens[:-1]


def check_round_trip(model: ModelBackend, *, what: str) -> None:
    """Text must survive tokenize -> bytes exactly (byte-level BPE does; SentencePiece with a
    space prefix does not), or the two models would not agree on what the text is."""
    pieces = b"".join(model.token_bytes(t) for t in model.tokenize(ROUND_TRIP_PROBE))
    if pieces != ROUND_TRIP_PROBE.encode():
        raise EngineError(
            f"{what} {model.info.path}: its tokenizer does not reproduce text exactly, so it "
            "cannot draft across vocabularies. Use a byte-level BPE model (Qwen, Llama 3, "
            "SmolLM, StarCoder families) or set `drafter` to 'ngram'."
        )
