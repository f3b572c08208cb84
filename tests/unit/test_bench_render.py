"""The bench's table is what the closing notes quote: its ratios and checks must be right."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest

from bench.command import rerender
from bench.common import (
    AGAIN,
    MAX_REPS,
    MIN_PAIRS,
    PAIRED,
    PRECISION,
    Run,
    digest,
    known,
    pair_logs,
    ratio,
    read_results,
    rep_names,
    same_text,
    schedule,
    write_results,
)
from bench.policies import FIXED_KS, pick_policy, render
from bench.sources import render as render_sources
from bench.timing import (
    RERUNS,
    cpu_ticks,
    policy_run,
    rerun_note,
    steady,
    stolen,
    wait_for_quiet,
)
from spec_lsp.engine.backends.fake import FakeModel, hashed_noise
from spec_lsp.engine.decode.speculative import DecodeJob
from spec_lsp.engine.drafters.ngram import NgramDrafter
from spec_lsp.engine.policy.adaptive import FixedPolicy
from spec_lsp.engine.types import SamplingParams


def runs_for(policy: str, seconds: float, text: str = "t", reps: int = 2) -> list[Run]:
    return [
        Run("ngram", "repeat", 0.5, policy, 0, 49, seconds, 10, 5, [2, 0], rep, f"{text}{rep}")
        for rep in range(reps)
    ]


def test_ratios_and_best_fixed_are_computed_per_cell():
    runs = runs_for("none", 4.0) + runs_for(AGAIN, 5.0) + runs_for("adaptive", 2.0)
    for k in FIXED_KS:
        runs += runs_for(f"fixed-{k}", 3.2 if k == 4 else 8.0)
    table = render(runs)
    row = next(line for line in table.splitlines() if line.startswith("| repeat"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "12.00"  # 48 tokens after the first over 4 s
    assert cells[3] == "0.80x"  # no speculation again: the noise floor
    assert cells[4:8] == ["0.50x", "1.25x", "0.50x", "0.50x"]  # fixed-2, 4, 8, 16
    assert cells[8] == "2.00x"  # adaptive
    assert cells[9] == "2.00x"  # adaptive (totals): no pairs here, so the same
    assert cells[-3] == "1.60 (1.60)"  # adaptive / best fixed (fixed-4): ratios (totals)
    assert cells[-2] == "6/6"
    assert cells[-1] == "2, 2"  # runs of A/A and of adaptive


def test_same_text_counts_policies_whose_text_differs_from_no_speculation():
    by_policy = {
        "none": runs_for("none", 1.0),
        "fixed-2": runs_for("fixed-2", 1.0),
        "adaptive": runs_for("adaptive", 1.0, text="other"),
    }
    assert same_text(by_policy, ["fixed-2", "adaptive"]) == "1/2"
    by_policy["adaptive"][1].text = by_policy["none"][1].text
    assert same_text(by_policy, ["fixed-2", "adaptive"]) == "1/2"  # one rep still differs
    by_policy["adaptive"][0].text = by_policy["none"][0].text
    assert same_text(by_policy, ["fixed-2", "adaptive"]) == "2/2"


@pytest.mark.parametrize("missing", ["none", "adaptive"])
def test_a_policy_with_no_runs_does_not_count_as_the_same_text(missing):
    by_policy = {"none": runs_for("none", 1.0), "adaptive": runs_for("adaptive", 1.0)}
    del by_policy[missing]
    assert same_text(by_policy, ["adaptive"]) == "0/1"


def test_paired_policies_are_read_against_their_own_baseline_runs():
    """A/A and adaptive are divided by the no-speculation runs made just before them; the
    fixed k by all the cell's no-speculation runs."""
    slow_pair = runs_for("none", 6.0)
    for r in slow_pair:
        r.baseline = "adaptive"
    by_policy = {"none": runs_for("none", 4.0) + slow_pair, "adaptive": runs_for("adaptive", 3.0)}
    by_policy["fixed-2"] = runs_for("fixed-2", 5.0)
    assert ratio(by_policy, "adaptive") == pytest.approx(2.0)  # 6 s / 3 s, not 5 s / 3 s
    assert ratio(by_policy, "fixed-2") == pytest.approx(1.0)  # all no-speculation runs: 5 s
    del by_policy["none"]
    assert ratio(by_policy, "adaptive") == 0.0


def test_a_burst_in_one_pair_moves_the_total_not_the_median():
    bases = [runs_for("none", t, reps=3)[i] for i, t in enumerate((4.0, 4.0, 12.0))]
    for r in bases:
        r.baseline = "adaptive"
    by_policy = {"none": bases, "adaptive": runs_for("adaptive", 4.0, reps=3)}
    assert ratio(by_policy, "adaptive") == pytest.approx(1.0)
    assert ratio(by_policy, "adaptive", totals=True) == pytest.approx(20.0 / 12.0)


