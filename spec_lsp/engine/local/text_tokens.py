"""A document's text as tokens, line chunk by line chunk where the model's tokenizer gives the
whole text's tokens that way (Qwen2, Llama 3: checked at load), else the text whole.

Chunked, a prompt whose text starts on a line of the file prefix is a token prefix of it, and
a context block keeps its own lines' tokens (`memo`). The prompt builder, the file prefix's
bookkeeping and the context ranking count with it. (No cache of the chunks' tokens: 3,000
tokens take ~8 ms either way, and a cache shared by documents churned: RSS crept up ~4 MB for
every 200 documents opened and closed.)
"""

from __future__ import annotations

from spec_lsp.engine.backends.base import ModelBackend
from spec_lsp.prompts import window

CHUNK_SAMPLE = "def f(x):\n    if x:\n\n        return [x,\n\t1]\n  \n\n    return None  \n# end\n"


class TextTokens:
    """Tokenizes document text for one loaded model."""

    def __init__(self, target: ModelBackend) -> None:
        self.target = target
        self.chunked = chunks_are_exact(target)  # else the text is tokenized whole

    def __call__(self, text: str, memo: dict[str, list[int]] | None = None) -> list[int]:
        """`text` as tokens (`memo`: chunks tokenized already, a block's lines)."""
        tokenize = self.target.tokenize
        if not self.chunked:
            return tokenize(text)
        if not memo:
            return [t for chunk in window.line_chunks(text) for t in tokenize(chunk)]
        out: list[int] = []
        for chunk in window.line_chunks(text):
            known = memo.get(chunk)
            out += tokenize(chunk) if known is None else known
        return out

    def count(self, text: str) -> int:
        return len(self(text))


def chunks_are_exact(model: ModelBackend) -> bool:
    """Whether the model's tokenizer gives a text's tokens line chunk by line chunk."""
    whole = model.tokenize(CHUNK_SAMPLE)
    return whole == [t for chunk in window.line_chunks(CHUNK_SAMPLE) for t in model.tokenize(chunk)]
