"""The gate bench's typing replay and its feature ablation: where the simulated person pauses,
what they do with a suggestion, and that each pause carries the last outcome before it."""

from __future__ import annotations

import argparse
import random

from spec_lsp.bench import gate, gate_replay
from spec_lsp.engine import confidence


def test_pauses_are_line_starts_and_some_separators_not_near_the_end():
    typed = "    total = sum(values)\n\n    return round(total, 2)"
    found = gate_replay.pauses(typed, random.Random(0))
    starts = [4, len("    total = sum(values)\n\n    ")]
    assert all(s in found for s in starts)
    for at in found:
        line_end = typed.find("\n", at)
        line_end = len(typed) if line_end == -1 else line_end
        assert at in starts or (typed[at - 1] in gate_replay.PAUSE_AFTER and line_end - at >= 3)
    assert found == sorted(found)
    assert gate_replay.pauses(typed, random.Random(0)) == found  # seeded


def test_the_person_takes_a_suggestion_that_begins_the_line_else_its_first_word():
    assert gate_replay.outcome("total = sum(values)", "total = sum(values)", True) == (
        "accepted",
        19,
    )
    assert gate_replay.outcome("    total = 0", "total = 0", True) == ("accepted", 9)
    assert gate_replay.outcome("total = max(x)", "total = sum(values)", True) == ("partial", 5)
    assert gate_replay.outcome("count = 0", "total = sum(values)", True) == ("rejected", 0)
    assert gate_replay.outcome("  x", "x = 1", False) == ("rejected", 0)  # indentation mid-line


def test_a_replay_records_each_pause_with_the_outcome_before_it():
    regions = gate_replay.regions(["textwrap.py"], lines=3)
    assert len(regions) == 1 and regions[0].typed.count("\n") == 2
    settings = gate.ask_settings(argparse.Namespace(model=None)).model_copy(update={"cache": True})
    rows = gate_replay.replay(regions, settings, backend="fake")
    assert rows, "the fake model suggests something at some pause"
    assert rows[0]["last"] is None
    for before, after in zip(rows, rows[1:]):
        assert after["last"] == before["outcome"]
    assert all(r["good"] == (r["outcome"] == "accepted") for r in rows)
    assert all(r["logprobs"] for r in rows)  # (the gate on: what the features read)


def test_a_feature_left_out_weighs_nothing_and_the_ablation_reports_every_variant():
    rng = random.Random(1)
    rows = []
    for i in range(40):
        good = i % 2 == 0
        lp = -0.1 if good else -2.5 + rng.random()
        rows.append(
            {
                "text": "value = 1",
                "raw": "value = 1",
                "logprobs": [lp, lp],
                "good": good,
                "kind": "typing",
                "expected": "value = 1" if good else "other = 2",
                "before": "x = 0\n",
                "after": "\n",
                "last": "accepted" if i % 3 else "rejected",
            }
        )
    bias, weights = gate.fit(rows, names=("mean_logprob", "min_logprob"))
    assert weights["log_chars"] == 0.0 and weights["min_logprob"] > 0
    table = gate.ablation(rows, rows)
    assert "| all |" in table and "| + last_rejected |" in table
    assert "| - min_logprob |" in table and "| used: sum_logprob, min_logprob |" in table
    assert (confidence.BIAS, confidence.WEIGHTS) != (bias, weights)  # (restored after)
