"""The context-and-time benchmark's own rules: which lines it asks at, what it types."""

from __future__ import annotations

import importlib.util

import pytest

from bench.context_time import (
    MAX_KEYS,
    MIN_USES,
    PACKAGES,
    block_in_kv,
    cases,
    eligible,
    typed_keys,
)
from bench.crossfile import Use, package_dir, uses


def made_up(package: str, n: int) -> list[Use]:
    """`n` lines of `package`, each in a file and naming a name of its own."""
    return [
        Use(package, f"{package}/m{i}.py", i, f"name{i}", f"{package}/d.py", f"x = name{i}(1, 2)")
        for i in range(n)
    ]


def test_a_package_counts_with_enough_lines_found() -> None:
    found = {"few": made_up("few", MIN_USES - 1), "enough": made_up("enough", MIN_USES)}
    assert list(eligible(found)) == ["enough"]
    chosen = cases(found, 100, seed=0)
    assert {use.package for use in chosen} == {"enough"}
    assert len(chosen) == MIN_USES


def test_the_packages_take_turns_and_a_seed_gives_the_same_lines() -> None:
    found = {f"p{k}": made_up(f"p{k}", 20) for k in range(7)}
    chosen = cases(found, 42, seed=3)
    assert len(chosen) == 42
    assert {sum(use.package == p for use in chosen) for p in found} == {6}
    assert chosen == cases(found, 42, seed=3)
    assert chosen != cases(found, 42, seed=4)


@pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in PACKAGES),
    reason="the default packages are not all installed",
)
def test_the_default_packages_give_42_lines_of_at_least_6_packages() -> None:
    found = {name: uses(package_dir(name)) for name in PACKAGES}
    chosen = cases(found, 42, seed=0)
    assert len(chosen) == 42
    assert len({use.package for use in chosen}) >= 6
    assert all(len(found[use.package]) >= MIN_USES for use in chosen)


@pytest.mark.parametrize(
    ("line", "typed"),
    [
        ("return self._send(request)", "retu"),  # a long line: MAX_KEYS characters
        ("x = f(a)", "x "),  # a third of a short line
        ("ab", "a"),  # at least one
    ],
)
def test_the_typed_start_of_a_line(line: str, typed: str) -> None:
    assert typed_keys(line) == typed
    assert len(typed_keys(line)) <= MAX_KEYS


def test_the_block_is_ready_by_the_engines_word_where_it_gives_it() -> None:
    evaluated = {"block_tokens": 300, "pending": False}
    assert block_in_kv(evaluated)
    assert not block_in_kv({"block_tokens": 300, "pending": True})
    assert not block_in_kv({"block_tokens": 0, "pending": False})
    assert not block_in_kv({**evaluated, "block_ready": False})
    assert block_in_kv({"block_tokens": 300, "pending": True, "block_ready": True})
