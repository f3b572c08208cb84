"""The in-process stage (stage.py: the prompt priced against the KV caches, the speculative
loop) and what it keeps: the document in focus's prefix in the KV cache (file_prefix.py), the
prompt's tokens (prompt_tokens.py) and the text's token counts (text_tokens.py)."""
