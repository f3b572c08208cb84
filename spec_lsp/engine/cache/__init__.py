"""What outlives a request: suggestions, saved KV states, continuations, in-flight work."""
