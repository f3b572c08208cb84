"""The guide's analysis for Python: Jedi's members per receiver (`analysis.py`), what the code
behind a receiver adds that Jedi does not list and whether anything makes the set open-ended
(`unlisted.py`), the other open documents as the editor holds them (`buffers.py`), and Jedi in
a process of its own at a low priority (`process.py`)."""
