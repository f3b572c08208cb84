"""The guide's analysis for the brace languages (JavaScript/TypeScript, Go, Rust, Java), from
tree-sitter trees: what each file declares (`outline.py`, `declared*.py`), where a path it names
lives (`paths.py`), names followed to types and types to their members (`resolve.py`,
`returns.py`, `structural.py`)."""
