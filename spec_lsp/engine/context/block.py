"""The context block: other files' parts at the head of every prompt in a document.

A block is chosen for a document (selection.select) and kept until the document's focus changes:
its text must stay the same from request to request, because its KV is reused only as a prefix
of identical tokens. It is evaluated while the person reads (the file prefix grows after it);
a request uses it only when that costs no more than the prompt without it (`LocalStage.prompt`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.engine.context.types import ContextChunk
from spec_lsp.prompts.context_comments import comment_marker


@dataclass(eq=False)
class Block:
    document: str  # the document it was chosen for
    chunks: tuple[ContextChunk, ...]
    repo: str  # the repository's name, as the model's repository format shows it
    tokens: int = -1  # what it takes at a prompt's head (PromptBuilder.block_tokens)
    key: tuple[Any, ...] = field(init=False)
    # its lines' tokens (filled with `tokens`): prompts of the block tokenize only the document's
    memo: dict[str, list[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.key = (self.repo, tuple((c.path, c.text) for c in self.chunks))

    def same(self, other: Block | None) -> bool:
        """The same text at the prompt's head (so the same KV)."""
        return other is not None and other.key == self.key

    def layout(self) -> dict[str, Any]:
        """fim.build_prompt's arguments for the block: each file once, its parts in line order
        (a commented `...` where lines are left out), the file with the best part last (next
        to the current file, where a model heeds context most), as a repository lists files."""
        return {"context": self.files, "repo": self.repo}

    @functools.cached_property
    def files(self) -> list[tuple[str, str]]:
        by_path: dict[str, list[ContextChunk]] = {}
        for chunk in self.chunks:  # (best first)
            by_path.setdefault(chunk.path, []).append(chunk)
        files = []
        for path, parts in reversed(by_path.items()):
            gap = f"{comment_marker('', path)} ...\n"
            text, at = "", -1
            for part in sorted(parts, key=lambda c: c.start_line):
                if at >= 0:
                    text += "\n" if part.start_line == at else "\n" + gap
                text, at = text + part.text.rstrip("\n"), part.end_line
            files.append((path, text))
        return files

    def describe(self) -> list[dict[str, Any]]:
        """What went in and why (stats, logs)."""
        return [
            {
                "path": c.path,
                "lines": [c.start_line + 1, c.end_line],
                "tokens": c.tokens,
                "reason": c.reason,
            }
            for c in self.chunks
        ]
