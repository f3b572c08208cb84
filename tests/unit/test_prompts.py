"""FIM templates (golden renderings per family), detection, and the token window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.prompts import fim, window

GOLDEN = json.loads((Path(__file__).parent / "golden" / "fim.json").read_text())


def render(segments):
    return "".join(s.text for s in segments)


@pytest.mark.parametrize("family", sorted(fim.TEMPLATES))
def test_golden_template(family):
    template = fim.TEMPLATES[family]
    segments = fim.build_prompt(
        template, prefix="def f(x):\n    ", suffix="\n\nprint(f(2))\n", file_name="m.py"
    )
    assert render(segments) == GOLDEN[family]
    assert all(
        s.special
        for s in segments
        if s.text.strip()
        in (template.prefix.strip(), template.suffix.strip(), template.middle.strip())
        and s.text.strip()
    )


def test_user_text_is_never_special():
    segments = fim.build_prompt(fim.TEMPLATES["qwen"], prefix="x = '<|fim_middle|>'", suffix="")
    assert [s.special for s in segments if "<|fim_middle|>'" in s.text] == [False]


def test_prefix_only_without_fim_tokens():
    assert fim.build_prompt(None, prefix="abc", suffix="def") == [fim.Segment("abc", False)]


VOCABS = {
    "qwen": {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|repo_name|>"},
    "codegemma": {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|file_separator|>"},
    "starcoder": {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
    "codellama": {"<PRE>", "<SUF>", "<MID>", "<EOT>"},
    "deepseek": {"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},
    "codestral": {"[PREFIX]", "[SUFFIX]"},
}


@pytest.mark.parametrize("family", sorted(VOCABS))
def test_detect_from_vocabulary(family):
    detected = fim.detect(VOCABS[family].__contains__)
    assert detected is not None and detected.name == family


def test_no_fim_tokens_means_prefix_only():
    assert fim.detect({"<s>", "</s>"}.__contains__) is None


def test_override_must_match_the_model():
    with pytest.raises(ValueError, match="does not have"):
        fim.resolve("starcoder", VOCABS["qwen"].__contains__)
    assert fim.resolve("none", VOCABS["qwen"].__contains__) is None
    assert fim.resolve("qwen", VOCABS["qwen"].__contains__).name == "qwen"


def words(text: str) -> int:
    return len(text.split()) + text.count("\n")


CODE = "".join(f"line_{i} = compute({i}, {i + 1})\n" for i in range(200))


def test_window_respects_budgets_and_keeps_whole_lines():
    prefix, suffix = window.window(
        CODE + "x = ", CODE, count_tokens=words, prefix_budget=60, suffix_budget=30
    )
    assert words(prefix) <= 60 and words(suffix) <= 30
    assert prefix.endswith("x = ") and prefix.startswith("line_")
    assert suffix.startswith("line_0 =") and suffix.endswith("\n")


def test_window_start_is_stable_while_typing():
    starts = set()
    for typed in ("r", "re", "ret", "retu", "return", "return x"):
        prefix, _ = window.window(
            CODE + typed, "", count_tokens=words, prefix_budget=120, suffix_budget=0
        )
        starts.add(prefix.splitlines()[0])
    assert len(starts) == 1


def test_window_with_a_huge_line():
    line = "x" * 20_000
    prefix, suffix = window.window(
        CODE + line, line, count_tokens=lambda t: len(t) // 4, prefix_budget=100, suffix_budget=50
    )
    assert prefix and len(prefix) // 4 <= 100 and prefix.endswith("x")
    assert len(suffix) // 4 <= 50


def test_window_keeps_crlf():
    text = "a = 1\r\nb = 2\r\n"
    prefix, suffix = window.window(
        text + "c", text, count_tokens=words, prefix_budget=100, suffix_budget=100
    )
    assert prefix == text + "c" and suffix == text


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet="ab \n", max_size=300),
    st.text(alphabet="ab \n", max_size=300),
    st.integers(1, 40),
    st.integers(0, 40),
)
def test_window_is_a_part_of_the_text(prefix, suffix, pb, sb):
    p, s = window.window(prefix, suffix, count_tokens=words, prefix_budget=pb, suffix_budget=sb)
    assert prefix.endswith(p) and suffix.startswith(s)
