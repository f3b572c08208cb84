"""The gate bench's typing replay and its feature ablation: where the simulated person pauses,
what they do with a suggestion, and that each pause carries the last outcome before it."""

from __future__ import annotations

import argparse
import random

from bench import gate, gate_replay


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


def _rows(n: int = 40) -> list[dict]:
    """Rows whose sum of log probabilities tells good from wrong; the rest is noise."""
    rng = random.Random(1)
    rows = []
    for i in range(n):
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
    return rows


def test_a_feature_left_out_weighs_nothing():
    model = gate.fit(_rows(), names=("mean_logprob", "min_logprob"))
    assert model.weights["log_chars"] == 0.0 and model.weights["min_logprob"] > 0


def test_features_are_chosen_on_the_choose_set_and_judged_on_the_third():
    rows = _rows(60)
    names, table = gate.select(rows[:20], rows[20:40])
    assert names and names[0].endswith("logprob") and "last_rejected" not in names
    assert table[-1].startswith("Chosen:")
    text, model = gate.report(
        {
            "model": "/m/some-coder.gguf",
            "fit": rows[:20],
            "choose": rows[20:40],
            "judge": rows[40:],
        },
        refit=True,
    )
    assert model.fitted_on == "some-coder.gguf" and model.threshold is not None
    assert model.figures["good_shown"] >= gate.KEEP and model.figures["wrong_hidden"] == 1.0
    assert "On the judge set at the chosen threshold" in text


def test_places_include_mid_line_and_inside_an_auto_closed_bracket():
    found = gate.places(["textwrap.py"], 10)
    kinds = {p["kind"] for p in found}
    assert kinds == set(gate.KINDS)
    for place in found:
        rest_of_line = place["suffix"].split("\n", 1)[0]
        if place["kind"] in ("start", "typing"):
            assert rest_of_line == ""
        else:
            assert rest_of_line and place["expected"]
        if place["kind"] == "in_bracket":
            assert (
                place["prefix"][-1] in "([{"
                and rest_of_line[0] == gate.CLOSERS[place["prefix"][-1]]
            )
    assert gate.places(["textwrap.py"], 10) == found  # seeded
