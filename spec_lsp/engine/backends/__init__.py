"""Model backends. `llama` is the only module that imports llama_cpp; `fake` is for tests."""
