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
from dataclasses import dataclass, replace

from spec_lsp.config import Settings
from spec_lsp.engine.backends.base import ModelBackend, detokenize
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.local.text_tokens import TextTokens
from spec_lsp.engine.types import CompletionRequest, EngineError
from spec_lsp.prompts import fim, window
from spec_lsp.prompts.healing import heal
from spec_lsp.prompts.window import split_for_typing


@dataclass(frozen=True)
class Prompt:
    tokens: list[int]
    prefix: str  # the request's text before the cursor
    healed: str = ""  # the text of the user's last token, left out for the model to re-choose
    first_allowed: Sequence[int] | None = None  # the first token must be one of these
    first_line: int = 0  # the document line the prompt's text before the cursor starts at
    head: int = 0  # tokens up to the end of the text before the split (see split_for_typing)
    anchored: bool = False  # laid out from the file prefix's line, not a window
    block: Block | None = None  # the context block the prompt opens with


class PromptBuilder:
    """Prompts for one loaded model: its tokenizer, its FIM template, its vocabulary index.

    The document's text is tokenized in line chunks where the tokenizer allows
    (text_tokens.py): a prompt whose text starts on a line of the file prefix (file_prefix.py)
    is then a token prefix of it."""

    def __init__(self, target: ModelBackend, template: fim.FimTemplate | None) -> None:
        self.target, self.template = target, template
        self.vocab = VocabIndex(target)  # for token healing; built at load, not on a keystroke
        self.texts = TextTokens(target)  # the document's text as tokens (and counted)
        # whether prompts start with the text before the cursor (prefix-suffix-middle order),
        # so that places in a file can share a prefix's KV
        self.shares_prefix = template is None or not template.suffix_first

    def build(
        self, request: CompletionRequest, settings: Settings, block: Block | None = None
    ) -> Prompt:
        """The window around the cursor (after the context block, if given)."""
        return replace(self._healed(request, *self.tokens(request, settings, block)), block=block)

    def build_anchored(
        self,
        request: CompletionRequest,
        settings: Settings,
        anchor: int,
        budget: int,
        block: Block | None = None,
    ) -> Prompt | None:
        """The prompt with the text before the cursor from line `anchor` on (instead of the
        window); None if that is over `budget` tokens, or the prompt over the context."""
        cursor_line = request.prefix.count("\n")
        if anchor > cursor_line or not self.shares_prefix:
            return None
        before = request.prefix[window.line_offset(request.prefix, anchor) :].rstrip(" \t")
        suffix = window.suffix_window(
            request.suffix, count_tokens=self.texts.count, budget=settings.suffix_tokens
        )
        tokens, last, head = self._assemble(request, before, suffix, cursor_line, block)
        if head > budget + self.block_tokens(block) or (
            len(tokens) > self.target.n_ctx - request.max_tokens - 8
        ):
            return None
        return replace(
            self._healed(request, tokens, last, anchor, head), anchored=True, block=block
        )

    def candidates(
        self,
        request: CompletionRequest,
        settings: Settings,
        *,
        block: Block | None = None,
        anchor: tuple[int, int] | None = None,
    ) -> list[Prompt]:
        """The prompts a request may be asked with, the window first: the window after the
        context `block`, and the prompt laid out from the file prefix's `anchor` (its line, its
        budget with the block's share) where that shows the model no less of the file."""
        window = self.build(request, settings)
        found = [window]
        if not window.tokens:
            return found
        if block is not None:
            found.append(self.build(request, settings, block))
        if anchor is not None:
            line, budget = anchor
            budget -= self.block_tokens(block)
            anchored = (
                self.build_anchored(request, settings, line, budget, block) if budget else None
            )
            if anchored is not None and anchored.first_line <= window.first_line:
                found.append(anchored)
        return found

    def file_prefix(
        self,
        text: str,
        request: CompletionRequest,
        anchor: int,
        budget: int,
        block: Block | None = None,
    ) -> list[int]:
        """The tokens every anchored prompt at a place of `text` below `anchor` starts with:
        the context block, the template's opening and the text from line `anchor` on, at most
        `budget` tokens besides the block's."""
        start = window.line_offset(text, anchor)
        end, used = start, 0
        for chunk in window.line_chunks(text[start : start + budget * 16]):
            used += len(self.target.tokenize(chunk))
            end += len(chunk)
            if used >= budget:
                break
        tokens, _last, head = self._assemble(request, text[start:end], "", -1, block)
        return tokens[: min(head, budget + self.block_tokens(block))]

    def block_tokens(self, block: Block | None) -> int:
        """What the context block takes at a prompt's head (its own tokens and its markers)."""
        if block is None:
            return 0
        if block.tokens < 0:
            segments = fim.build_prompt(self.template, prefix="", suffix="", **block.layout())
            empty = fim.build_prompt(self.template, prefix="", suffix="")
            if self.texts.chunked:  # its lines' tokens, kept: each prompt of the block reuses them
                for seg in segments:
                    for chunk in [] if seg.special else window.line_chunks(seg.text):
                        block.memo[chunk] = self.target.tokenize(chunk)
            counted = self._count_segments(segments, block.memo)
            block.tokens = counted - self._count_segments(empty)
        return block.tokens

    def _count_segments(
        self, segments: Sequence[fim.Segment], memo: dict[str, list[int]] | None = None
    ) -> int:
        return sum(
            len(self.target.tokenize(s.text, special=True))
            if s.special
            else len(self.texts(s.text, memo))
            for s in segments
        )

    def text(self, prompt: Prompt, tokens: list[int]) -> str:
        """What generated `tokens` add to the user's text (healing undone)."""
        return heal(detokenize(self.target, tokens), prompt.prefix, prompt.healed)

    def reader(self, prompt: Prompt) -> GeneratedText:
        """`text` for one generation, read after every round (GeneratedText)."""
        return GeneratedText(self.target, prompt)

    def tokens(
        self, request: CompletionRequest, settings: Settings, block: Block | None = None
    ) -> tuple[list[int], list[int], int, int]:
        """The prompt's tokens; the last token if it is the user's text (for healing); the
        line the window starts at; the tokens up to the end of the head (before the split)."""
        prefix_budget, suffix_budget = settings.prefix_tokens, settings.suffix_tokens
        room = self.target.n_ctx - request.max_tokens - 8
        cursor_line = request.prefix.count("\n")
        for _attempt in range(16):  # halve the budgets until the prompt fits
            prefix, suffix = window.window(
                request.prefix.rstrip(" \t"),  # trailing blanks: the model writes them (see heal)
                request.suffix,
                count_tokens=self.texts.count,
                prefix_budget=prefix_budget,
                suffix_budget=suffix_budget,
            )
            tokens, last, head = self._assemble(request, prefix, suffix, cursor_line, block)
            if len(tokens) <= room:
                return tokens, last, cursor_line - prefix.count("\n"), head
            prefix_budget, suffix_budget = prefix_budget // 2, suffix_budget // 2
        raise EngineError(
            f"the prompt needs {len(tokens)} tokens but the context holds {self.target.n_ctx}: "
            "raise `contextSize` or lower `prefixTokens`/`suffixTokens`."
        )

    def _assemble(
        self,
        request: CompletionRequest,
        before: str,
        suffix: str,
        cursor_line: int,
        block: Block | None = None,
    ) -> tuple[list[int], list[int], int]:
        """(tokens, the last token if the user's, the tokens up to the end of the head) for the
        text `before` the cursor and the `suffix`, after the context block if any;
        cursor_line -1: all of `before` is head."""
        if cursor_line < 0:
            head_text, middle = before, ""
        else:
            head_text, middle = split_for_typing(before, lines_before=cursor_line)
        segments = fim.build_prompt(
            self.template,
            prefix=head_text,
            suffix=suffix,
            file_name=request.file_name,
            language=request.language,
            **(block.layout() if block is not None else {}),
        )
        target = self.target
        memo = block.memo if block is not None and self.block_tokens(block) else None
        tokens: list[int] = []
        if target.info.add_bos and "bos" in target.info.special:
            tokens.append(target.info.special["bos"])
        head = -1
        suffix_marker = self.template.suffix if self.template is not None else None
        for seg in segments:
            if seg.special and seg.text == suffix_marker and head < 0:
                head = len(tokens)
            if seg.special:
                tokens += target.tokenize(seg.text, special=True)
            else:
                tokens += self.texts(seg.text, memo)
        if head < 0:
            head = len(tokens)
        middle_tokens = target.tokenize(middle) if middle else []
        tokens += middle_tokens
        return tokens, (middle_tokens[-1:] if middle.strip() else []), head

    def _healed(
        self,
        request: CompletionRequest,
        tokens: list[int],
        last: list[int],
        first_line: int,
        head: int,
    ) -> Prompt:
        if last and tokens[-1:] == last:  # token healing: let the model re-choose the last token
            piece = self.target.token_bytes(last[0])
            if piece.strip():
                healed = piece.decode("utf-8", "replace")
                return Prompt(
                    tokens[:-1],
                    request.prefix,
                    healed,
                    self.vocab.starting_with(piece),
                    first_line=first_line,
                    head=min(head, len(tokens) - 1),
                )
        return Prompt(tokens, request.prefix, first_line=first_line, head=head)


