"""The prompt for a remote engine: the same window, layout and FIM template as the
in-process engine's (`prompt`), as one string the server tokenizes (`build`, for
/v1/completions), or as the parts llama-server's /infill lays out itself (`build_infill`).

No local tokenizer: the window is budgeted with the server's own counts of its blocks of lines,
learnt off the request's path (`tokens`); a text not counted yet is estimated.

The context block (other files' parts, engine/context) opens the prompt as in-process, chosen
while idle for the last place asked (`stage`); /infill takes its files as
`input_extra`.

What the in-process engine does and this cannot: token healing (it needs the vocabulary and a
constraint on the first token), so a prompt ends at the user's last character. The cursor
line's trailing blanks are left out and undone (`heal`) as in-process. User text and template
tokens travel in one string to /v1/completions, so the server's tokenizer parses special-token
texts inside the code too (the in-process engine keeps them apart, and so does /infill).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spec_lsp.config import Settings
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.types import CompletionRequest
from spec_lsp.prompts import fim, window
from spec_lsp.prompts.healing import heal
from spec_lsp.prompts.window import split_for_typing

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


REST_BUDGETS = 4  # /infill: a multi-line answer's generation ends after this many answer budgets


@dataclass(frozen=True)
class TextPrompt:
    text: str  # what the server completes (/infill: the texts sent, for learning their count)
    prefix: str  # the request's text before the cursor (to undo the left-out blanks)
    stop: tuple[str, ...]  # texts that end the completion: the template's end tokens
    block_tokens: int = 0  # what the context block takes (estimated in the server's tokens)
    infill: dict[str, Any] | None = None  # /infill's fields, for llama-server

    def generated(self, text: str) -> str:
        """What the server's text adds to the user's (the left-out blanks undone)."""
        return heal(text, self.prefix)


def build(
    request: CompletionRequest,
    settings: Settings,
    template: fim.FimTemplate | None,
    *,
    count_tokens: Callable[[str], int],
    block: Block | None = None,
) -> TextPrompt:
    """The prompt's text; after the context `block` if given (the prefix's budget less what the
    block takes, so that the prompt is no longer than without it)."""
    layout = block.layout() if block is not None else {}
    shown = 0
    if block is not None:
        empty = fim.render(fim.build_prompt(template, prefix="", suffix=""))
        shown = count_tokens(fim.render(fim.build_prompt(template, prefix="", suffix="", **layout)))
        shown = max(0, shown - count_tokens(empty))
    prefix, suffix = _window(request, settings, count_tokens, shown)
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


def build_infill(
    request: CompletionRequest,
    settings: Settings,
    *,
    count_tokens: Callable[[str], int],
    multiline: bool,
    block: Block | None = None,
) -> TextPrompt:
    """llama-server's /infill fields: the same window as `build`, the cursor's line as `prompt`
    (after the prefix, as llama.vim sends it), the block's files as `input_extra`; `n_indent`
    (a multi-line answer ends at a line indented less than the cursor's) and `t_max_predict_ms`
    (past REST_BUDGETS answer budgets, it ends at the next line's end)."""
    extra = [{"filename": path, "text": text} for path, text in (block.files if block else ())]
    shown = sum(count_tokens(f"{e['filename']}\n{e['text']}") + 1 for e in extra)
    prefix, suffix = _window(request, settings, count_tokens, shown)
    cut = prefix.rfind("\n") + 1
    fields: dict[str, Any] = {
        "input_prefix": prefix[:cut],
        "prompt": prefix[cut:],
        "input_suffix": suffix,
        "input_extra": extra,
        "cache_prompt": True,
    }
    if multiline:
        line = request.prefix[request.prefix.rfind("\n") + 1 :]
        fields["n_indent"] = len(line) - len(line.lstrip(" \t"))
        if settings.answer_budget_ms:  # (the first line is answered within the budget; the
            # rest goes on into the cache, for as long again three times, to a line's end)
            fields["t_max_predict_ms"] = REST_BUDGETS * settings.answer_budget_ms
    sent = "".join((prefix, suffix, *(e["filename"] + e["text"] for e in extra)))
    return TextPrompt(
        text=sent,
        prefix=request.prefix,
        stop=tuple(request.stop),
        block_tokens=shown,
        infill=fields,
    )


def _window(
    request: CompletionRequest, settings: Settings, count: Callable[[str], int], block: int
) -> tuple[str, str]:
    """The prefix (its trailing blanks left out) and suffix within budget; the prefix gives up
    what the context block takes, down to half its budget."""
    return window.window(
        request.prefix.rstrip(" \t"),
        request.suffix,
        count_tokens=count,
        prefix_budget=max(settings.prefix_tokens - block, settings.prefix_tokens // 2),
        suffix_budget=settings.suffix_tokens,
    )
