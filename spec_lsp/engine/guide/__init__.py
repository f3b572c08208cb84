"""Names that exist: static analysis guides the decoding (monitor-guided decoding).

One request's way through this room:

1. While the person types, the analysis thread (`analyses.py`) makes a table for the edited
   document's newest text, off the request path: Jedi's for Python (`python/analysis.py`, the
   other open documents read as the editor holds them: `python/buffers.py`), tree-sitter's for
   JavaScript/TypeScript, Go, Rust and Java (`braced/`: `declared.py` reads what each file
   declares, `resolve.py` and `structural.py` follow names to types and types to their
   members). Both write the shared types of `table.py`: per scope (`scopes.py`) and receiver,
   the member names and whether that set is complete. Each edit is read as it arrives
   (`edits.py`): which sets it may have changed.
2. A request asks for its document's table for the text in front of it (`Analyses.table_for`:
   the newest table less the sets the edits since may have changed; none yet: a first table
   this machine makes in under a second is waited for, else it decodes unguided); the
   in-process stage makes a `monitor.Monitor` over it and the vocabulary's token trie
   (`vocabulary.py`).
3. In the decode loop, `hook.py` hands each row the target verifies to the monitor, which reads
   the text so far for a trigger point (`trigger.py`: `x.`, `from m import `, a keyword
   argument) and keeps the tokens that begin, continue or end a member that exists (a complete
   set: a hard mask; an incomplete one: the others lowered by a bias, or left alone).
4. Where the written prefix leaves one name, the rest of it is the symbol draft
   (`Monitor.draft`), verified like any other draft at no drafting cost.

The brace readers never import Jedi: only `python/` does.
"""
