"""spec-lsp: local AI code completions over LSP with adaptive speculative decoding."""

__version__ = "0.1.0"
