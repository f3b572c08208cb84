"""bench.policy_replay: the policy replayed over fixed outputs, costed by a verify curve."""

from __future__ import annotations

from bench import policy_replay
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


def _wrong_copies() -> tuple[list[int], list[int]]:
    """A prompt holding a block, and an output made of the block's tokens out of order: the
    lookup proposes what followed each token in the block, and the target writes another."""
    block = list(range(500, 560))
    return block + list(range(200, 230)) + block[:20], [block[(7 * i) % 60] for i in range(48)]


def test_a_wrong_copy_costs_on_a_cpu_like_curve() -> None:
    # drafts that fail cost a CPU real time, which the replay must show
    prompt, output = _wrong_copies()
    policy = AdaptivePolicy(
        CostProfile({1: 0.01, 2: 0.017, 4: 0.027, 8: 0.07, 16: 0.14}),
        estimate=AcceptanceEstimate(0.99, prior_weight=50.0),  # trusts lookups blindly
        draft_max=16,
    )
    assert policy_replay.replay(prompt, output, policy) < 0.99


def test_report_prints_each_curve_per_file_and_where_gains_come_from(tmp_path) -> None:
    block = list(range(500, 560))
    completion = {"line": 1, "prompt": block + block[:4], "output": block[4:30]}
    data = {
        "profile": CostProfile(dict(GPU_LIKE)).to_json(),
        "files": [{"path": "a.py", "completions": [completion, completion]}],
    }
    curves = tmp_path / "curves.json"
    curves.write_text('{"_note": "x", "flat": {"1": 1.0, "2": 1.0, "16": 1.0}}')
    text = policy_replay.report(data, curves)
    assert "| a.py |" in text
    assert "| this machine |" in text and "| flat |" in text
    assert "0 of 2 |" in text  # no completion below 0.98x
    assert "| >16 |" in text  # the copied block's rounds, by match strength


def test_a_losing_strength_stops_drafting_across_completions() -> None:
    # each completion's fresh estimate trusts the lookup again; the ledger, kept across
    # completions as the engine keeps it, stops drafting where it lost
    prompt, output = _wrong_copies()

    def ratios(ledger: policy_replay.RealizedYield | None) -> list[float]:
        return [
            policy_replay.replay(
                prompt,
                output,
                AdaptivePolicy(
                    CostProfile({1: 0.01, 2: 0.017, 4: 0.027, 8: 0.07, 16: 0.14}),
                    estimate=AcceptanceEstimate(0.99, prior_weight=50.0),
                    draft_max=16,
                    ledger=ledger,
                ),
            )
            for _ in range(5)
        ]

    assert max(ratios(None)) < 0.99
    judged = ratios(policy_replay.RealizedYield())
    assert min(judged[:3]) < 0.99 and min(judged[3:]) > 0.999


def test_no_completion_loses_more_than_its_allowance(monkeypatch) -> None:
    # a policy that trusts the lookup blindly, on curves from flat (a GPU) to steep (a CPU):
    # its drafts may lose at most 2% of the completion's tokens beyond what they won
    prompt, output = _wrong_copies()
    curves = [
        GPU_LIKE,
        {1: 0.01, 2: 0.017, 4: 0.027, 8: 0.07, 16: 0.14},
        {1: 1.0, 2: 1.69, 16: 1.9},
    ]

    def worst() -> float:
        return min(
            policy_replay.replay(
                prompt,
                output,
                AdaptivePolicy(
                    CostProfile(dict(curve)),
                    estimate=AcceptanceEstimate(0.99, prior_weight=50.0),
                    draft_max=16,
                ),
            )
            for curve in curves
        )

    assert worst() >= 0.98
    monkeypatch.setattr("spec_lsp.engine.policy.adaptive.ALLOWANCE", float("inf"))
    assert worst() < 0.97