@pytest.mark.parametrize("rep", range(4))
def test_the_schedule_puts_a_baseline_right_before_each_paired_policy(rep):
    names = [AGAIN, "fixed-2", "fixed-4", "adaptive"]
    order = [run for unit in schedule(names, PAIRED, rep) for run in unit]
    assert sorted(n for n, _ in order) == sorted(["none", "none", *names])
    for i, (name, baseline) in enumerate(order):
        if name in PAIRED:
            assert order[i - 1] == ("none", name)
        if name == "none":
            assert order[i + 1][0] == baseline
    assert order[0][0] == (names[rep % len(names)] if rep % 4 in (1, 2) else "none")


def test_rerender_draws_the_tables_again_from_saved_runs(tmp_path, capsys):
    runs = runs_for("none", 4.0) + runs_for("adaptive", 2.0)
    write_results(tmp_path / "bench.json.gz", [r.__dict__ for r in runs])
    assert rerender(tmp_path, "policies") == 0
    assert "| repeat | 0.5 | 12.00 |" in (tmp_path / "bench.md").read_text()
    assert "| repeat | 0.5 | 12.00 |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="spec-lsp bench --part sources"):
        rerender(tmp_path, "sources")


def test_a_fixed_k_is_read_against_its_own_reps_runs_of_no_speculation():
    """Rep 1 ran in a slow stretch (every run 3x slower): read per rep, fixed-4 is 2x in both
    reps; over the cell's totals a slow rep of fixed-4 against fast runs of none would not be."""
    runs = []
    for rep, slow in ((0, 1.0), (1, 3.0), (2, 1.0)):
        runs.append(Run("n", "w", 0.0, "none", 0, 49, 4.0 * slow, rep=rep))
        runs.append(Run("n", "w", 0.0, "fixed-4", 0, 49, 2.0 * slow, rep=rep))
    runs[-1].seconds = 8.0  # a burst in rep 2's fixed-4 run alone: one rep, not the median
    by_policy = {"none": runs[0::2], "fixed-4": runs[1::2]}
    assert ratio(by_policy, "fixed-4") == pytest.approx(2.0)
    assert ratio(by_policy, "fixed-4", totals=True) == pytest.approx(20.0 / 16.0)
    by_policy["llama-cpp-python"] = [Run("n", "w", 0.0, "llama-cpp-python", 0, 49, 4.0)]
    # run after the reps: its rate (48 tokens in 4 s) over all no-speculation runs (144 in 20 s)
    assert ratio(by_policy, "llama-cpp-python") == pytest.approx(20.0 / 12.0)


def test_prompts_are_medians_first_then_a_geometric_mean():
    """Two prompts with different speedups (2x and 1x over 3 reps each): the cell is their
    geometric mean, not whichever pair sorts into the middle of all six."""
    bases, mine = [], []
    for prompt, speedup in ((0, 2.0), (1, 1.0)):
        for rep in range(3):
            bases.append(Run("n", "w", 0.0, "none", prompt, 49, 4.0, rep=rep, baseline="adaptive"))
            mine.append(Run("n", "w", 0.0, "adaptive", prompt, 49, 4.0 / speedup, rep=rep))
    assert ratio({"none": bases, "adaptive": mine}, "adaptive") == pytest.approx(2**0.5)


