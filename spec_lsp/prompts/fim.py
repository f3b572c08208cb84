"""Fill-in-the-middle templates as data, per model family, and their detection.

A prompt is a list of segments: template tokens (`special=True`, tokenized with special-token
parsing) and user text (`special=False`, so code that contains `<|fim_prefix|>` cannot inject).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class FimTemplate:
    name: str
    prefix: str
    suffix: str
    middle: str
    end_tokens: tuple[str, ...] = ()
    suffix_first: bool = False  # Codestral: [SUFFIX] S [PREFIX] P
    file_header: str = ""  # e.g. "<|file_sep|>{name}\n": where the file name goes, if anywhere
    signature: tuple[str, ...] = ()  # extra tokens that identify the family


@dataclass(frozen=True)
class Segment:
    text: str
    special: bool


TEMPLATES: dict[str, FimTemplate] = {
    t.name: t
    for t in (
        FimTemplate(
            "qwen",
            "<|fim_prefix|>",
            "<|fim_suffix|>",
            "<|fim_middle|>",
            ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|im_end|>"),
            file_header="<|file_sep|>{name}\n",
            signature=("<|fim_pad|>", "<|repo_name|>"),
        ),
        FimTemplate(
            "codegemma",
            "<|fim_prefix|>",
            "<|fim_suffix|>",
            "<|fim_middle|>",
            ("<|file_separator|>", "<eos>"),
            signature=("<|file_separator|>",),
        ),
        FimTemplate(
            "starcoder",
            "<fim_prefix>",
            "<fim_suffix>",
            "<fim_middle>",
            ("<|endoftext|>", "<file_sep>"),
            file_header="<file_sep>{name}\n",
        ),
        FimTemplate(
            "codellama", "<PRE> ", " <SUF>", " <MID>", ("<EOT>", "</s>"), signature=("<EOT>",)
        ),
        FimTemplate(
            "deepseek",
            "<｜fim▁begin｜>",
            "<｜fim▁hole｜>",
            "<｜fim▁end｜>",
            ("<｜end▁of▁sentence｜>", "<|EOT|>"),
        ),
        FimTemplate("codestral", "[PREFIX]", "[SUFFIX]", "", ("</s>",), suffix_first=True),
    )
}
DETECTION_ORDER = ("codegemma", "qwen", "starcoder", "deepseek", "codestral", "codellama")


def _marker(template: FimTemplate, text: str) -> str:
    return text.strip()


def detect(
    has_token: Callable[[str], bool], *, architecture: str = "", model_name: str = ""
) -> FimTemplate | None:
    """The family whose FIM tokens exist in the vocabulary; None means prefix-only prompting."""
    for name in DETECTION_ORDER:
        template = TEMPLATES[name]
        needed = [
            _marker(template, t) for t in (template.prefix, template.suffix, template.middle) if t
        ]
        if not all(has_token(t) for t in needed):
            continue
        if template.signature and not any(has_token(t) for t in template.signature):
            if name == "codegemma" and "gemma" not in architecture.lower():
                continue
        return template
    return None


def resolve(
    setting: str, has_token: Callable[[str], bool], architecture: str = "", model_name: str = ""
) -> FimTemplate | None:
    """`auto` detects; `none` is prefix-only; a family name must match the model's tokens."""
    if setting == "none":
        return None
    if setting == "auto":
        return detect(has_token, architecture=architecture, model_name=model_name)
    template = TEMPLATES.get(setting)
    if template is None:
        raise ValueError(
            f"unknown FIM template {setting!r}; use auto, none or one of {', '.join(TEMPLATES)}"
        )
    missing = [
        t
        for t in (template.prefix, template.suffix, template.middle)
        if t and not has_token(t.strip())
    ]
    if missing:
        raise ValueError(
            f"template {setting!r} needs the tokens {', '.join(missing)}, which this model does not have; "
            "set fimTemplate to 'auto'"
        )
    return template


def build_prompt(
    template: FimTemplate | None,
    *,
    prefix: str,
    suffix: str,
    file_name: str = "",
    language: str = "",
) -> list[Segment]:
    """Segments of a FIM prompt in the template's order (most stable pieces first)."""
    if template is None:
        return [Segment(prefix, special=False)]
    head: list[Segment] = []
    if template.file_header and file_name:
        marker, _, rest = template.file_header.partition("{name}")
        head = [Segment(marker, special=True), Segment(file_name + rest, special=False)]
    if template.suffix_first:
        body = [
            Segment(template.suffix, True),
            Segment(suffix, False),
            Segment(template.prefix, True),
            Segment(prefix, False),
        ]
    else:
        body = [
            Segment(template.prefix, True),
            Segment(prefix, False),
            Segment(template.suffix, True),
            Segment(suffix, False),
            Segment(template.middle, True),
        ]
    return [s for s in head + body if s.text]
