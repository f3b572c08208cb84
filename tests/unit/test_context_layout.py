"""Other files' parts in the prompt: the model's repository format where it has one (Qwen2.5-
Coder, StarCoder2), else comments in the current file's language opening the prefix."""

from __future__ import annotations

from spec_lsp.prompts import fim
from spec_lsp.prompts.context_comments import as_comments, comment_marker

CONTEXT = [
    ("pkg/shapes.py", "class Circle:\n    def area(self) -> float: ..."),
    ("pkg/u.py", "X = 1\n"),
]


def render(template: fim.FimTemplate | None, language: str = "python", name: str = "a.py") -> str:
    segments = fim.build_prompt(
        template,
        prefix="c = ",
        suffix="\n",
        file_name=name,
        language=language,
        context=CONTEXT,
        repo="pkg",
    )
    return fim.render(segments)


def test_qwen_shows_other_files_in_its_repository_format_before_the_file() -> None:
    assert render(fim.TEMPLATES["qwen"]) == (
        "<|repo_name|>pkg\n"
        "<|file_sep|>pkg/shapes.py\nclass Circle:\n    def area(self) -> float: ...\n"
        "<|file_sep|>pkg/u.py\nX = 1\n"
        "<|file_sep|>a.py\n<|fim_prefix|>c = <|fim_suffix|>\n<|fim_middle|>"
    )


def test_the_markers_are_special_and_the_code_is_not() -> None:
    segments = fim.build_prompt(
        fim.TEMPLATES["qwen"], prefix="", suffix="", context=[("x.py", "<|file_sep|>")], repo="r"
    )
    assert fim.Segment("<|file_sep|>", True) in segments
    assert any(not s.special and "<|file_sep|>" in s.text for s in segments)  # cannot inject


def test_starcoder2_names_the_repository_without_a_line_break() -> None:
    assert render(fim.VARIANTS["starcoder"][0]).startswith(
        "<repo_name>pkg<file_sep>pkg/shapes.py\nclass Circle:"
    )


def test_templates_without_a_repository_format_get_comments_in_the_prefix() -> None:
    text = render(fim.TEMPLATES["deepseek"])
    assert text.startswith("<｜fim▁begin｜># Path: pkg/shapes.py\n# class Circle:\n")
    assert "# X = 1\nc = <｜fim▁hole｜>" in text


def test_no_template_puts_the_comments_before_the_prefix_alone() -> None:
    assert render(None, language="rust", name="lib.rs").startswith("// Path: pkg/shapes.py\n")


def test_comment_markers_by_language_then_suffix() -> None:
    assert comment_marker("python") == "#"
    assert comment_marker("lua") == "--"
    assert comment_marker("", "query.sql") == "--"
    assert comment_marker("typescript") == "//"
    assert as_comments("a.py", "x = 1\n\ny = 2", "python") == "# Path: a.py\n# x = 1\n#\n# y = 2\n"


def test_no_context_leaves_the_prompt_as_it_was() -> None:
    template = fim.TEMPLATES["qwen"]
    plain = fim.build_prompt(template, prefix="c = ", suffix="\n", file_name="a.py")
    assert (
        fim.build_prompt(template, prefix="c = ", suffix="\n", file_name="a.py", context=[])
        == plain
    )
