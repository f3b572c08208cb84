"""spec_lsp.bench.policy_replay: the policy replayed over fixed outputs, costed by a verify curve."""

from __future__ import annotations

from spec_lsp.bench import policy_replay
from spec_lsp.engine.policy.adaptive import AdaptivePolicy
from spec_lsp.engine.policy.estimate import AcceptanceEstimate, prior_acceptance
from spec_lsp.engine.policy.profile import CostProfile

GPU_LIKE = {1: 0.01, 2: 0.011, 4: 0.012, 8: 0.014, 16: 0.018, 32: 0.025}


def _policy() -> AdaptivePolicy:
    return AdaptivePolicy(
        CostProfile(dict(GPU_LIKE)),
        estimate=AcceptanceEstimate(prior_acceptance(0.0)),
        draft_max=16,
    )


def test_nothing_to_look_up_replays_as_plain_decoding() -> None:
    prompt = list(range(1000, 1100))
    output = list(range(2000, 2048))  # no token of it occurs before: no proposal, ever
    assert abs(policy_replay.replay(prompt, output, _policy()) - 1.0) < 1e-9


def test_a_copied_block_pays_and_pays_more_once_learned() -> None:
    block = list(range(500, 560))
    prompt = list(range(100, 140)) + block + list(range(200, 230)) + block[:4]
    output = block[4:52]  # the completion repeats the block
    policy = _policy()
    first = policy_replay.replay(prompt, output, policy)
    again = policy_replay.replay(prompt, output, policy)
    assert first > 1.5
    assert again >= first


def test_a_wrong_copy_costs_on_a_cpu_like_curve() -> None:
    # the lookup proposes the block, the target writes something else: drafts that fail
    # cost a CPU real time, which the replay must show (a ratio below 1 is possible)
    block = list(range(500, 560))
    prompt = block + list(range(200, 230)) + block[:20]
    output = list(range(3000, 3048))
    policy = AdaptivePolicy(
        CostProfile({1: 0.01, 2: 0.017, 4: 0.027, 8: 0.07, 16: 0.14}),
        estimate=AcceptanceEstimate(0.99, prior_weight=50.0),  # trusts lookups blindly
        draft_max=16,
    )
    assert policy_replay.replay(prompt, output, policy) < 1.0


def test_report_prints_first_and_later_completions_per_file() -> None:
    block = list(range(500, 560))
    completion = {"line": 1, "prompt": block + block[:4], "output": block[4:30]}
    data = {
        "profile": CostProfile(dict(GPU_LIKE)).to_json(),
        "files": [{"path": "a.py", "completions": [completion, completion]}],
    }
    text = policy_replay.report(data)
    assert "| a.py |" in text
    assert "first completion of a file" in text
    assert "0 of 2 completions below 0.99x" in text