def test_a_source_that_drafted_nothing_is_no_speculation_as_the_best_single():
    """In prose the lookups draft nothing: their pairs are readings of no speculation (here
    1.10x by noise). As the best single source they count 1.00x, so auto is read against
    that, not against the highest noise."""
    runs = []
    for name, seconds, drafted in (("ngram", 4.0, 0), ("crossvocab", 4.8, 3), ("auto", 4.4, 2)):
        for rep in range(3):
            runs.append(Run("sources", "prose", 0.0, "none", 0, 49, 4.4, rep=rep, baseline=name))
            runs.append(Run("sources", "prose", 0.0, name, 0, 49, seconds, drafted, rep=rep))
    row = next(x for x in render_sources(runs, {}, {}).splitlines() if x.startswith("| prose"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4:8] == ["1.10x", "0.00x", "0.92x", "1.00x"]  # ngram, workspace, cross, auto
    assert cells[8:10] == ["1.00", "1.00"]  # auto / best single, by ratios and by totals
    assert cells[-1] == "0, 3"  # pairs of A/A (none here) and of auto


def test_units_pair_each_baseline_with_its_policy():
    grouped = schedule([AGAIN, "fixed-2", "adaptive"], PAIRED, 1)
    assert [len(u) for u in grouped] == [1, 2, 2]
    assert grouped[1] == [("none", "adaptive"), ("adaptive", "")]


def test_a_unit_runs_again_while_the_hypervisor_takes_the_cpu():
    """Steal in either run of a pair runs both again; after RERUNS more the last is kept."""
    attempts: list[float] = []

    def unit(steals: list[float]):
        def attempt() -> list[Run]:
            steal = steals[len(attempts)]
            attempts.append(steal)
            return [Run("n", "w", 0.0, p, 0, 49, 4.0, steal=steal) for p in ("none", "x")]

        return attempt

    kept = steady(unit([0.2, 0.01]), wait=lambda: 0.0)
    assert attempts == [0.2, 0.01]
    assert [r.reruns for r in kept] == [1, 1] and kept[0].steal == 0.01
    attempts.clear()
    kept = steady(unit([0.2, 0.3, 0.5, 0.0]), wait=lambda: 0.0)
    assert len(attempts) == 1 + RERUNS and kept[0].steal == 0.5
    assert "2 of 2 runs" in rerun_note(kept)


def test_a_rerun_waits_for_a_quiet_window_but_not_forever():
    readings = iter([(0, 0), (50, 100), (50, 100), (51, 200), (51, 200), (80, 300)])
    slept: list[float] = []
    assert wait_for_quiet(sleep=slept.append, ticks=lambda: next(readings)) == 4.0
    assert slept == [2.0, 2.0]  # 50% stolen in the first window, 1% in the second
    busy = iter([(0, 0), (50, 100)] * 40)
    assert wait_for_quiet(limit=10, sleep=lambda _: None, ticks=lambda: next(busy)) == 10.0


def test_cpu_steal_is_read_as_a_share_of_the_ticks_between_two_readings():
    assert stolen((10, 1000), (30, 1200)) == pytest.approx(0.1)
    assert stolen(None, (30, 1200)) == 0.0 and stolen((5, 100), (5, 100)) == 0.0
    ticks = cpu_ticks()
    assert ticks is None or 0 <= ticks[0] <= ticks[1]


def test_a_policy_run_records_the_generation_it_timed():
    """The bench's one generation (fake target, n-gram drafts under fixed-2)."""
    target = FakeModel(lambda context: hashed_noise(context, 64, window=2), n_vocab=64)
    outputs: dict[str, list[int]] = {}
    job = DecodeJob([1, 2, 3, 1, 2, 3, 1, 2], 12, SamplingParams(0.0, seed=0), frozenset())
    pick = functools.partial(pick_policy, NgramDrafter(), {"fixed-2": FixedPolicy(2)})
    where = Run("ngram", "repeat", 0.0, "", 1, 0, 0.0, rep=2)
    run = policy_run(target, pick, job, where, "fixed-2", "", outputs)
    plain = policy_run(target, pick, job, where, "none", "fixed-2", outputs)
    assert (run.policy, run.prompt, run.rep, run.tokens) == ("fixed-2", 1, 2, 12)
    assert run.drafted > 0 and plain.drafted == 0 and plain.baseline == "fixed-2"
    assert run.text == plain.text == digest(outputs["none"])  # lookup drafts: the same text


def pairs(name: str, ratios: list[float]) -> list[Run]:
    """`name`'s runs at these ratios to their own baselines, one pair per rep."""
    runs = []
    for rep, value in enumerate(ratios):
        base = Run("ngram", "fresh", 0.0, "none", 0, 49, 4.0, rep=rep, baseline=name)
        runs += [base, replace(base, policy=name, seconds=4.0 / value, baseline="")]
    return runs


def test_paired_policies_run_again_until_their_ratio_is_known():
    names = [AGAIN, "fixed-2", "adaptive"]
    steady_pairs = pairs(AGAIN, [1.0] * MIN_PAIRS) + pairs("adaptive", [0.99] * MIN_PAIRS)
    assert rep_names(names, 0, 3, 9, []) == names  # the first reps run every policy
    assert rep_names(names, 2, 3, 9, steady_pairs) == names
    noisy = pairs(AGAIN, [1.0] * MIN_PAIRS) + pairs("adaptive", [0.9, 1.1] * MIN_PAIRS)
    assert rep_names(names, 3, 3, 9, noisy) == [AGAIN, "adaptive"]  # only the pairs again
    assert rep_names(names, 9, 3, 9, noisy) is None  # up to max_reps
    assert rep_names(names, 5, 3, 9, steady_pairs) is None  # known: done
    assert rep_names(names, 3, 3, 3, noisy) is None  # --quick: no extra pairs
    assert rep_names(["fixed-2"], 3, 3, 9, []) is None  # nothing paired


def test_a_source_that_drafted_nothing_does_not_run_again():
    names = [AGAIN, "ngram", "auto"]
    paired, spare = frozenset(names), frozenset({"ngram"})
    silent = pairs(AGAIN, [1.0, 1.1] * 3) + pairs("ngram", [1.0] * 3) + pairs("auto", [1.0] * 3)
    assert rep_names(names, 3, 3, 9, silent, paired=paired, spare=spare) == [AGAIN, "auto"]
    for r in silent:
        r.drafted = 4 if r.policy == "ngram" else 0
    assert rep_names(names, 3, 3, 9, silent, paired=paired, spare=spare) == names


def test_a_ratio_is_known_with_enough_pairs_of_a_small_spread():
    assert not known(pairs("adaptive", [0.99] * (MIN_PAIRS - 1)), ["adaptive"])  # too few
    assert known(pairs("adaptive", [0.99] * MIN_PAIRS), ["adaptive"])
    spread = 3 * PRECISION * MAX_REPS**0.5  # too wide even at the most pairs
    wide = pairs("adaptive", [1 - spread, 1 + spread] * 3)
    assert not known(wide, ["adaptive"])
    assert not known(pairs("adaptive", [0.99] * MIN_PAIRS), ["adaptive", AGAIN])  # A/A: none
    assert pair_logs(pairs("adaptive", [2.0]), "adaptive") == pytest.approx([0.6931], abs=1e-4)


def test_extra_pairs_do_not_enter_the_comparison_with_fixed_k_over_totals():
    runs = runs_for("none", 4.0) + runs_for("adaptive", 2.0)
    for k in FIXED_KS:
        runs += runs_for(f"fixed-{k}", 3.2 if k == 4 else 8.0)
    extra = Run("ngram", "repeat", 0.5, "adaptive", 0, 49, 0.5, rep=5)  # a fast extra pair
    runs += [extra, replace(extra, policy="none", seconds=4.0, baseline="adaptive")]
    row = next(line for line in render(runs).splitlines() if line.startswith("| repeat"))
    assert row.split("|")[-4].strip().endswith("(1.60)")  # totals over the reps fixed k ran


class _StreamingLlama:
    """llama-cpp-python's create_completion(stream=True) as it streams: a chunk per token,
    then an empty chunk that only gives the finish reason. Each token takes `step` seconds of
    `clock` (the closing chunk comes `late` seconds after the last token)."""

    def __init__(self, texts: list[str], clock: list[float], step: float, late: float) -> None:
        self.texts, self.clock, self.step, self.late = texts, clock, step, late

    def create_completion(self, prompt, **_kwargs):
        for text in self.texts:
            self.clock[0] += self.step
            yield {"choices": [{"text": text, "finish_reason": None}]}
        self.clock[0] += self.late
        yield {"choices": [{"text": "", "finish_reason": "length"}]}


def test_plain_llama_timing_counts_tokens_not_the_closing_chunk(monkeypatch):
    from types import SimpleNamespace

    from bench import baseline

    clock = [100.0]
    monkeypatch.setattr(baseline, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    llm = _StreamingLlama(["a", "b", "c", "d", "e"], clock, step=0.5, late=7.0)
    tokens, seconds = baseline.timed_completion(llm, [1, 2], max_tokens=5, temperature=0.0)
    # five tokens, four intervals between the first and the last: the rate is (5 - 1) / 2.0
    assert (tokens, seconds) == (5, 2.0)
    assert baseline.timed_completion(
        _StreamingLlama([], clock, 0.5, 7.0), [1], max_tokens=5, temperature=0.0
    ) == (0, 0.0)


def test_raw_results_are_saved_gzip_compressed_and_read_back(tmp_path, capsys):
    """Both parts' raw runs are `.json.gz` files: the sources table is drawn again from one."""
    runs = []
    for rep in range(2):
        runs.append(Run("sources", "prose", 0.0, "none", 0, 49, 4.0, rep=rep, baseline="auto"))
        runs.append(Run("sources", "prose", 0.0, "auto", 0, 49, 2.0, 3, 2, rep=rep))
    saved = {
        "runs": [r.__dict__ for r in runs],
        "auto": {"prose T=0.0": {"ngram": {"chosen": 7.0}}},
        "acceptance": {"prose": {"ngram": {"coverage": 0.5, "acceptance": 0.25}}},
    }
    path = tmp_path / "bench_sources.json.gz"
    write_results(path, saved)
    assert path.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic number
    assert read_results(path) == saved
    assert rerender(tmp_path, "sources") == 0
    table = capsys.readouterr().out
    assert "| ngram 7 |" in table
    assert "| prose | 25% (coverage 50%) |" in table
