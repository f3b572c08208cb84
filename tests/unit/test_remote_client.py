"""What a remote server's stream says beyond its text: the tokens' log probabilities, in each
server's shape (the confidence gate reads them)."""

from __future__ import annotations

import math

import pytest

from spec_lsp.engine.remote.client import token_logprobs


def test_token_log_probabilities_in_each_servers_shape():
    """OpenAI's completions, llama-server's chat-style `content`, its own streams' `logprob`
    and older builds' `probs` (the chosen token's probability)."""
    assert token_logprobs({"tokens": ["a", "b"], "token_logprobs": [-0.5, -1.0]}) == (-0.5, -1.0)
    assert token_logprobs({"content": [{"token": "a", "logprob": -0.25}]}) == (-0.25,)
    assert token_logprobs([{"id": 1, "token": "a", "logprob": -2.0, "top_logprobs": []}]) == (-2.0,)
    older = [
        {"content": "a", "probs": [{"tok_str": "b", "prob": 0.3}, {"tok_str": "a", "prob": 0.5}]}
    ]
    assert token_logprobs(older) == (math.log(0.5),)


@pytest.mark.parametrize(
    "nothing", [None, 3, "x", {"token_logprobs": None}, [{"token": "a"}], [True], {"content": 5}]
)
def test_anything_else_is_no_log_probabilities(nothing):
    assert token_logprobs(nothing) == ()
