"""What the model sees beyond the window: other files' parts that say what the code near the
cursor uses (definitions, imports, similar chunks of open documents, recent edits), chosen under
a token budget, laid out as one block at the prompt's head whose KV is evaluated while idle."""
