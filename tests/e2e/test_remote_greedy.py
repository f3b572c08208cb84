"""The same greedy text from the remote engine and the in-process one: the same model served by
`python -m llama_cpp.server` on loopback, and loaded in this process.

SmolLM2 (no FIM tokens: prefix-only prompts): the same prompt string, greedy, through the
server's stream and through the in-process decode loop. Qwen2.5-Coder (FIM): the whole engine,
`complete()` on the same requests with `engine: remote` and `engine: local` (plain decoding),
post-processing included. Cursors sit after indentation, where the in-process engine does no
token healing (which the remote engine cannot do).
"""

from __future__ import annotations

import numpy as np
import pytest

from spec_lsp.config import Settings
from spec_lsp.engine import CancelToken, CompletionRequest, build_engine
from spec_lsp.engine.backends.base import detokenize
from spec_lsp.engine.decode.speculative import DecodeJob, generate
from spec_lsp.engine.policy.adaptive import FixedPolicy
from spec_lsp.engine.remote.stream import StreamJob, stream_decode
from spec_lsp.engine.types import DecodeStats, SamplingParams
from tests.e2e.remote_servers import LlamaServer

PROMPTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "import os\n\n\ndef list_python_files(root):\n    found = []\n    for",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n",
]
REQUESTS = [
    CompletionRequest(
        prefix="def mean(values):\n    total = sum(values)\n    ",
        suffix="\n\n\nprint(mean([1, 2, 3]))\n",
        document_id="a",
        file_name="stats.py",
        max_tokens=24,
    ),
    CompletionRequest(
        prefix="class Point:\n    def __init__(self, x, y):\n        self.x = x\n        ",
        suffix="\n\n    def norm(self):\n        return (self.x ** 2 + self.y ** 2) ** 0.5\n",
        document_id="b",
        file_name="point.py",
        max_tokens=24,
    ),
]


@pytest.mark.real
def test_smollm2_same_prompt_same_greedy_text(smollm2_path):
    server = LlamaServer(smollm2_path).start()
    local = build_engine(Settings(model=str(smollm2_path), drafter="none", threads=2))
    remote = build_engine(Settings(engine="remote", remote_url=server.url))
    try:
        local.load()
        remote.load()
        assert local.parts.local.loaded is not None and remote.stage.remote is not None
        target = local.parts.local.loaded.target
        for prompt in PROMPTS:
            tokens = target.tokenize(prompt, special=True)
            if target.info.add_bos and "bos" in target.info.special:
                tokens.insert(0, target.info.special["bos"])
            job = DecodeJob(
                tokens, 24, SamplingParams(), local.parts.local.loaded.stop_ids, lambda _: False
            )
            out = generate(
                target,
                None,
                FixedPolicy(0),
                job,
                cancel=CancelToken(),
                rng=np.random.default_rng(0),
                stats=DecodeStats(),
            )
            stream = StreamJob(
                prompt, remote.stage.remote.model, 24, SamplingParams(), (), lambda _: False
            )
            text = stream_decode(
                remote.stage.remote.client, stream, cancel=CancelToken(), stats=DecodeStats()
            )
            assert text == detokenize(target, out), prompt
    finally:
        local.close()
        remote.close()
        server.kill()


@pytest.mark.real
@pytest.mark.qwen
def test_qwen_fim_same_completion_through_the_whole_engine(qwen_path):
    server = LlamaServer(qwen_path).start()
    local = build_engine(Settings(model=str(qwen_path), drafter="none", cache=False))
    remote = build_engine(Settings(engine="remote", remote_url=server.url, cache=False))
    try:
        local.load()
        remote.load()
        assert remote.stage.remote is not None and remote.stage.remote.template is not None
        assert remote.stage.remote.template.name == "qwen"
        for request in REQUESTS:
            here = local.complete(request, CancelToken())
            there = remote.complete(request, CancelToken())
            assert there.stats.engine == "remote" and here.stats.engine == "local"
            assert there.text == here.text and there.text.strip(), request.prefix
    finally:
        local.close()
        remote.close()
        server.kill()
