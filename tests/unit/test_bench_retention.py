"""`spec-lsp bench retention`: the rapidfuzz check never finds text closer than the exact
programme does (it measures one stretch, the exact one the best of all), and the table prints."""

from __future__ import annotations

import pytest

from bench.retention import checks, exact_distance_in
from spec_lsp import cli
from spec_lsp.server.acceptance import WINDOW, distance_in


def test_the_alignment_is_never_closer_than_the_exact_distance() -> None:
    for _kind, (accepted, doc, at) in checks(4):
        hay = doc[max(0, at - WINDOW) : at + len(accepted) + WINDOW]
        assert distance_in(accepted, hay) >= exact_distance_in(accepted, hay)
    assert exact_distance_in("kitten", "the sitting cat") == distance_in("kitten", "sitting") == 2


def test_the_table_prints(capfd: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "retention", "--cases", "2"]) == 0
    out = capfd.readouterr().out
    assert "| all (6) |" in out and "rapidfuzz ms p50" in out
