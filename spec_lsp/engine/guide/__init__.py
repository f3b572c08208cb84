"""Names that exist: static analysis guides the decoding (monitor-guided decoding).

One request's way through this room:

1. While the person types, the analysis thread (`analyses.py`) makes a table for the edited
   document's newest text, off the request path: Jedi's for Python (`python/analysis.py`),
   tree-sitter's for JavaScript/TypeScript, Go, Rust and Java (`braced/`: `declared.py` reads
   what each file declares, `resolve.py` and `structural.py` follow names to types and types to
   their members). Both write the shared types of `table.py`: per scope (`scopes.py`) and
   receiver, the member names and whether that set is complete.
2. A request asks for the newest table of its document (none yet: it decodes unguided, never
   waiting); the in-process stage makes a `monitor.Monitor` over it and the vocabulary's token
   trie (`vocabulary.py`).
3. In the decode loop, `hook.py` hands each row the target verifies to the monitor, which reads
   the text so far for a trigger point (`trigger.py`: `x.`, `from m import `, a keyword
   argument) and keeps the tokens that begin, continue or end a member that exists (a complete
   set: a hard mask; an incomplete one: the others lowered by a bias, or left alone).
4. Where the written prefix leaves one name, the rest of it is the symbol draft
   (`Monitor.draft`), verified like any other draft at no drafting cost.

The brace readers never import Jedi: only `python/` does.
"""