class VocabIndex:
    """Token ids by the text they start with (for token healing), built once per model."""

    def __init__(self, model: ModelBackend) -> None:
        self.model = model
        self.pieces = [model.token_bytes(i) for i in range(model.info.n_vocab)]
        self._cache: OrderedDict[bytes, list[int]] = OrderedDict()

    def starting_with(self, prefix: bytes) -> list[int]:
        found = self._cache.get(prefix)
        if found is None:
            found = [i for i, piece in enumerate(self.pieces) if piece.startswith(prefix)]
            self._cache[prefix] = found
            if len(self._cache) > 512:
                self._cache.popitem(last=False)
        return found


class GeneratedText:
    """What a generation's tokens add to the user's text, read after every round: the bytes of
    the tokens read before are kept (a generation only appends to its tokens), and a second
    read of the same tokens (the stop rule, then the text so far) is the first's."""

    def __init__(self, target: ModelBackend, prompt: Prompt) -> None:
        self.target, self.prompt = target, prompt
        self._bytes = bytearray()
        self._tokens: list[int] = []
        self._text = ""

    def __call__(self, tokens: list[int]) -> str:
        n = len(self._tokens)
        if len(tokens) == n and (not n or tokens[-1] == self._tokens[-1]):
            return self._text
        if len(tokens) < n or tokens[:n] != self._tokens:  # (not an extension: read afresh)
            self._bytes.clear()
            self._tokens.clear()
        for token in tokens[len(self._tokens) :]:
            self._bytes.extend(self.target.token_bytes(token))
        self._tokens[:] = tokens
        text = self._bytes.decode("utf-8", errors="replace")
        self._text = heal(text, self.prompt.prefix, self.prompt.healed)
        return self._text
