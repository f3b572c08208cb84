"""The block-swap benchmark's own rules: the variants' turns, the lines it keeps, its summary."""

from __future__ import annotations

from typing import Any

from bench.block_swap import VARIANTS, render, summary, turns, within_reach
from bench.crossfile import Use


def test_the_variants_take_turns_going_first() -> None:
    assert [turns(n)[0] for n in range(4)] == ["swap", "exact", "swap", "exact"]
    assert all(sorted(turns(n)) == sorted(VARIANTS) for n in range(4))


def test_a_line_is_kept_when_the_text_above_it_fits() -> None:
    use = Use("p", "p/m.py", 2, "name", "p/d.py", "x = name(1)")
    text = "aaaa\nbbbb\nx = name(1)\n" + "c" * 10_000
    assert within_reach(use, text, len, 9)  # "aaaa\nbbbb": 9 characters, one a token here
    assert not within_reach(use, text, len, 8)


def run(variant: str, text: str, exact: bool, evaluated: int, moved: int, s: float) -> Any:
    return {
        "variant": variant,
        "text": text,
        "exact": exact,
        "evaluated": evaluated,
        "moved": moved,
        "swap_s": s,
        "answer_s": 2 * s,
        "block_after": 300,
        "anchored": True,
        "context_tokens": 300,
    }


def result(expected: str, swap: Any, exact: Any) -> dict[str, Any]:
    use = {"package": "p", "path": "p/m.py", "line": 0, "name": "n", "source": "p/d.py"}
    return {"use": {**use, "expected": expected}, "runs": [swap, exact]}


def test_the_summary_counts_the_same_first_lines_and_takes_the_medians() -> None:
    results = [
        result(
            "x = n(1)",
            run("swap", "x = n(1)", True, 301, 500, 1.0),
            run("exact", "x = n(1)  ", True, 800, 0, 4.0),
        ),
        result(
            "y = n(2)",
            run("swap", "y = n(3)", False, 303, 400, 3.0),
            run("exact", "y = n(2)", True, 700, 0, 6.0),
        ),
    ]
    figures = summary(results)
    assert figures["lines"] == 2
    assert figures["same_first_line"] == 1  # (trailing blanks aside)
    swap, exact = figures["variants"]["swap"], figures["variants"]["exact"]
    assert (swap["exact"], exact["exact"]) == (1, 2)
    assert (swap["evaluated"], swap["moved"], exact["moved"]) == (301, 400, 0)  # (nearest rank)
    assert (swap["swap_s"], exact["answer_s"]) == (1.0, 8.0)
    assert swap["from_file_prefix"] == 2
    table = render(results, "# t")
    assert "First line the same with swap and exact: 1/2." in table
    assert "| swap | 1/2 | 2/2 | 300 | 301 | 400 | 1.00 | 2.00 |" in table
