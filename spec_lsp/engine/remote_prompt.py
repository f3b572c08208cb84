"""The prompt stage for a remote engine: the same window, layout and FIM template as the
in-process engine's (`prompt`), as one string the server tokenizes.

No local tokenizer, so the window is budgeted in characters: `chars_per_token` is measured once
per connection with the server's own tokenizer (its /tokenize endpoint, where it has one) on
a sample of code, else CHARS_PER_TOKEN. A token count per window block would cost a network
round trip on every keystroke, and the window only needs a budget, not an exact count: the
server's context (or its error message) is the hard limit.

The context block (other files' parts, engine/context) opens the prompt as in-process, chosen
while idle for the last place asked (engine._choose_remote_block).

What the in-process engine does and this cannot: token healing (it needs the vocabulary and a
constraint on the first token), so a prompt ends at the user's last character. The cursor
line's trailing blanks are left out and undone (`heal`) as in-process. User text and template
tokens travel in one string, so the server's tokenizer parses special-token texts inside the
code too (the in-process engine keeps them apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spec_lsp.config import Settings
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.prompt import heal, split_for_typing
from spec_lsp.engine.types import CompletionRequest
from spec_lsp.prompts import fim, window

CHARS_PER_TOKEN = 3.0  # code in BPE vocabularies runs 3-4 characters a token: err on the short side
# model-name fragments (lower case) -> FIM family; the first match wins, None: prefix only
NAME_FAMILIES = (
    (("codegemma",), "codegemma"),
    (("qwen", "coder"), "qwen"),
    (("starcoder",), "starcoder"),
    (("deepseek", "coder"), "deepseek"),
    (("codestral",), "codestral"),
    (("codellama",), "codellama"),
    (("code-llama",), "codellama"),
)


def template_for(setting: str, model_name: str) -> fim.FimTemplate | None:
    """The FIM template: the `fimTemplate` setting, or with `auto` the family the model's name
    says (prefix-only prompting when it names none). Served models use the tokenizer's own
    spelling of the markers (Hugging Face: `<PRE>`, not the GGUF's `▁<PRE>`)."""
    if setting == "none":
        return None
    if setting == "auto":
        lowered = model_name.lower().replace("_", "-")
        setting = next(
            (fam for parts, fam in NAME_FAMILIES if all(p in lowered for p in parts)), ""
        )
        if not setting:
            return None
        if setting == "starcoder" and "starcoder2" not in lowered:
            return _variant("starcoder", "starcoder1")
    if setting == "codellama":
        return _variant("codellama", "plain")
    return fim.TEMPLATES[setting]


def _variant(family: str, name: str) -> fim.FimTemplate:
    return next(v for v in fim.VARIANTS[family] if v.variant == name)


@dataclass(frozen=True)
class TextPrompt:
    text: str  # what the server completes
    prefix: str  # the request's text before the cursor (to undo the left-out blanks)
    stop: tuple[str, ...]  # texts that end the completion: the template's end tokens
    block_tokens: int = 0  # what the context block takes (estimated in the server's tokens)

    def generated(self, text: str) -> str:
        """What the server's text adds to the user's (the left-out blanks undone)."""
        return heal(text, self.prefix)


def build(
    request: CompletionRequest,
    settings: Settings,
    template: fim.FimTemplate | None,
    *,
    chars_per_token: float = CHARS_PER_TOKEN,
    block: Block | None = None,
) -> TextPrompt:
    """The prompt's text; after the context `block` if given (the prefix's budget less what the
    block takes, so that the prompt is no longer than without it)."""

    def count(text: str) -> int:
        return math.ceil(len(text) / chars_per_token)

    layout = block.layout() if block is not None else {}
    shown = 0
    if block is not None:
        empty = fim.render(fim.build_prompt(template, prefix="", suffix=""))
        shown = count(fim.render(fim.build_prompt(template, prefix="", suffix="", **layout)))
        shown = max(0, shown - count(empty))
    prefix, suffix = window.window(
        request.prefix.rstrip(" \t"),
        request.suffix,
        count_tokens=count,
        prefix_budget=max(settings.prefix_tokens - shown, settings.prefix_tokens // 2),
        suffix_budget=settings.suffix_tokens,
    )
    head, middle = split_for_typing(prefix, lines_before=request.prefix.count("\n"))
    segments = fim.build_prompt(
        template,
        prefix=head,
        suffix=suffix,
        file_name=request.file_name,
        language=request.language,
        **layout,
    )
    text = fim.render(segments) + middle
    stop = tuple(dict.fromkeys((*request.stop, *(template.end_tokens if template else ()))))
    return TextPrompt(text=text, prefix=request.prefix, stop=stop, block_tokens=shown)
