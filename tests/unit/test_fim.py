"""FIM templates: golden prompts per family and spelling, detection from a vocabulary, overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.prompts import fim
from spec_lsp.prompts.fim import Segment

GOLDEN = json.loads((Path(__file__).parent / "golden" / "fim_templates.json").read_text())
PREFIX, SUFFIX = "def f(x):\n    ", "\n\nprint(f(2))\n"


def all_variants() -> dict[str, fim.FimTemplate]:
    return {
        f"{family}/{v.variant}" if v.variant else family: v
        for family, variants in fim.VARIANTS.items()
        for v in variants
    }


def test_every_variant_has_a_golden_case():
    assert sorted(GOLDEN) == sorted(all_variants())


@pytest.mark.parametrize("key", sorted(all_variants()))
def test_golden_segments(key):
    template = all_variants()[key]
    segments = fim.build_prompt(template, prefix=PREFIX, suffix=SUFFIX, file_name="src/m.py")
    assert segments == [Segment(text, special) for text, special in GOLDEN[key]["segments"]]
    bare = fim.build_prompt(template, prefix="x = ", suffix="")
    assert fim.render(bare) == GOLDEN[key]["bare"]
    assert list(template.end_tokens) == GOLDEN[key]["end_tokens"]


@pytest.mark.parametrize("key", sorted(all_variants()))
def test_special_segments_are_exactly_the_template_tokens(key):
    template = all_variants()[key]
    segments = fim.build_prompt(template, prefix=PREFIX, suffix=SUFFIX, file_name="a.py")
    specials = [s.text for s in segments if s.special]
    assert set(specials) <= {*template.markers, template.file_marker}
    assert [t for t in specials if t in template.markers] == list(template.markers)


@pytest.mark.parametrize("key", sorted(all_variants()))
def test_code_that_contains_template_tokens_stays_user_text(key):
    template = all_variants()[key]
    evil = "".join(template.markers) + "<|endoftext|>"
    segments = fim.build_prompt(template, prefix=f"s = '{evil}'\n", suffix=f"t = '{evil}'")
    specials = [s for s in segments if s.special]
    assert len(specials) == len(template.markers)  # no more than the template's own
    assert all(evil not in s.text for s in specials)
    assert sum(evil in s.text for s in segments if not s.special) == 2


@pytest.mark.parametrize("key", sorted(all_variants()))
def test_typing_keeps_the_prompt_start(key):
    """The KV cache reuses the previous keystroke's prompt up to the first change."""
    template = all_variants()[key]
    before = fim.render(fim.build_prompt(template, prefix=PREFIX, suffix=SUFFIX, file_name="m.py"))
    after = fim.render(
        fim.build_prompt(template, prefix=PREFIX + "ret", suffix=SUFFIX, file_name="m.py")
    )
    end_of_prefix = before.index(PREFIX) + len(PREFIX)
    assert after.startswith(before[:end_of_prefix])
    if template.suffix_first:  # suffix-first: typing is a pure append
        assert after == before + "ret"


def test_file_name_goes_first_and_only_where_the_template_has_a_place():
    qwen = fim.build_prompt(fim.TEMPLATES["qwen"], prefix="a", suffix="b", file_name="pkg/x.py")
    assert fim.render(qwen).startswith("<|file_sep|>pkg/x.py\n<|fim_prefix|>a")
    for name in ("codegemma", "deepseek", "codestral", "codellama"):
        segments = fim.build_prompt(fim.TEMPLATES[name], prefix="a", suffix="b", file_name="x.py")
        assert "x.py" not in fim.render(segments)


def test_file_name_cannot_break_its_line():
    segments = fim.build_prompt(fim.TEMPLATES["qwen"], prefix="a", suffix="", file_name="x\ny.py\r")
    assert segments[1] == Segment("x y.py\n", False)


def test_prefix_only_without_a_template():
    assert fim.build_prompt(None, prefix="abc", suffix="def", file_name="m.py") == [
        Segment("abc", False)
    ]
    assert fim.build_prompt(None, prefix="", suffix="def") == []


def test_empty_prefix_and_suffix():
    segments = fim.build_prompt(fim.TEMPLATES["qwen"], prefix="", suffix="")
    assert segments == [
        Segment("<|fim_prefix|>", True),
        Segment("<|fim_suffix|>", True),
        Segment("<|fim_middle|>", True),
    ]


