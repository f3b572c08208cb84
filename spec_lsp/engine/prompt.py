"""The prompt stage: the window around the cursor, laid out in the model's FIM template, as tokens.

Two things make typing cheap and the model's first token right:
- the last few lines before the cursor go after the middle token (`split_for_typing`), so a
  keystroke appends to the prompt instead of changing its middle;
- token healing: a prompt that ends inside a word leaves that word's token out and lets the model
  re-choose it among the tokens that start with its text (`VocabIndex`); `heal` removes it, and
  the cursor line's trailing blanks the prompt leaves out, from what the model writes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from spec_lsp.config import Settings
from spec_lsp.engine.backends.base import ModelBackend, detokenize
from spec_lsp.engine.types import CompletionRequest, EngineError
from spec_lsp.prompts import fim, window

SPLIT_LINES = 8


@dataclass(frozen=True)
class Prompt:
    tokens: list[int]
    prefix: str  # the request's text before the cursor
    healed: str = ""  # the text of the user's last token, left out for the model to re-choose
    first_allowed: Sequence[int] | None = None  # the first token must be one of these


class PromptBuilder:
    """Prompts for one loaded model: its tokenizer, its FIM template, its vocabulary index."""

    def __init__(self, target: ModelBackend, template: fim.FimTemplate | None) -> None:
        self.target, self.template = target, template
        self.vocab = VocabIndex(target)  # for token healing; built at load, not on a keystroke

    def build(self, request: CompletionRequest, settings: Settings) -> Prompt:
        tokens, last = self.tokens(request, settings)
        if last and tokens[-1:] == last:  # token healing: let the model re-choose the last token
            piece = self.target.token_bytes(last[0])
            if piece.strip():
                healed = piece.decode("utf-8", "replace")
                return Prompt(tokens[:-1], request.prefix, healed, self.vocab.starting_with(piece))
        return Prompt(tokens, request.prefix)

    def text(self, prompt: Prompt, tokens: list[int]) -> str:
        """What generated `tokens` add to the user's text (healing undone)."""
        return heal(detokenize(self.target, tokens), prompt.prefix, prompt.healed)

    def tokens(self, request: CompletionRequest, settings: Settings) -> tuple[list[int], list[int]]:
        """The prompt's tokens, and the last token if it is the user's text (for healing)."""
        target = self.target
        prefix_budget, suffix_budget = settings.prefix_tokens, settings.suffix_tokens
        room = target.n_ctx - request.max_tokens - 8
        for _attempt in range(16):  # halve the budgets until the prompt fits
            prefix, suffix = window.window(
                request.prefix.rstrip(" \t"),  # trailing blanks: the model writes them (see heal)
                request.suffix,
                count_tokens=lambda text: len(target.tokenize(text)),
                prefix_budget=prefix_budget,
                suffix_budget=suffix_budget,
            )
            head, middle = split_for_typing(prefix, lines_before=request.prefix.count("\n"))
            segments = fim.build_prompt(
                self.template,
                prefix=head,
                suffix=suffix,
                file_name=request.file_name,
                language=request.language,
            ) + [fim.Segment(middle, special=False)]
            tokens = [t for seg in segments for t in target.tokenize(seg.text, special=seg.special)]
            if target.info.add_bos and "bos" in target.info.special:
                tokens.insert(0, target.info.special["bos"])
            if len(tokens) <= room:
                return tokens, (target.tokenize(middle)[-1:] if middle.strip() else [])
            prefix_budget, suffix_budget = prefix_budget // 2, suffix_budget // 2
        raise EngineError(
            f"the prompt needs {len(tokens)} tokens but the context holds {target.n_ctx}: "
            "raise `contextSize` or lower `prefixTokens`/`suffixTokens`."
        )


def split_for_typing(
    prefix: str, *, lines_before: int, every: int = SPLIT_LINES
) -> tuple[str, str]:
    """Split the prefix window so that typing is an append to the prompt.

    The FIM prompt is prefix-block, suffix, then the middle. The last few lines before the cursor
    (the cursor's line and up to `every - 1` lines above, counted from absolute line numbers so
    the split stays put while typing) go after the middle token, as if the model had written
    them. A keystroke then appends to the prompt instead of invalidating the suffix block; the
    block is re-evaluated once every `every` lines. (Suffix-first order would also make typing
    an append, but Qwen2.5-Coder does not understand it; see research/fim_layout.md.)
    """
    keep = lines_before % every  # whole lines after the split, before the cursor's line
    cut = len(prefix)
    for _ in range(keep + 1):
        cut = prefix.rfind("\n", 0, cut)
        if cut < 0:
            return "", prefix
    return prefix[: cut + 1], prefix[cut + 1 :]


class VocabIndex:
    """Token ids by the text they start with (for token healing), built once per model."""

    def __init__(self, model: ModelBackend) -> None:
        self.model = model
        self._pieces = [model.token_bytes(i) for i in range(model.info.n_vocab)]
        self._cache: OrderedDict[bytes, list[int]] = OrderedDict()

    def starting_with(self, prefix: bytes) -> list[int]:
        found = self._cache.get(prefix)
        if found is None:
            found = [i for i, piece in enumerate(self._pieces) if piece.startswith(prefix)]
            self._cache[prefix] = found
            if len(self._cache) > 512:
                self._cache.popitem(last=False)
        return found


def heal(generated: str, prefix: str, healed: str = "") -> str:
    """Undo the prompt's omissions: the last token (token healing) and the blanks before the cursor.

    Token healing: a prompt ending in a partial word ("i" of "if") tokenizes it as a whole token
    (" i") the model then continues as if complete. The prompt leaves that token out and the
    first generated token must start with its text (`first_allowed`); the text is removed here.

    Tokenizers merge runs of spaces with the next word (" if", 8 spaces as one token): a prompt
    that ends in the user's indentation makes the model emit one space too many. The prompt
    leaves the cursor line's trailing blanks out; the model writes them, and they are removed
    here. If it chose other indentation, its own leading blanks are dropped instead."""
    if healed and generated.startswith(healed):
        generated = generated[len(healed) :]
    blanks = prefix[len(prefix.rstrip(" \t")) :]
    if not blanks:
        return generated
    if generated.startswith(blanks):
        return generated[len(blanks) :]
    return generated.lstrip(" \t") if generated[:1] in (" ", "\t") else generated
