"""The remote engine: an OpenAI-compatible server (vLLM, llama-server, llama_cpp.server) over
HTTP, one folder. `client` (the only module importing httpx), `connect` (what the server serves),
`health` (backoff, one notice per problem), `server_tokens` (the server's token counts),
`prompt_text` (the prompt for its endpoint), `stream` (the streamed answer, stopped early), `ask`
(one request), `stage` (the engine's remote stage: a request, and the block chosen while idle)."""
