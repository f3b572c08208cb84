"""Prompt building: FIM templates (fim) and the token-budgeted window around the cursor (window)."""
