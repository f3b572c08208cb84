"""The LSP layer: pygls and lsprotocol only. It never imports llama_cpp or the llama backend."""
