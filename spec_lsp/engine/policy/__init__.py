"""How many tokens to draft: acceptance estimates, the adaptive policy, the cost profile."""
