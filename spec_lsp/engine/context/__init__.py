"""What the model sees beyond the window: other files' parts that say what the code near the
cursor uses (definitions, imports, similar chunks of open documents, recent edits), chosen under
a token budget, laid out as one block at the prompt's head whose KV is evaluated while idle.

provider.py is the context's one door (documents, workspace, index; the block for the focus).
selection.py chooses a block from the sources (source.py: what a source is given and gives):
definitions.py, import_outlines.py, similar_chunks.py, recent_edits.py; what they read of the
current file: near_names.py, imports.py, imported_names.py, words.py; outline.py renders
outlines; similar_windows.py, symbols.py and workspace.py keep what is known of the other
files."""