# Vocabularies as GGUF files spell them (FIM tokens plus some neighbours).
VOCABS = {
    "qwen": {
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<|fim_prefix|>",
        "<|fim_middle|>",
        "<|fim_suffix|>",
        "<|fim_pad|>",
        "<|repo_name|>",
        "<|file_sep|>",
    },
    "codegemma": {
        "<bos>",
        "<eos>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<|fim_prefix|>",
        "<|fim_middle|>",
        "<|fim_suffix|>",
        "<|file_separator|>",
    },
    "starcoder/starcoder2": {
        "<|endoftext|>",
        "<fim_prefix>",
        "<fim_middle>",
        "<fim_suffix>",
        "<fim_pad>",
        "<repo_name>",
        "<file_sep>",
    },
    "starcoder/starcoder1": {
        "<|endoftext|>",
        "<fim_prefix>",
        "<fim_middle>",
        "<fim_suffix>",
        "<fim_pad>",
        "<filename>",
        "<reponame>",
    },
    "starcoder/santacoder": {"<|endoftext|>", "<fim-prefix>", "<fim-middle>", "<fim-suffix>"},
    "codellama/sentencepiece": {"<s>", "</s>", "▁<PRE>", "▁<SUF>", "▁<MID>", "▁<EOT>"},
    "codellama/plain": {"<s>", "</s>", "<PRE>", "<SUF>", "<MID>", "<EOT>"},
    "deepseek": {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜fim▁begin｜>"}
    | {"<｜fim▁hole｜>", "<｜fim▁end｜>", "<|EOT|>"},
    "codestral": {"<s>", "</s>", "[INST]", "[/INST]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]"},
}


def key_of(template: fim.FimTemplate | None) -> str | None:
    if template is None:
        return None
    return f"{template.name}/{template.variant}" if template.variant else template.name


@pytest.mark.parametrize("key", sorted(VOCABS))
def test_detect_from_vocabulary(key):
    assert key_of(fim.detect(VOCABS[key].__contains__)) == key


def test_qwen_and_codegemma_share_markers():
    markers_only = {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"}.__contains__
    assert key_of(fim.detect(markers_only)) == "qwen"
    assert key_of(fim.detect(markers_only, architecture="gemma")) == "codegemma"
    assert key_of(fim.detect(markers_only, model_name="codegemma-2b")) == "codegemma"
    assert key_of(fim.detect(VOCABS["qwen"].__contains__, architecture="qwen2")) == "qwen"


def test_the_fake_backend_vocabulary_is_qwen():
    from spec_lsp.engine.backends.fake import SPECIALS

    assert key_of(fim.detect(set(SPECIALS).__contains__, architecture="fake")) == "qwen"


@pytest.mark.parametrize(
    "vocab",
    [
        set(),
        {"<s>", "</s>", "<unk>"},
        # SmolLM2 has StarCoder2's repository tokens but no FIM markers
        {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<file_sep>", "<filename>"},
        {"<|fim_prefix|>", "<|fim_suffix|>"},  # incomplete
    ],
)
def test_no_fim_tokens_means_prefix_only(vocab):
    assert fim.detect(vocab.__contains__) is None


def test_detection_asks_for_exact_token_texts():
    asked: list[str] = []

    def has_token(text: str) -> bool:
        asked.append(text)
        return False

    fim.detect(has_token)
    assert asked and all(t == t.strip() and t.startswith(("<", "[", "▁<")) for t in asked)


def test_resolve_auto_none_and_overrides():
    qwen = VOCABS["qwen"].__contains__
    assert key_of(fim.resolve("auto", qwen)) == "qwen"
    assert fim.resolve("none", qwen) is None
    assert key_of(fim.resolve("qwen", qwen)) == "qwen"
    assert key_of(fim.resolve("codegemma", qwen)) == "codegemma"  # the user's choice wins
    sc1 = VOCABS["starcoder/starcoder1"].__contains__
    assert key_of(fim.resolve("starcoder", sc1)) == "starcoder/starcoder1"
    assert key_of(fim.resolve("auto", VOCABS["codegemma"].__contains__, "gemma", "")) == (
        "codegemma"
    )


def test_override_naming_tokens_the_model_lacks():
    with pytest.raises(ValueError, match=r"starcoder template needs the tokens <fim_prefix>"):
        fim.resolve("starcoder", VOCABS["qwen"].__contains__)
    with pytest.raises(ValueError, match="unknown FIM template 'gpt'"):
        fim.resolve("gpt", VOCABS["qwen"].__contains__)


def test_every_family_names_its_end_tokens():
    for family, variants in fim.VARIANTS.items():
        for v in variants:
            assert v.name == family
            assert set(v.markers) <= set(v.end_tokens)
            assert len(v.end_tokens) > len(v.markers)
    assert fim.TEMPLATES["qwen"].end_tokens[0] == "<|endoftext|>"
    assert "<|file_separator|>" in fim.TEMPLATES["codegemma"].end_tokens
    assert "▁<EOT>" in fim.TEMPLATES["codellama"].end_tokens
    assert "<｜end▁of▁sentence｜>" in fim.TEMPLATES["deepseek"].end_tokens
    assert "</s>" in fim.TEMPLATES["codestral"].end_tokens
