"""Names that exist: static analysis guides the decoding (monitor-guided decoding).

- `names`: the vocabulary's token strings indexed by the identifier text they begin or
  continue (the trie the mask is read from);
- `trigger`: where in the text a name is to be chosen (`x.`, `from m import `), and where not;
- `analysis`: Jedi's answer for a Python file, prepared off the request path: receiver -> its
  members;
- `declared`, `structural`: the same for JavaScript/TypeScript, Go, Rust and Java from tree-sitter
  trees (what each file declares; names to the workspace's types, types to their members);
- `scopes`: which class and function the cursor is in, as the answers are keyed;
- `monitor`: the mask for the next token from the text so far, and the rest of a name that is
  the only one left (the symbol draft).
"""
