"""The guide's analysis for Python: Jedi's members per receiver (`analysis.py`)."""
