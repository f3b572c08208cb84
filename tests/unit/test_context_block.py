"""A context block's lines are tokenized once: every prompt of the block reuses their tokens
(on the fake byte-level model), and the prompt is the same as when each is tokenized anew."""

from __future__ import annotations

from spec_lsp.config import Settings
from spec_lsp.engine import CompletionRequest, build_engine
from spec_lsp.engine.context.block import Block
from spec_lsp.engine.context.types import ContextChunk

SHAPES = "".join(f"def shape_{i}(points):\n    return sum(points) * {i}\n" for i in range(40))
TEXT = "from shapes import shape_3\n\n\ndef report(points):\n    return "


def block() -> Block:
    return Block("file:///p/main.py", (ContextChunk("shapes.py", 0, 80, SHAPES, "similar"),), "p")


def test_a_blocks_lines_are_tokenized_once_and_give_the_same_prompt() -> None:
    engine = build_engine(Settings(drafter="ngram", precompute=False), backend="fake")
    engine.load()
    try:
        prompts, settings = engine.parts.local.prompts, engine.settings
        assert prompts is not None and prompts.texts.chunked
        asked: list[str] = []
        tokenize = prompts.target.tokenize

        def counting(text: str, special: bool = False) -> list[int]:
            asked.append(text)
            return tokenize(text, special=special)

        prompts.target.tokenize = counting  # type: ignore[method-assign]
        first = block()
        request = CompletionRequest(TEXT, "\n", document_id="file:///p/main.py")
        once = prompts.build(request, settings, first)
        assert first.tokens > 0 and first.memo
        asked.clear()
        again = prompts.build(request, settings, first)
        assert again.tokens == once.tokens
        assert not [text for text in asked if "shape_7" in text]  # none of the block's lines
        fresh = block()
        fresh.tokens = 0  # (no memo: every line tokenized)
        assert prompts.build(request, settings, fresh).tokens == once.tokens
        assert [text for text in asked if "shape_7" in text]
    finally:
        engine.close()


def test_each_file_once_its_parts_in_line_order_the_best_file_last() -> None:
    chunks = (
        ContextChunk("utils.py", 40, 42, "def best(a):\n    return a\n", "definition:best"),
        ContextChunk("models.py", 3, 4, "class Model: ...", "definition:Model"),
        ContextChunk("utils.py", 0, 5, "import os\n\n\ndef first():\n    ...", "import:utils"),
        ContextChunk("utils.py", 5, 7, "def second():\n    ...", "similar"),
    )
    assert Block("file:///p/main.py", chunks, "p").layout()["context"] == [
        ("models.py", "class Model: ..."),
        (
            "utils.py",
            "import os\n\n\ndef first():\n    ...\ndef second():\n    ...\n# ...\n"
            "def best(a):\n    return a",
        ),
    ]
    c_parts = (ContextChunk("a.c", 0, 1, "int a;", "x"), ContextChunk("a.c", 9, 10, "int b;", "y"))
    assert Block("u", c_parts, "p").layout()["context"] == [("a.c", "int a;\n// ...\nint b;")]
