"""Fill-in-the-middle templates as data, per model family, and their detection.

A prompt is a list of segments. Template tokens are `special=True`: the engine tokenizes them
with special-token parsing on. User text (code, file names) is `special=False`, so code that
contains `<|fim_prefix|>` cannot inject a control token. Segment texts are exact: spaces the
format needs (CodeLlama, Codestral) are spelled out in user segments, and the engine must
tokenize each segment without adding a sentencepiece word-boundary space of its own.

Token texts are written as the GGUF vocabulary spells them. Some families exist in several
spellings (CodeLlama's tokens carry the sentencepiece space: `▁<PRE>`); `detect` and `resolve`
return the variant whose tokens the model has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from spec_lsp.prompts.context_comments import as_comments

HasToken = Callable[[str], bool]


@dataclass(frozen=True)
class FimTemplate:
    name: str  # the family, as the `fimTemplate` setting names it
    prefix: str  # marker token texts, spelled as in the vocabulary
    suffix: str
    middle: str  # "" when the format has none (Codestral's prompt ends with the prefix)
    end_tokens: tuple[str, ...] = ()  # texts that end a completion (markers included)
    suffix_first: bool = False  # [SUFFIX] S [PREFIX] P (Codestral); otherwise P S M
    file_marker: str = ""  # token that opens a file; the file's name follows on its own line
    name_in_prefix: bool = False  # the name line follows the prefix marker (StarCoder2)
    prefix_lead: str = ""  # text before the prefix text (sentencepiece formats: a space)
    marker_lead: str = ""  # text before the suffix/middle markers (CodeLlama, plain spelling)
    identifying: tuple[str, ...] = ()  # tokens telling this family from one with equal markers
    variant: str = ""  # which spelling of the family this is (for logs)
    repo_marker: str = ""  # token that opens the repository format (other files go first)
    repo_name_end: str = ""  # text after the repository's name (Qwen: a newline)

    @property
    def markers(self) -> tuple[str, ...]:
        """The tokens the model must have for this template (in prompt order)."""
        order = (self.suffix, self.prefix) if self.suffix_first else (self.prefix, self.suffix)
        return tuple(t for t in (*order, self.middle) if t)


@dataclass(frozen=True)
class Segment:
    text: str
    special: bool


def _family(name: str, variants: list[FimTemplate]) -> tuple[FimTemplate, ...]:
    """Stamp the family name on its variants and add the markers to the end tokens."""
    return tuple(
        replace(v, name=name, end_tokens=tuple(dict.fromkeys((*v.end_tokens, *v.markers))))
        for v in variants
    )


# Preferred variant first. Sources: the model cards and reference code of each family, and
# llama.cpp's FIM token table (llama-vocab.cpp), which lists the spellings found in GGUF files.
VARIANTS: dict[str, tuple[FimTemplate, ...]] = {
    # Qwen2.5-Coder: <|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>. Repository format:
    # <|repo_name|>R\n<|file_sep|>path\ncode ... The current file's name goes before the FIM
    # prefix as its own <|file_sep|> line (as llama.cpp's /infill does).
    "qwen": _family(
        "qwen",
        [
            FimTemplate(
                "",
                "<|fim_prefix|>",
                "<|fim_suffix|>",
                "<|fim_middle|>",
                ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>", "<|im_end|>"),
                file_marker="<|file_sep|>",
                repo_marker="<|repo_name|>",
                repo_name_end="\n",
            )
        ],
    ),
    # CodeGemma shares Qwen's marker texts; <|file_separator|> (its end of file) tells them apart.
    "codegemma": _family(
        "codegemma",
        [
            FimTemplate(
                "",
                "<|fim_prefix|>",
                "<|fim_suffix|>",
                "<|fim_middle|>",
                ("<|file_separator|>", "<eos>", "<end_of_turn>"),
                identifying=("<|file_separator|>",),
            )
        ],
    ),
    # StarCoder2 trained FIM inside its repository format:
    # <file_sep><fim_prefix>path\nP<fim_suffix>S<fim_middle>. StarCoder 1 has no <file_sep>;
    # SantaCoder spells the markers with hyphens.
    "starcoder": _family(
        "starcoder",
        [
            FimTemplate(
                "",
                "<fim_prefix>",
                "<fim_suffix>",
                "<fim_middle>",
                ("<|endoftext|>", "<file_sep>", "<repo_name>", "<fim_pad>"),
                file_marker="<file_sep>",
                name_in_prefix=True,
                identifying=("<file_sep>",),
                variant="starcoder2",
                repo_marker="<repo_name>",
            ),
            FimTemplate(
                "",
                "<fim_prefix>",
                "<fim_suffix>",
                "<fim_middle>",
                ("<|endoftext|>", "<fim_pad>", "<filename>", "<reponame>"),
                variant="starcoder1",
            ),
            FimTemplate(
                "",
                "<fim-prefix>",
                "<fim-suffix>",
                "<fim-middle>",
                ("<|endoftext|>", "<fim-pad>"),
                variant="santacoder",
            ),
        ],
    ),
    # DeepSeek-Coder (fullwidth bars, U+2581 in the names).
    "deepseek": _family(
        "deepseek",
        [
            FimTemplate(
                "",
                "<｜fim▁begin｜>",
                "<｜fim▁hole｜>",
                "<｜fim▁end｜>",
                ("<｜end▁of▁sentence｜>", "<|EOT|>"),
            )
        ],
    ),
    # Codestral (Mistral tokenizer v2/v3): <s>[SUFFIX]S[PREFIX] P, suffix first; the space
    # before P is the sentencepiece word boundary of the prefix. [MIDDLE] exists but is unused.
    "codestral": _family(
        "codestral",
        [
            FimTemplate(
                "",
                "[PREFIX]",
                "[SUFFIX]",
                "",
                ("</s>", "[MIDDLE]"),
                suffix_first=True,
                prefix_lead=" ",
            )
        ],
    ),
    # CodeLlama: "<PRE> P <SUF>S <MID>". In its GGUF vocabulary the tokens carry the leading
    # sentencepiece space ("▁<SUF>" reads " <SUF>"); the space after <PRE> is P's word boundary.
    # A vocabulary with plain "<PRE>" tokens gets the spaces as text.
    "codellama": _family(
        "codellama",
        [
            FimTemplate(
                "",
                "▁<PRE>",
                "▁<SUF>",
                "▁<MID>",
                ("▁<EOT>", "<EOT>", "</s>"),
                prefix_lead=" ",
                variant="sentencepiece",
            ),
            FimTemplate(
                "",
                "<PRE>",
                "<SUF>",
                "<MID>",
                ("<EOT>", "▁<EOT>", "</s>"),
                prefix_lead=" ",
                marker_lead=" ",
                variant="plain",
            ),
        ],
    ),
}
TEMPLATES: dict[str, FimTemplate] = {name: variants[0] for name, variants in VARIANTS.items()}
DETECTION_ORDER = ("codegemma", "qwen", "starcoder", "deepseek", "codestral", "codellama")


def _usable(template: FimTemplate, has_token: HasToken) -> bool:
    return all(has_token(t) for t in template.markers)


def _pick_variant(name: str, has_token: HasToken) -> FimTemplate | None:
    """The family's first variant whose markers (and identifying tokens, if any) the model has;
    failing that, the first whose markers it has."""
    usable = [v for v in VARIANTS[name] if _usable(v, has_token)]
    identified = (v for v in usable if not v.identifying or any(map(has_token, v.identifying)))
    return next(identified, usable[0] if usable else None)


def detect(
    has_token: HasToken, *, architecture: str = "", model_name: str = ""
) -> FimTemplate | None:
    """The family whose FIM tokens the vocabulary has; None means prefix-only prompting.

    Qwen and CodeGemma use the same marker texts: CodeGemma is chosen when the vocabulary has
    `<|file_separator|>` or the architecture/model name says gemma, Qwen otherwise."""
    for name in DETECTION_ORDER:
        if name == "codegemma":
            gemma = "gemma" in architecture.lower() or "gemma" in model_name.lower()
            template = TEMPLATES[name]
            if _usable(template, has_token) and (
                gemma or any(has_token(t) for t in template.identifying)
            ):
                return template
            continue
        found = _pick_variant(name, has_token)
        if found is not None:
            return found
    return None


def resolve(
    setting: str, has_token: HasToken, architecture: str = "", model_name: str = ""
) -> FimTemplate | None:
    """`auto` detects; `none` is prefix-only; a family name must match the model's tokens.

    Raises ValueError (a sentence for the user) for an unknown name or missing tokens."""
    if setting == "none":
        return None
    if setting == "auto":
        return detect(has_token, architecture=architecture, model_name=model_name)
    if setting not in VARIANTS:
        raise ValueError(
            f"unknown FIM template {setting!r}; use auto, none or one of {', '.join(VARIANTS)}"
        )
    found = _pick_variant(setting, has_token)
    if found is None:
        wanted = " ".join(TEMPLATES[setting].markers)
        raise ValueError(
            f"the {setting} template needs the tokens {wanted}, which this model does not "
            "have; use 'auto' (detects the model's template) or 'none' (prefix only)"
        )
    return found


def build_prompt(
    template: FimTemplate | None,
    *,
    prefix: str,
    suffix: str,
    file_name: str = "",
    language: str = "",
    context: Sequence[tuple[str, str]] = (),
    repo: str = "",
) -> list[Segment]:
    """The prompt's segments, most stable first (other files, the file name, then the prefix in
    P-S-M order).

    `context`: (path, text) of other files' parts, shown first: in the model's repository
    format where it has one (`repo` names the repository), else as comments opening the
    prefix, in the file's language (`context.as_comments`). Without a template the prompt is
    the prefix alone (no header: plain models continue code best)."""
    t = template
    if t is not None and t.repo_marker and context:
        others = [Segment(t.repo_marker, True), Segment(repo + t.repo_name_end, False)]
        for path, text in context:
            lines = text if text.endswith("\n") else text + "\n"
            others += [Segment(t.file_marker, True), Segment(f"{path}\n{lines}", False)]
        return _joined(others + build_prompt(t, prefix=prefix, suffix=suffix, file_name=file_name))
    if context:
        shown = "".join(as_comments(path, text, language, file_name) for path, text in context)
        prefix = shown + prefix
    if t is None:
        return _joined([Segment(prefix, False)])
    name_line = file_name.replace("\r", " ").replace("\n", " ").strip()
    name_line = f"{name_line}\n" if name_line and t.file_marker else ""
    head: list[Segment] = []
    if name_line and not t.name_in_prefix:
        head = [Segment(t.file_marker, True), Segment(name_line, False)]
    elif name_line:
        head = [Segment(t.file_marker, True)]
    pre = [
        Segment(t.prefix, True),
        Segment(name_line if t.name_in_prefix else "", False),
        Segment(t.prefix_lead + prefix, False),
    ]
    if t.suffix_first:
        body = [Segment(t.suffix, True), Segment(suffix, False), *pre]
    else:
        body = [
            *pre,
            Segment(t.marker_lead, False),
            Segment(t.suffix, True),
            Segment(suffix + t.marker_lead, False),
            Segment(t.middle, True),
        ]
    return _joined(head + body)


def _joined(segments: list[Segment]) -> list[Segment]:
    """Drop empty segments and merge adjacent user text."""
    out: list[Segment] = []
    for s in segments:
        if not s.text:
            continue
        if out and out[-1].special == s.special and not s.special:
            out[-1] = Segment(out[-1].text + s.text, False)
        else:
            out.append(s)
    return out


def render(segments: list[Segment]) -> str:
    """The prompt as one string (for logs and golden tests)."""
    return "".join(s.text for s in segments)


# the FIM roles that end the suffix's text in a prompt (whatever the template's order)
ENDS = ("fim_pre", "fim_mid", "fim_pad", "fim_sep", "fim_rep", "eos", "eot")


def after_cursor(prompt: Sequence[int], special: Mapping[str, int]) -> list[int]:
    """The prompt's tokens of the text after the cursor: from its last FIM suffix token to the
    next FIM token ([] without a suffix token)."""
    mark = special.get("fim_suf")
    if mark is None:
        return []
    tokens = list(prompt)
    try:
        start = len(tokens) - tokens[::-1].index(mark)
    except ValueError:
        return []
    ends = {special[role] for role in ENDS if role in special}
    end = next((i for i in range(start, len(tokens)) if tokens[i] in ends), len(tokens))
    return tokens[start:end]
